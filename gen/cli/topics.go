package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kgen-dev/kgen/gen"
	"github.com/kgen-dev/kgen/runtime/appmain"
)

const topicsAbout = `Create the topics of DIR/kgen.yaml (default .) that do not exist, with the
spec's partition counts and configs, and check those that do: partitions,
configs (cleanup.policy...) and co-partitioning. An existing topic is never
altered: what differs is printed with what to do, and the exit status is 1.
Running it again does nothing. -dry-run prints the plan and changes nothing.

The dead-letter topics of -on-deserialize-error, -on-process-error and
-on-produce-error (dead-letter=TOPIC, or the KGEN_ON_*_ERROR variables the
application reads) are created too, with 1 partition. The application's own
topics (changelogs, repartition topics) are not: it creates them at start,
with its -replication-factor.

A topic without partitions: in kgen.yaml gets the count of a topic it is
co-partitioned with, else -partitions: 4 by default, the count of the test
driver and the development broker (-1 for the broker's num.partitions).`

// topicsFlags are kgen topics' settings.
type topicsFlags struct {
	conn        devLoopFlags
	dryRun      bool
	partitions  int
	replication int
	policies    [3]string // -on-deserialize-error, -on-process-error, -on-produce-error
}

var policyFlags = [3]string{"on-deserialize-error", "on-process-error", "on-produce-error"}

