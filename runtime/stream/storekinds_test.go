package stream

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/state/pebblestore"
	"github.com/twmb/franz-go/pkg/kgo"
)

// testPebble keeps a store in Pebble.
var testPebble = pebblestore.Opener(pebblestore.Options{CacheSize: 1 << 20})

// kindsLogger is testLogger of the external tests, for this internal one.
func kindsLogger() *slog.Logger {
	if os.Getenv("KGEN_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// retainedKind is a store kind with a retention period, as window and
// session stores will be: a key-value store whose changelog is compact,delete
// and kept for its retention plus the app's margin, with the producer's
// record times (as a versioned store needs). Its Restore records what
// restoration hands it.
type retainedKind struct {
	kind *state.StoreKind
	mu   sync.Mutex
	got  []state.Change // what Restore was given, copied
}

func newRetainedKind() *retainedKind {
	k := &retainedKind{}
	k.kind = &state.StoreKind{
		Name: "test-retained",
		Changelog: func(retention, margin time.Duration) state.ChangelogTopic {
			c := state.RetainedChangelog(retention, margin)
			c.RecordTimes = true
			return c
		},
		Restore: func(b state.Backend, changes []state.Change) error {
			k.mu.Lock()
			for _, c := range changes {
				k.got = append(k.got, state.Change{Key: []byte(string(c.Key)), Value: []byte(string(c.Value)), Timestamp: c.Timestamp})
			}
			k.mu.Unlock()
			return state.ApplyChanges(b, changes)
		},
	}
	return k
}

func (k *retainedKind) restored() []state.Change {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]state.Change(nil), k.got...)
}

// addStringStore adds a logged string→string store of kind, typed as a
// key-value store, with retention for a kind that has one.
func addStringStore(t *Topology, name string, kind *state.StoreKind, retention time.Duration, persistent state.Opener, processors ...string) {
	t.addStore(&storeDef{
		name: name, kind: kind, retention: retention,
		opts:    StoreOptions{Changelog: true, Persistent: persistent},
		keyType: reflect.TypeFor[string](), valType: reflect.TypeFor[string](),
		open: func(b state.Backend, logger state.ChangeLogger) any {
			return state.NewKeyValueStore(name, b, serde.String{}, serde.String{}, logger)
		},
	}, processors)
}

// stamper writes each record's value under its key in every store it has,
// and, at each stream-time punctuation, "tick@<time>" under "tick": a
// value always names the time of the record (or punctuation) that wrote it.
type stamper struct {
	names  []string
	stores []state.KeyValueStore[string, string]
}

func (p *stamper) Init(ctx *Context[string, string]) error {
	for _, n := range p.names {
		s, err := GetKeyValueStore[string, string](ctx, n)
		if err != nil {
			return err
		}
		p.stores = append(p.stores, s)
	}
	ctx.Schedule(time.Second, StreamTime, func(now time.Time) error {
		return p.put("tick", fmt.Sprintf("tick@%d", now.UnixMilli()))
	})
	return nil
}

func (p *stamper) put(k, v string) error {
	for _, s := range p.stores {
		if err := s.Put(k, v); err != nil {
			return err
		}
	}
	return nil
}

func (p *stamper) Process(ctx *Context[string, string], r Record[string, string]) error {
	if err := p.put(r.Key, r.Value); err != nil {
		return err
	}
	ctx.Forward(r)
	return nil
}

// kindsTopology is in → stamper (stores "kv", a key-value store, and "win",
// of kind win with an hour's retention) → out.
func kindsTopology(in, out string, win *state.StoreKind, persistent state.Opener) *Topology {
	t := NewTopology()
	AddSource(t, "in", in, serde.String{}, serde.String{})
	AddProcessor(t, "stamp", func() Processor[string, string, string, string] {
		return &stamper{names: []string{"kv", "win"}}
	}, "in")
	addStringStore(t, "kv", state.KeyValue, 0, persistent, "stamp")
	addStringStore(t, "win", win, time.Hour, persistent, "stamp")
	AddSink(t, "out", out, serde.String{}, serde.String{}, "stamp")
	return t
}

