package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mathrand "math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kgen-dev/kgen/internal/kafkatest"
)

// topicsProject writes a spec whose topics carry a fresh suffix (the real
// broker keeps topics between tests): views and users are read by one
// processor, so co-partitioned, users only gets its count from views.
func topicsProject(t *testing.T) (dir, suffix string) {
	t.Helper()
	b := make([]byte, 4)
	rand.Read(b)
	suffix = hex.EncodeToString(b)
	dir = t.TempDir()
	spec := strings.ReplaceAll(`version: 1
app: visits
package: visits
topics:
  views-SFX: {key: string, value: string, partitions: 4}
  users-SFX: {key: string, value: string, configs: {cleanup.policy: compact}}
  first-visits-SFX: {key: string, value: string, partitions: 2, configs: {retention.ms: 86400000}}
processors:
  visits: {from: [views-SFX, users-SFX], to: [first-visits-SFX]}
`, "SFX", suffix)
	if err := os.WriteFile(filepath.Join(dir, "kgen.yaml"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/visits\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, suffix
}

// topicsCluster is the test's cluster, with the topics whose names end in
// suffix deleted when the test ends.
func topicsCluster(t *testing.T, suffix string) (*kafkatest.Cluster, *kadm.Client) {
	t.Helper()
	c := kafkatest.New(t)
	// Fresh metadata: topics created by the command show at once.
	adm := kadm.NewClient(c.Client(t, kgo.MetadataMinAge(10*time.Millisecond)))
	t.Cleanup(func() {
		details, err := adm.ListTopics(context.Background())
		if err != nil {
			return
		}
		var mine []string
		for name := range details {
			if strings.HasSuffix(name, suffix) {
				mine = append(mine, name)
			}
		}
		if len(mine) > 0 {
			adm.DeleteTopics(context.Background(), mine...)
		}
	})
	return c, adm
}

// described is each topic's partition count and the configs asked for.
func described(t *testing.T, adm *kadm.Client, keys []string, names ...string) map[string]string {
	t.Helper()
	ctx := context.Background()
	details, err := adm.ListTopics(ctx, names...)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	var existing []string
	for _, n := range names {
		if d, ok := details[n]; ok && d.Err == nil {
			out[n] = "partitions=" + itoa(len(d.Partitions))
			existing = append(existing, n)
		}
	}
	if len(existing) == 0 {
		return out
	}
	cfgs, err := adm.DescribeTopicConfigs(ctx, existing...)
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range cfgs {
		for _, c := range rc.Configs {
			for _, k := range keys {
				if c.Key == k && c.Value != nil {
					out[rc.Name] += " " + k + "=" + *c.Value
				}
			}
		}
	}
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestTopicsCreatesThenNothingToDo: -dry-run prints the plan and creates
// nothing; a run creates the missing topics with the spec's partitions and
// configs (users takes views' count: they are co-partitioned); the next run
// says there is nothing to do.
func TestTopicsCreatesThenNothingToDo(t *testing.T) {
	dir, sfx := topicsProject(t)
	c, adm := topicsCluster(t, sfx)
	brokers := strings.Join(c.Seeds(), ",")
	views, users, visits := "views-"+sfx, "users-"+sfx, "first-visits-"+sfx

	code, out, errs := runStdin(t, "", "topics", dir, "-brokers", brokers, "-dry-run")
	if code != 0 {
		t.Fatalf("dry run: exit %d\n%s%s", code, out, errs)
	}
	wantPlan := "would create first-visits-SFX (2 partitions, replication the broker's default, retention.ms=86400000)\n" +
		"would create users-SFX (4 partitions, replication the broker's default, cleanup.policy=compact)\n" +
		"would create views-SFX (4 partitions, replication the broker's default)\n" +
		"dry run: would create 3 topic(s) on " + brokers + "; nothing changed\n"
	if diff := cmp.Diff(strings.ReplaceAll(wantPlan, "SFX", sfx), out); diff != "" {
		t.Errorf("dry run output (-want +got):\n%s", diff)
	}
	if got := described(t, adm, nil, views, users, visits); len(got) != 0 {
		t.Fatalf("the dry run created %v", got)
	}

	code, out, errs = runStdin(t, "", "topics", dir, "-brokers", brokers)
	if code != 0 || !strings.Contains(out, "created 3 topic(s)") {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	want := map[string]string{
		views:  "partitions=4",
		users:  "partitions=4 cleanup.policy=compact",
		visits: "partitions=2 retention.ms=86400000",
	}
	got := described(t, adm, []string{"cleanup.policy", "retention.ms"}, views, users, visits)
	for name, d := range got {
		// What a topic was not given is the broker's default, which
		// kfake leaves out.
		if name != users {
			d = strings.Replace(d, " cleanup.policy=delete", "", 1)
		}
		if name != visits {
			d = strings.Replace(d, " retention.ms=604800000", "", 1)
		}
		got[name] = d
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("topics (-want +got):\n%s", diff)
	}

	code, out, errs = runStdin(t, "", "topics", dir, "-brokers", brokers)
	if code != 0 || strings.Contains(out, "create") || !strings.Contains(out, "nothing to do: the 3 topic(s) of "+filepath.Join(dir, "kgen.yaml")+" exist on "+brokers+" as it says") {
		t.Fatalf("second run: exit %d\n%s%s", code, out, errs)
	}
}

// TestTopicsReportsDifferences: existing topics with other partitions,
// another cleanup policy, and co-partitioned topics that disagree are
// reported with what to do, exit status 1, and are left as they are.
func TestTopicsReportsDifferences(t *testing.T) {
	dir, sfx := topicsProject(t)
	c, adm := topicsCluster(t, sfx)
	brokers := strings.Join(c.Seeds(), ",")
	views, users, visits := "views-"+sfx, "users-"+sfx, "first-visits-"+sfx
	ctx := context.Background()
	del := "delete"
	for _, tc := range []struct {
		name string
		n    int32
		cfg  map[string]*string
	}{{views, 3, nil}, {users, 4, map[string]*string{"cleanup.policy": &del}}} {
		if _, err := adm.CreateTopic(ctx, tc.n, -1, tc.cfg, tc.name); err != nil {
			t.Fatal(err)
		}
	}
	if err := waitTopics(ctx, adm, []string{views, users}); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runStdin(t, "", "topics", dir, "-brokers", brokers)
	if code != ExitUser {
		t.Fatalf("exit %d, want %d\n%s%s", code, ExitUser, out, errs)
	}
	for _, w := range []string{
		"create first-visits-SFX (2 partitions",
		`differs: topic "views-SFX" has 3 partitions, kgen.yaml says 4: kgen topics never changes an existing topic's partitions`,
		`either write partitions: 3 in kgen.yaml, or create a new topic with 4 partitions`,
		`differs: topic "users-SFX" has cleanup.policy=delete, kgen.yaml says compact: kgen topics does not alter existing topics; to change it: kafka-configs.sh --bootstrap-server ` + brokers + ` --alter --entity-type topics --entity-name users-SFX --add-config cleanup.policy=compact`,
		`differs: topics "users-SFX", "views-SFX" are read by one sub-topology (co-partitioned) and must have the same partition count, but have users-SFX=4, views-SFX=3: the application refuses to start`,
		"3 difference(s) from ",
	} {
		if w = strings.ReplaceAll(w, "SFX", sfx); !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	got := described(t, adm, []string{"cleanup.policy"}, views, users, visits)
	if got[visits] == "" {
		t.Errorf("the missing topic was not created beside the differences")
	}
	if got[views] != "partitions=3" && got[views] != "partitions=3 cleanup.policy=delete" {
		t.Errorf("views was altered: %s", got[views])
	}
	if got[users] != "partitions=4 cleanup.policy=delete" {
		t.Errorf("users was altered: %s", got[users])
	}
}

// TestTopicsDeadLetter: the dead-letter topic of a policy, by flag or by
// the variable the application reads, is created with one partition and
// said to be the dead-letter topic.
func TestTopicsDeadLetter(t *testing.T) {
	dir, sfx := topicsProject(t)
	c, adm := topicsCluster(t, sfx)
	brokers := strings.Join(c.Seeds(), ",")
	dlq := "views-dlq-" + sfx
	t.Setenv("KGEN_ON_PROCESS_ERROR", "dead-letter="+dlq)
	code, out, errs := runStdin(t, "", "topics", dir, "-brokers", brokers, "-on-deserialize-error", "dead-letter="+dlq)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	if w := "create " + dlq + " (1 partition, replication the broker's default): the dead-letter topic of -on-deserialize-error, -on-process-error\n"; !strings.Contains(out, w) {
		t.Errorf("output lacks %q:\n%s", w, out)
	}
	if got := described(t, adm, nil, dlq)[dlq]; got != "partitions=1" {
		t.Errorf("dead-letter topic: %q", got)
	}
	code, out, errs = runStdin(t, "", "topics", dir, "-brokers", brokers, "-on-process-error", "dead-letter")
	if code != ExitUsage || !strings.Contains(errs, `kgen topics: -on-process-error "dead-letter": dead-letter needs its topic: dead-letter=TOPIC`) {
		t.Errorf("bad policy: exit %d\n%s%s", code, out, errs)
	}
}

// TestTopicsReplicationFactor: a factor above the broker count (one here)
// is refused before anything is created, naming the setting.
func TestTopicsReplicationFactor(t *testing.T) {
	dir, sfx := topicsProject(t)
	c, adm := topicsCluster(t, sfx)
	brokers := strings.Join(c.Seeds(), ",")
	code, out, errs := runStdin(t, "", "topics", dir, "-brokers", brokers, "-replication-factor", "2")
	if want := "kgen topics: -replication-factor (KGEN_REPLICATION_FACTOR): 2 is more than the cluster's 1 broker(s)\n"; code != ExitUsage || errs != want {
		t.Fatalf("exit %d, stderr %q; want %d, %q\n%s", code, errs, ExitUsage, want, out)
	}
	if got := described(t, adm, nil, "views-"+sfx); len(got) != 0 {
		t.Errorf("created despite the refusal: %v", got)
	}
	code, _, errs = runStdin(t, "", "topics", dir, "-brokers", brokers, "-replication-factor", "1")
	if code != 0 {
		t.Fatalf("factor 1: exit %d\n%s", code, errs)
	}
}

// TestPlanTopics: partition counts of topics to create come from the spec,
// then a co-partitioned topic's spec or existing count, then the fallback.
func TestPlanTopics(t *testing.T) {
	want := []wantTopic{{name: "a"}, {name: "b"}, {name: "c"}, {name: "d", partitions: 6}, {name: "e"}}
	groups := [][]string{{"a", "b"}, {"d", "e"}}
	have := map[string]haveTopic{"b": {partitions: 5}}
	p := planTopics(want, groups, have, -1, "k:9092")
	got := map[string]int32{}
	for _, s := range p.steps {
		got[s.name] = s.partitions
	}
	if diff := cmp.Diff(map[string]int32{"a": 5, "c": -1, "d": 6, "e": 6}, got); diff != "" {
		t.Errorf("partitions (-want +got):\n%s", diff)
	}
	if len(p.differs) != 0 || len(p.ok) != 1 {
		t.Errorf("ok %v, differs %v", p.ok, p.differs)
	}
}

// TestTopicsHelp: kgen help topics describes the command and its flags,
// dead-letter topics and the default partition count included.
func TestTopicsHelp(t *testing.T) {
	code, out, _ := runStdin(t, "", "help", "topics")
	for _, w := range []string{"usage: kgen topics [flags] [DIR]", "-dry-run", "-replication-factor", "-on-deserialize-error", "dead-letter=TOPIC", "4 by default", "never\naltered"} {
		if !strings.Contains(out, w) && !strings.Contains(strings.ReplaceAll(out, "\n", " "), strings.ReplaceAll(w, "\n", " ")) {
			t.Errorf("help lacks %q:\n%s", w, out)
		}
	}
	if code != 0 {
		t.Errorf("exit %d", code)
	}
}

// TestPlanTopicsProperties checks planTopics over generated specs and
// clusters: every missing topic is created once and no existing one; a
// topic is created with its spec's count when it has one; and when no
// co-partitioning difference is reported, the known counts of every group
// agree once the plan is carried out.
func TestPlanTopicsProperties(t *testing.T) {
	rng := mathrand.New(mathrand.NewPCG(1, 2))
	for iter := range 2000 {
		n := 1 + rng.IntN(6)
		var want []wantTopic
		have := map[string]haveTopic{}
		for i := range n {
			w := wantTopic{name: fmt.Sprintf("t%d", i)}
			if rng.IntN(2) == 0 {
				w.partitions = int32(1 + rng.IntN(3))
			}
			want = append(want, w)
			if rng.IntN(3) == 0 {
				have[w.name] = haveTopic{partitions: int32(1 + rng.IntN(3)), configs: map[string]string{}}
			}
		}
		// Disjoint groups of consecutive topics, as sub-topologies.
		var groups [][]string
		for i := 0; i < n; {
			size := 1 + rng.IntN(3)
			var g []string
			for j := i; j < min(n, i+size); j++ {
				g = append(g, want[j].name)
			}
			if len(g) > 1 {
				groups = append(groups, g)
			}
			i += size
		}
		fallback := int32(-1)
		if rng.IntN(2) == 0 {
			fallback = 4
		}
		p := planTopics(want, groups, have, fallback, "k:9092")
		planned := map[string]int32{}
		for name, h := range have {
			planned[name] = h.partitions
		}
		created := map[string]bool{}
		for _, s := range p.steps {
			if created[s.name] {
				t.Fatalf("iter %d: %s created twice", iter, s.name)
			}
			if _, ok := have[s.name]; ok {
				t.Fatalf("iter %d: existing %s created", iter, s.name)
			}
			created[s.name] = true
			planned[s.name] = s.partitions
		}
		for _, w := range want {
			if _, ok := have[w.name]; !ok && !created[w.name] {
				t.Fatalf("iter %d: missing %s not created", iter, w.name)
			}
			if created[w.name] && w.partitions > 0 && planned[w.name] != w.partitions {
				t.Fatalf("iter %d: %s created with %d partitions, spec says %d", iter, w.name, planned[w.name], w.partitions)
			}
		}
		// The plan never makes a violation: a group whose given counts
		// (the spec's, the existing topics') agree gets no difference.
		for _, g := range groups {
			given := map[int32]bool{}
			for _, name := range g {
				if h, ok := have[name]; ok {
					given[h.partitions] = true
				}
				for _, w := range want {
					if w.name == name && w.partitions > 0 {
						given[w.partitions] = true
					}
				}
			}
			for _, d := range p.differs {
				if len(given) <= 1 && strings.Contains(d, quoteList(g)) {
					t.Fatalf("iter %d: group %v with given counts %v reported: %s", iter, g, given, d)
				}
			}
		}
		copart := false
		for _, d := range p.differs {
			copart = copart || strings.Contains(d, "co-partitioned")
		}
		if copart {
			continue
		}
		for _, g := range groups {
			var first int32
			for _, name := range g {
				if c := planned[name]; c > 0 {
					if first == 0 {
						first = c
					} else if c != first {
						t.Fatalf("iter %d: group %v ends with different counts %v and no difference reported", iter, g, planned)
					}
				}
			}
		}
	}
}

// TestTopicsUsageErrors: settings that cannot work are refused before the
// cluster is reached, naming the flag (and variable), exit status 2.
func TestTopicsUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"factor zero", nil, []string{"-replication-factor", "0"}, "kgen topics: -replication-factor 0: want -1 (the broker's default) or 1 to 32767\n"},
		{"factor variable", map[string]string{"KGEN_REPLICATION_FACTOR": "two"}, nil, "kgen topics: KGEN_REPLICATION_FACTOR=\"two\" (flag -replication-factor): want -1 or 1 to 32767\n"},
		{"partitions", nil, []string{"-partitions", "0"}, "kgen topics: -partitions 0: want -1 (the broker's default) or 1 and more\n"},
		{"policy variable", map[string]string{"KGEN_ON_PRODUCE_ERROR": "retry"}, nil, "kgen topics: -on-produce-error \"retry\": want fail, continue or dead-letter=TOPIC\n"},
		{"two dirs", nil, []string{"a", "b"}, "kgen topics: one directory at most, got a b (kgen help topics)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			code, _, errs := runStdin(t, "", append([]string{"topics", "-brokers", "127.0.0.1:1"}, tc.args...)...)
			if code != ExitUsage || errs != tc.want {
				t.Errorf("exit %d, stderr %q; want %d, %q", code, errs, ExitUsage, tc.want)
			}
		})
	}
}