func cmdTopics(args []string, stdout, stderr io.Writer) int {
	var f topicsFlags
	fs := devLoopFlagSet("topics", stderr, topicsAbout)
	f.conn.registerConn(fs)
	fs.BoolVar(&f.dryRun, "dry-run", false, "print the plan; create nothing")
	fs.IntVar(&f.partitions, "partitions", gen.DefaultPartitions, "partition `count` of a topic whose count neither kgen.yaml nor a co-partitioned topic gives, as the test driver and the development broker; -1 for the broker's num.partitions")
	rf := -1
	if s, ok := os.LookupEnv("KGEN_REPLICATION_FACTOR"); ok {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n == 0 || n < -1 {
			fmt.Fprintf(stderr, "kgen topics: KGEN_REPLICATION_FACTOR=%q (flag -replication-factor): want -1 or 1 to 32767\n", s)
			return ExitUsage
		}
		rf = n
	}
	fs.IntVar(&f.replication, "replication-factor", rf, "replication `factor` of the topics created; -1 for the broker's default.replication.factor (env KGEN_REPLICATION_FACTOR, which the application uses for its own topics)")
	for i, name := range policyFlags {
		env := "KGEN_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
		fs.StringVar(&f.policies[i], name, os.Getenv(env), "the application's error `policy`: with dead-letter=TOPIC, TOPIC is created (env "+env+")")
	}
	if err := parseInterspersed(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitUsage
	}
	if fs.NArg() > 1 {
		fmt.Fprintf(stderr, "kgen topics: one directory at most, got %s (kgen help topics)\n", strings.Join(fs.Args(), " "))
		return ExitUsage
	}
	dir := "."
	if fs.NArg() == 1 {
		dir = fs.Arg(0)
	}
	if f.replication == 0 || f.replication < -1 || f.replication > 32767 {
		fmt.Fprintf(stderr, "kgen topics: -replication-factor %d: want -1 (the broker's default) or 1 to 32767\n", f.replication)
		return ExitUsage
	}
	if f.partitions == 0 || f.partitions < -1 {
		fmt.Fprintf(stderr, "kgen topics: -partitions %d: want -1 (the broker's default) or 1 and more\n", f.partitions)
		return ExitUsage
	}
	for i, p := range f.policies {
		if p == "" {
			continue
		}
		if _, err := appmain.ParseErrorPolicy(p); err != nil {
			fmt.Fprintf(stderr, "kgen topics: -%s %q: %v\n", policyFlags[i], p, err)
			return ExitUsage
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	differs, err := topics(ctx, f, dir, stdout)
	if err == nil && differs {
		return ExitUser
	}
	return devLoopStatus("topics", stderr, err)
}

// wantTopic is a topic as kgen topics makes it.
type wantTopic struct {
	name       string
	partitions int32    // 0: not given
	configs    []string // key=value, in the spec's order
	deadLetter []string // the policy flags naming it as a dead-letter topic
}

// haveTopic is an existing topic, as the cluster describes it.
type haveTopic struct {
	partitions int32
	configs    map[string]string
}

// topicStep is one line of the plan.
type topicStep struct {
	name       string
	create     bool
	partitions int32 // to create with; -1 for the broker's default
	configs    []string
	why        string // a dead-letter topic's policy
}

// topicPlan is what kgen topics does and finds: topics to create, topics
// as the spec says, and differences it will not fix by itself.
type topicPlan struct {
	steps   []topicStep
	ok      []string
	differs []string
}

// planTopics compares the topics the spec wants with those that exist.
// groups are the co-partitioned groups; fallback is the partition count of a
// topic nothing gives one (-1: the broker's). It decides, and changes
// nothing.
func planTopics(want []wantTopic, groups [][]string, have map[string]haveTopic, fallback int32, brokers string) topicPlan {
	var p topicPlan
	byName := map[string]wantTopic{}
	for _, w := range want {
		byName[w.name] = w
	}
	groupOf := map[string][]string{}
	for _, g := range groups {
		for _, t := range g {
			groupOf[t] = g
		}
	}
	// planned is each topic's partition count once the plan is done: what
	// exists, or what will be created (-1: the broker's, unknown here).
	planned := map[string]int32{}
	for _, w := range want {
		if h, ok := have[w.name]; ok {
			planned[w.name] = h.partitions
		}
	}
	for _, w := range want {
		h, exists := have[w.name]
		if !exists {
			n := w.partitions
			for _, mate := range groupOf[w.name] {
				if n == 0 && byName[mate].partitions > 0 {
					n = byName[mate].partitions
				}
			}
			for _, mate := range groupOf[w.name] {
				if c, ok := have[mate]; ok && n == 0 {
					n = c.partitions
				}
			}
			if n == 0 {
				n = fallback
			}
			planned[w.name] = n
			p.steps = append(p.steps, topicStep{name: w.name, create: true, partitions: n, configs: w.configs, why: strings.Join(w.deadLetter, ", ")})
			continue
		}
		var diffs []string
		if w.partitions > 0 && h.partitions != w.partitions {
			diffs = append(diffs, fmt.Sprintf("topic %q has %d partitions, kgen.yaml says %d: kgen topics never changes an existing topic's partitions (more move keys to other partitions, with the state kept per key; Kafka cannot remove any); either write partitions: %d in kgen.yaml, or create a new topic with %d partitions and move the application to it", w.name, h.partitions, w.partitions, h.partitions, w.partitions))
		}
		for _, kv := range w.configs {
			key, value, _ := strings.Cut(kv, "=")
			got, ok := h.configs[key]
			if ok && sameConfig(key, got, value) {
				continue
			}
			if !ok {
				got = "(not set)"
			}
			diffs = append(diffs, fmt.Sprintf("topic %q has %s=%s, kgen.yaml says %s: kgen topics does not alter existing topics; to change it: kafka-configs.sh --bootstrap-server %s --alter --entity-type topics --entity-name %s --add-config %s=%s", w.name, key, got, value, brokers, w.name, key, configArg(value)))
		}
		if len(diffs) == 0 {
			p.ok = append(p.ok, fmt.Sprintf("%s (%s)", w.name, partitionsText(h.partitions)))
		}
		p.differs = append(p.differs, diffs...)
	}
	for _, g := range groups {
		var counts []string
		seen := map[int32]bool{}
		for _, t := range g {
			if n := planned[t]; n > 0 {
				seen[n] = true
				counts = append(counts, fmt.Sprintf("%s=%d", t, n))
			}
		}
		if len(seen) > 1 {
			p.differs = append(p.differs, fmt.Sprintf("topics %s are read by one sub-topology (co-partitioned) and must have the same partition count, but have %s: the application refuses to start; make them agree (a topic's partitions can only grow, moving its keys: recreating the smaller ones is usually the way)", quoteList(g), strings.Join(counts, ", ")))
		}
	}
	return p
}

// sameConfig compares a config's value on the cluster with the spec's;
// cleanup.policy as a set.
func sameConfig(key, got, want string) bool {
	if key != "cleanup.policy" {
		return got == want
	}
	set := func(s string) []string {
		var out []string
		for _, p := range strings.Split(s, ",") {
			out = append(out, strings.TrimSpace(p))
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	return slices.Equal(set(got), set(want))
}

// configArg is a config value as kafka-configs.sh takes it: a list in
// brackets.
func configArg(v string) string {
	if strings.Contains(v, ",") {
		return "[" + v + "]"
	}
	return v
}

func partitionsText(n int32) string {
	switch {
	case n < 0:
		return "the broker's default partitions"
	case n == 1:
		return "1 partition"
	}
	return fmt.Sprintf("%d partitions", n)
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

// specTopics are the topics kgen topics makes for a project: the spec's,
// but for repartition topics, and the policies' dead-letter topics.
func specTopics(p *gen.Project, policies [3]string) []wantTopic {
	var want []wantTopic
	for _, t := range p.Graph.Topics {
		if t.Repartition {
			continue
		}
		w := wantTopic{name: t.Name.Value, partitions: int32(t.Partitions)}
		for _, c := range t.Configs {
			w.configs = append(w.configs, c.Key.Value+"="+c.Value.Value)
		}
		want = append(want, w)
	}
	for i, s := range policies {
		topic, ok := strings.CutPrefix(s, "dead-letter=")
		if !ok {
			continue
		}
		j := slices.IndexFunc(want, func(w wantTopic) bool { return w.name == topic })
		if j < 0 {
			// A topic of the spec keeps its own count; a dead-letter
			// topic of its own gets DeadLetterPartitions.
			j = len(want)
			want = append(want, wantTopic{name: topic, partitions: appmain.DeadLetterPartitions})
		}
		want[j].deadLetter = append(want[j].deadLetter, "-"+policyFlags[i])
	}
	return want
}

// topics runs kgen topics: it reports whether an existing topic differs
// from the spec.
func topics(ctx context.Context, f topicsFlags, dir string, stdout io.Writer) (differs bool, err error) {
	p, err := gen.Load(dir)
	if err != nil {
		return false, err
	}
	want := specTopics(p, f.policies)
	// Fresh metadata: the topics it creates are waited for.
	opts, err := f.conn.clientOpts(kgo.MetadataMinAge(100 * time.Millisecond))
	if err != nil {
		return false, err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return false, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	brokers := f.conn.brokers
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return false, fmt.Errorf("reach the cluster at %s: %w", brokers, err)
	}
	if f.replication > len(md.Brokers) {
		return false, usageError{fmt.Sprintf("-replication-factor (KGEN_REPLICATION_FACTOR): %d is more than the cluster's %d broker(s)", f.replication, len(md.Brokers))}
	}
	names := make([]string, len(want))
	for i, w := range want {
		names[i] = w.name
	}
	details, err := adm.ListTopics(ctx, names...)
	if err != nil {
		return false, fmt.Errorf("describe topics on %s: %w", brokers, err)
	}
	have := map[string]haveTopic{}
	var existing []string
	for _, name := range names {
		d, ok := details[name]
		if !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
			continue
		}
		if d.Err != nil {
			return false, fmt.Errorf("topic %q on %s: %w", name, brokers, d.Err)
		}
		have[name] = haveTopic{partitions: int32(len(d.Partitions)), configs: map[string]string{}}
		existing = append(existing, name)
	}
	if len(existing) > 0 {
		cfgs, err := adm.DescribeTopicConfigs(ctx, existing...)
		if err != nil {
			return false, fmt.Errorf("describe topic configs on %s: %w", brokers, err)
		}
		for _, rc := range cfgs {
			if rc.Err != nil {
				return false, fmt.Errorf("topic %q: describe configs: %w", rc.Name, rc.Err)
			}
			for _, c := range rc.Configs {
				if c.Value != nil {
					have[rc.Name].configs[c.Key] = *c.Value
				}
			}
		}
	}
	plan := planTopics(want, p.Graph.CopartitionGroups(), have, int32(f.partitions), brokers)

	verb := "create"
	if f.dryRun {
		verb = "would create"
	}
	var made []string
	for _, s := range plan.steps {
		line := fmt.Sprintf("%s %s (%s, replication %s", verb, s.name, partitionsText(s.partitions), replicationText(f.replication))
		if len(s.configs) > 0 {
			line += ", " + strings.Join(s.configs, ", ")
		}
		line += ")"
		if s.why != "" {
			line += ": the dead-letter topic of " + s.why
		}
		if !f.dryRun {
			configs := map[string]*string{}
			for _, kv := range s.configs {
				k, v, _ := strings.Cut(kv, "=")
				configs[k] = &v
			}
			resp, err := adm.CreateTopic(ctx, s.partitions, int16(f.replication), configs, s.name)
			if err == nil {
				err = resp.Err
			}
			switch {
			case errors.Is(err, kerr.TopicAlreadyExists):
				// Made since it was described (another run, or
				// metadata not yet propagated): checked next time.
				line = fmt.Sprintf("exists already %s: created since it was described; run again to check it", s.name)
			case err != nil:
				return false, fmt.Errorf("create topic %q on %s: %w", s.name, brokers, err)
			default:
				made = append(made, s.name)
			}
		}
		fmt.Fprintln(stdout, line)
	}
	created := len(made)
	if created > 0 {
		// The application started next must find them: wait until
		// the cluster's metadata has them, with leaders.
		if err := waitTopics(ctx, adm, made); err != nil {
			return false, fmt.Errorf("created %s on %s, but: %w", strings.Join(made, ", "), brokers, err)
		}
	}
	// The application's own repartition topics, which it creates at start
	// (co-partitioned as its topology needs): named so that they are known.
	for _, rt := range p.Graph.RepartitionTopics() {
		fmt.Fprintf(stdout, "the application creates %s at start: repartition topic of %s\n", rt.Name, rt.What)
	}
	sort.Strings(plan.ok)
	for _, ok := range plan.ok {
		fmt.Fprintf(stdout, "ok %s\n", ok)
	}
	for _, d := range plan.differs {
		fmt.Fprintf(stdout, "differs: %s\n", d)
	}
	switch {
	case f.dryRun && len(plan.steps) > 0:
		fmt.Fprintf(stdout, "dry run: would create %d topic(s) on %s; nothing changed\n", len(plan.steps), brokers)
	case f.dryRun:
		fmt.Fprintf(stdout, "dry run: nothing to create on %s\n", brokers)
	case created > 0:
		fmt.Fprintf(stdout, "created %d topic(s) on %s\n", created, brokers)
	case len(plan.differs) == 0:
		fmt.Fprintf(stdout, "nothing to do: the %d topic(s) of %s exist on %s as it says\n", len(want), p.Spec.File, brokers)
	}
	if len(plan.differs) > 0 {
		fmt.Fprintf(stdout, "%d difference(s) from %s: kgen topics altered no existing topic\n", len(plan.differs), p.Spec.File)
	}
	return len(plan.differs) > 0, nil
}

// waitTopics waits until every topic in names has all its partitions with
// a leader in the cluster's metadata, or ctx ends.
func waitTopics(ctx context.Context, adm *kadm.Client, names []string) error {
	for {
		details, err := adm.ListTopics(ctx, names...)
		ready := err == nil
		for _, n := range names {
			d, ok := details[n]
			ready = ready && ok && d.Err == nil && len(d.Partitions) > 0
			for _, p := range d.Partitions {
				ready = ready && p.Err == nil && p.Leader >= 0
			}
		}
		if ready {
			return nil
		}

		select {
		case <-ctx.Done():
			return fmt.Errorf("the topics have no leaders yet: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func replicationText(n int) string {
	if n < 0 {
		return "the broker's default"
	}
	return strconv.Itoa(n)
}