// stampedRecords are n records over a few keys, spread over two
// partitions' worth of keys, whose values name their timestamps: recent
// ones, so no retention of the broker's drops them.
func stampedRecords(topic string, n int) []*kgo.Record {
	base := time.Now().Add(-10 * time.Minute).UnixMilli()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		ts := base + int64(i)*250
		recs[i] = &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "k%d", i%7), Value: fmt.Appendf(nil, "v@%d", ts), Timestamp: time.UnixMilli(ts)}
	}
	return recs
}

// stampOf is the time a value written by stamper names.
func stampOf(t *testing.T, v []byte) int64 {
	t.Helper()
	_, after, ok := strings.Cut(string(v), "@")
	ms, err := strconv.ParseInt(after, 10, 64)
	if !ok || err != nil {
		t.Fatalf("value %q names no time", v)
	}
	return ms
}

// runKinds runs kindsTopology until it has caught up with its input.
func runKinds(t *testing.T, c *kafkatest.Cluster, topo *Topology, appID, stateDir string, opts ...Option) *App {
	t.Helper()
	app, err := New(topo, append([]Option{Brokers(c.Seeds()...), AppID(appID), StateDir(stateDir),
		Parallelism(2), Logger(kindsLogger()), ExitWhenCaughtUp()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := app.Run(ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
	return app
}

// TestChangelogTopicsPerKind checks that each store's changelog is created
// with its kind's configs: compacted for a key-value store, compact,delete
// with the store's retention plus the margin for a kind with a retention.
func TestChangelogTopicsPerKind(t *testing.T) {
	c := kafkatest.New(t)
	in, out := c.CreateTopic(t, 2, nil), c.CreateTopic(t, 2, nil)
	produceRecords(t, c, stampedRecords(in, 20))
	for _, tc := range []struct {
		name      string
		opts      []Option
		retention string // of the "win" changelog
	}{
		{"default margin", nil, "90000000"},                                       // 1 h + 1 day
		{"margin", []Option{ChangelogRetentionMargin(2 * time.Hour)}, "10800000"}, // 1 h + 2 h
	} {
		t.Run(tc.name, func(t *testing.T) {
			appID := "kinds-" + strings.ReplaceAll(tc.name, " ", "-") + "-" + in
			runKinds(t, c, kindsTopology(in, out, newRetainedKind().kind, nil), appID, t.TempDir(), tc.opts...)
			kv, win := changelogTopic(appID, "kv"), changelogTopic(appID, "win")
			t.Cleanup(func() { c.Admin(t).DeleteTopics(context.Background(), kv, win) })
			got := topicConfigs(t, c, kv, win)
			if p := got[kv]["cleanup.policy"]; p != "compact" {
				t.Errorf("%s: cleanup.policy=%s, want compact", kv, p)
			}
			if p := got[win]["cleanup.policy"]; p != "compact,delete" {
				t.Errorf("%s: cleanup.policy=%s, want compact,delete", win, p)
			}
			if r := got[win]["retention.ms"]; r != tc.retention {
				t.Errorf("%s: retention.ms=%s, want %s", win, r, tc.retention)
			}
			if ty := got[win]["message.timestamp.type"]; ty != "CreateTime" {
				t.Errorf("%s: message.timestamp.type=%s, want CreateTime", win, ty)
			}
		})
	}
}

// TestChangelogThatDoesNotFitItsKind checks that an existing changelog that
// would lose records its store needs stops Run with an error naming it and
// saying what it needs.
func TestChangelogThatDoesNotFitItsKind(t *testing.T) {
	c := kafkatest.New(t)
	in, out := c.CreateTopic(t, 2, nil), c.CreateTopic(t, 2, nil)
	for _, tc := range []struct {
		name, store string
		configs     map[string]string
		want        string
	}{
		{"key-value with a retention", "kv", map[string]string{"cleanup.policy": "compact,delete", "retention.ms": "604800000"},
			"has cleanup.policy=compact,delete and retention.ms=604800000, it needs compact (or retention.ms=-1)"},
		{"retention too short", "win", map[string]string{"cleanup.policy": "compact,delete", "retention.ms": "3600000"},
			"has retention.ms=3600000, it needs at least 90000000"},
		{"not compacted", "win", map[string]string{"cleanup.policy": "delete"},
			"has cleanup.policy=delete, it needs compact,delete"},
		{"broker times", "win", map[string]string{"cleanup.policy": "compact,delete", "retention.ms": "90000000", "message.timestamp.type": "LogAppendTime"},
			"has message.timestamp.type=LogAppendTime, it needs CreateTime"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			appID := "unfit-" + strings.ReplaceAll(tc.name, " ", "-") + "-" + in
			topic := changelogTopic(appID, tc.store)
			configs := map[string]*string{}
			for k, v := range tc.configs {
				configs[k] = &v
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if _, err := c.Admin(t).CreateTopic(ctx, 2, -1, configs, topic); err != nil {
				t.Fatalf("create changelog: %v", err)
			}
			t.Cleanup(func() {
				c.Admin(t).DeleteTopics(context.Background(), topic, changelogTopic(appID, "kv"), changelogTopic(appID, "win"))
			})
			app, err := New(kindsTopology(in, out, newRetainedKind().kind, nil), Brokers(c.Seeds()...), AppID(appID),
				StateDir(t.TempDir()), Logger(kindsLogger()))
			if err != nil {
				t.Fatal(err)
			}
			err = app.Run(ctx)
			kind := map[string]string{"kv": "key-value", "win": "test-retained"}[tc.store]
			want := fmt.Sprintf("changelog topic %q %s", topic, tc.want)
			of := fmt.Sprintf("(the changelog of %s store %q)", kind, tc.store)
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), of) {
				t.Fatalf("Run: %v, want an error containing %q and %q", err, want, of)
			}
		})
	}
}

// TestChangelogRecordsCarryTheirTime checks that every changelog record has
// the timestamp of the record whose processing wrote it, or of the
// punctuation that did, with the record cache (logged at the commit) and
// without (logged at each write), in memory and in Pebble; and that a
// restore hands the store's kind the same timestamps.
func TestChangelogRecordsCarryTheirTime(t *testing.T) {
	c := kafkatest.New(t)
	in, out := c.CreateTopic(t, 2, nil), c.CreateTopic(t, 2, nil)
	recs := stampedRecords(in, 200)
	produceRecords(t, c, recs)
	for _, tc := range []struct {
		name       string
		persistent state.Opener
		cache      int
	}{
		{"cached", nil, 10_000},
		{"uncached", nil, 0},
		{"uncached pebble", testPebble, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			appID := "stamps-" + strings.ReplaceAll(tc.name, " ", "-") + "-" + in
			runKinds(t, c, kindsTopology(in, out, newRetainedKind().kind, tc.persistent), appID, t.TempDir(), CacheRecords(tc.cache))
			for _, store := range []string{"kv", "win"} {
				topic := changelogTopic(appID, store)
				t.Cleanup(func() { c.Admin(t).DeleteTopics(context.Background(), topic) })
				logged := c.ReadToEnd(t, topic)
				ticks := 0
				for _, r := range logged {
					if got, want := r.Timestamp.UnixMilli(), stampOf(t, r.Value); got != want {
						t.Errorf("%s/%d@%d: %s=%s has timestamp %d, want %d", r.Topic, r.Partition, r.Offset, r.Key, r.Value, got, want)
					}
					if string(r.Key) == "tick" {
						ticks++
					}
				}
				if len(logged) == 0 || ticks == 0 {
					t.Errorf("%s: %d records, %d of a punctuation; want some of each", topic, len(logged), ticks)
				}
			}

			// A second instance with no state restores the changelogs: the
			// kind is handed each record with its timestamp.
			win := newRetainedKind()
			app := runKinds(t, c, kindsTopology(in, out, win.kind, tc.persistent), appID, t.TempDir(), CacheRecords(tc.cache))
			restored := win.restored()
			if len(restored) == 0 || app.Stats().Restored == 0 {
				t.Fatalf("restored %d records, the kind was handed %d; want some", app.Stats().Restored, len(restored))
			}
			for _, ch := range restored {
				if want := stampOf(t, ch.Value); ch.Timestamp != want {
					t.Errorf("restore handed %s=%s with timestamp %d, want %d", ch.Key, ch.Value, ch.Timestamp, want)
				}
			}
		})
	}
}

// produceRecords produces recs and waits for them.
func produceRecords(t *testing.T, c *kafkatest.Cluster, recs []*kgo.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Client(t).ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// topicConfigs describes the configs of topics, by topic and key.
func topicConfigs(t *testing.T, c *kafkatest.Cluster, topics ...string) map[string]map[string]string {
	t.Helper()
	rcs, err := c.Admin(t).DescribeTopicConfigs(context.Background(), topics...)
	if err != nil {
		t.Fatalf("describe configs: %v", err)
	}
	got := map[string]map[string]string{}
	for _, rc := range rcs {
		if rc.Err != nil {
			t.Fatalf("describe configs of %s: %v", rc.Name, rc.Err)
		}
		got[rc.Name] = map[string]string{}
		for _, cfg := range rc.Configs {
			if cfg.Value != nil {
				got[rc.Name][cfg.Key] = *cfg.Value
			}
		}
	}
	return got
}

// TestLocalDriverChangelogCarriesTime checks the LocalDriver's changelogs
// too: each record has the time of the record, or of the stream-time
// punctuation, that wrote it.
func TestLocalDriverChangelogCarriesTime(t *testing.T) {
	d, err := NewLocalDriver(kindsTopology("in", "out", newRetainedKind().kind, nil), LocalConfig{Partitions: 2, Logger: kindsLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	for _, r := range stampedRecords("in", 30) {
		if err := d.Pipe("in", r.Key, r.Value, nil, r.Timestamp); err != nil {
			t.Fatal(err)
		}
	}
	for _, store := range []string{"kv", "win"} {
		logged, ticks := d.Changelog(store), 0
		for _, r := range logged {
			if got, want := r.Timestamp.UnixMilli(), stampOf(t, r.Value); got != want {
				t.Errorf("%s/%d@%d: %s=%s has timestamp %d, want %d", r.Topic, r.Partition, r.Offset, r.Key, r.Value, got, want)
			}
			if string(r.Key) == "tick" {
				ticks++
			}
		}
		if len(logged) < 30 || ticks == 0 {
			t.Errorf("changelog of %s: %d records, %d of a punctuation; want 30 or more, and some", store, len(logged), ticks)
		}
	}
}

// TestStateManagerHoldsDrops checks that a range dropped through a task's
// cache reaches the store only at committed, before the writes held with it
// and after those held before it (a commit that did not complete), and not
// at all when the commit is aborted.
func TestStateManagerHoldsDrops(t *testing.T) {
	for _, outcome := range []string{"committed", "aborted"} {
		t.Run(outcome, func(t *testing.T) {
			mem := state.NewMemory()
			for _, k := range []string{"a", "b", "c"} {
				if err := mem.Put([]byte(k), []byte("old")); err != nil {
					t.Fatal(err)
				}
			}
			cache := state.NewCache(mem, 100, func() {})
			ts := &taskStore{def: &storeDef{name: "s", kind: state.KeyValue}, inner: mem, cache: cache, backend: cache}
			m := &stateManager{stores: map[string]*taskStore{"s": ts}, order: []*taskStore{ts}, env: &fakeEnv{}}
			write := func(k, v string) {
				t.Helper()
				if err := cache.Put([]byte(k), []byte(v)); err != nil {
					t.Fatal(err)
				}
			}
			write("b", "held") // held by a prepare whose commit did not complete
			m.prepare()
			if err := cache.DeleteRange([]byte("a"), []byte("c")); err != nil {
				t.Fatal(err)
			}
			write("a", "after")
			m.prepare()
			if v, _, _ := mem.Get([]byte("b")); string(v) != "old" {
				t.Fatalf("the store changed before the commit: b=%q", v)
			}
			want := []string{"a=old", "b=old", "c=old"}
			if outcome == "committed" {
				if err := m.committed(); err != nil {
					t.Fatal(err)
				}
				want = []string{"a=after", "c=old"}
			} else {
				m.aborted()
			}
			it, err := mem.Range(nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for it.Next() {
				got = append(got, string(it.Key())+"="+string(it.Value()))
			}
			it.Close()
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("store after %s: %v, want %v", outcome, got, want)
			}
		})
	}
}

// TestChangelogCreationFailsForOneTopic checks that the changelogs created
// together in one request are judged one by one: the one the broker refuses
// (its name collides with an existing topic's, '.' against '_') stops Run
// with an error naming it and the broker's reason, and the other is created
// with its kind's configs.
func TestChangelogCreationFailsForOneTopic(t *testing.T) {
	c := kafkatest.New(t)
	in, out := c.CreateTopic(t, 2, nil), c.CreateTopic(t, 2, nil)
	appID := "collide_" + in
	refused, created := changelogTopic(appID, "kv"), changelogTopic(appID, "win")
	clash := strings.Replace(refused, "collide_", "collide.", 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.Admin(t).CreateTopic(ctx, 2, -1, nil, clash); err != nil {
		t.Fatalf("create %s: %v", clash, err)
	}
	t.Cleanup(func() { c.Admin(t).DeleteTopics(context.Background(), clash, refused, created) })
	app, err := New(kindsTopology(in, out, newRetainedKind().kind, nil), Brokers(c.Seeds()...), AppID(appID),
		StateDir(t.TempDir()), Logger(kindsLogger()))
	if err != nil {
		t.Fatal(err)
	}
	err = app.Run(ctx)
	want := fmt.Sprintf("create changelog topic %q: INVALID_TOPIC_EXCEPTION", refused)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Run: %v, want an error containing %q", err, want)
	}
	if strings.Contains(err.Error(), created) {
		t.Fatalf("Run: %v, names %s, which could be created", err, created)
	}
	got := topicConfigs(t, c, created)
	if p := got[created]["cleanup.policy"]; p != "compact,delete" {
		t.Fatalf("%s: cleanup.policy=%q, want compact,delete", created, p)
	}
}

// TestCreateTopicsReportsATopicThatAppeared: a topic listed as missing that
// exists by the time it is created (another instance made it, or the
// listing's broker had not caught up) is reported, not taken as created
// with the app's configs: ensureInternalTopics then checks it on its next
// attempt, as TestChangelogThatDoesNotFitItsKind's broker-times case needs
// when the listing misses the topic the test just made.
func TestCreateTopicsReportsATopicThatAppeared(t *testing.T) {
	c := kafkatest.New(t)
	in, out := c.CreateTopic(t, 2, nil), c.CreateTopic(t, 2, nil)
	appID := "appeared-" + in
	topic, fresh := changelogTopic(appID, "win"), changelogTopic(appID, "kv")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.Admin(t).CreateTopic(ctx, 2, -1, nil, topic); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	t.Cleanup(func() { c.Admin(t).DeleteTopics(context.Background(), topic, fresh) })
	a, err := New(kindsTopology(in, out, newRetainedKind().kind, nil), Brokers(c.Seeds()...), AppID(appID),
		StateDir(t.TempDir()), Logger(kindsLogger()))
	if err != nil {
		t.Fatal(err)
	}
	if a.admClient, err = kgo.NewClient(kgo.SeedBrokers(c.Seeds()...)); err != nil {
		t.Fatal(err)
	}
	defer a.admClient.Close()
	want := map[string]int32{topic: 2, fresh: 2}
	appeared, errs := a.createTopics(ctx, "changelog", []string{topic, fresh}, want, a.changelogNeeds())
	if len(errs) > 0 || len(appeared) != 1 || appeared[0] != topic {
		t.Fatalf("createTopics: appeared %v, errors %v; want %s appeared and no error", appeared, errs, topic)
	}
}
