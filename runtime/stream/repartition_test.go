package stream_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// wordCountTopology splits sentences into words, re-keys them by word
// through a repartition topic, and counts each word.
func wordCountTopology(in, out string, persistent state.Opener) *stream.Topology {
	t := stream.NewTopology()
	stream.AddSource(t, "sentences", in, serde.String{}, serde.String{})
	stream.AddProcessor(t, "split", func() stream.Processor[string, string, string, string] {
		return stream.ProcessorFunc[string, string, string, string](func(ctx *stream.Context[string, string], r stream.Record[string, string]) error {
			for _, w := range strings.Fields(r.Value) {
				ctx.Forward(stream.Record[string, string]{Key: w, Value: w})
			}
			return nil
		})
	}, "sentences")
	stream.AddRepartition(t, "words", serde.String{}, serde.String{}, stream.RepartitionOptions{}, "split")
	stream.AddProcessor(t, "count", func() stream.Processor[string, string, string, int64] { return &keyCounter{} }, "words")
	stream.AddKeyValueStore(t, "counts", serde.String{}, serde.Int64{}, stream.StoreOptions{Persistent: persistent, Changelog: true}, "count")
	stream.AddSink(t, "out", out, serde.String{}, serde.Int64{}, "count")
	return t
}

// sentences makes n sentences of 5 words over a vocabulary of 60, keyed at
// random (so a word's occurrences land on every partition), and the true
// count of each word.
func sentences(topic string, n int) ([]*kgo.Record, map[string]int64) {
	rng := rand.New(rand.NewPCG(3, 4))
	truth := map[string]int64{}
	recs := make([]*kgo.Record, n)
	for i := range recs {
		var words []string
		for range 5 {
			w := fmt.Sprintf("w%02d", rng.IntN(60))
			words = append(words, w)
			truth[w]++
		}
		recs[i] = &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "s%d", rng.IntN(1000)), Value: []byte(strings.Join(words, " "))}
	}
	return recs, truth
}

// A word count over 8 partitions, two instances, one of them stopped and
// started again mid-run: every word's last count equals an independent
// count of the input, under both guarantees. Without the repartition step,
// each sentence partition's task would keep its own count of each word.
func TestRepartitionedWordCount(t *testing.T) {
	for _, g := range []stream.GuaranteeKind{stream.AtLeastOnce, stream.ExactlyOnce} {
		t.Run(g.String(), func(t *testing.T) {
			c := kafkatest.New(t)
			in, out := c.CreateTopic(t, 8, nil), c.CreateTopic(t, 8, nil)
			appID := "wc-" + in
			recs, truth := sentences(in, 3000)
			produceAll(t, c.Client(t), recs[:1500])
			dirs := map[string]string{"a": t.TempDir(), "b": t.TempDir()}
			start := func(name string) (*stream.App, func()) {
				app, err := stream.New(wordCountTopology(in, out, onDisk), stream.Brokers(c.Seeds()...), stream.AppID(appID),
					stream.StateDir(dirs[name]), stream.InstanceID(name), stream.Parallelism(1), stream.Guarantee(g),
					stream.CommitInterval(200*time.Millisecond), stream.PurgeInterval(100*time.Millisecond), stream.Logger(testLogger(t)))
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- app.Run(ctx) }()
				var once sync.Once
				return app, func() {
					once.Do(func() {
						cancel()
						if err := <-done; err != nil {
							t.Errorf("instance %s: %v", name, err)
						}
					})
				}
			}
			_, stopA := start("a")
			defer stopA()
			_, stopB := start("b")
			adm := c.Admin(t)
			waitProcessed(t, adm, appID, in, 500)
			stopB()
			produceAll(t, c.Client(t), recs[1500:])
			_, stopB = start("b")
			defer stopB()
			repart := appID + "-words-repartition"
			waitCaughtUp(t, adm, appID, in)
			// The repartition topic is transactional under exactly-once:
			// its end offset counts commit markers no consumer commits
			// past. Wait for the output instead.
			waitFor(t, "every word counted", func() bool {
				got := map[string]int64{}
				for _, r := range c.ReadToEnd(t, out, kafkatest.ReadCommitted()) {
					n, _ := serde.Int64{}.Deserialize(r.Value)
					got[string(r.Key)] = max(got[string(r.Key)], n)
				}
				return mapsEqual(truth, got)
			})
			// What was committed is purged while the app runs: the purge
			// is periodic, so a run that ends soon after its last commit
			// may not have purged yet, and the check waits for it.
			waitFor(t, "committed records purged from "+repart, func() bool {
				starts, err := adm.ListStartOffsets(context.Background(), repart)
				if err != nil {
					return false
				}
				var purged int64
				starts.Each(func(o kadm.ListedOffset) { purged += o.Offset })
				return purged > 0
			})
			stopA()
			stopB()

			if g == stream.ExactlyOnce {
				checkExactlyOnce(t, c, out, truth)
			} else if got := lastCounts(t, c, out); !mapsEqual(truth, got) {
				t.Fatalf("last counts differ from the input's: %s", mapDiff(truth, got))
			}
			// The repartition topic has the sources' partition count.
			details, err := adm.ListTopics(context.Background(), repart)
			if err != nil || len(details[repart].Partitions) != 8 {
				t.Fatalf("repartition topic %s: %v partitions (err %v), want 8", repart, len(details[repart].Partitions), err)
			}
		})
	}
}

// ExitWhenCaughtUp waits for the steps behind a repartition topic too: the
// inputs are committed long before the slow counting step has read what the
// split step wrote, and a run that stopped then would leave words uncounted.
func TestExitWhenCaughtUpWaitsForRepartitionTopics(t *testing.T) {
	for _, g := range []stream.GuaranteeKind{stream.AtLeastOnce, stream.ExactlyOnce} {
		t.Run(g.String(), func(t *testing.T) {
			c := kafkatest.New(t)
			in, out := c.CreateTopic(t, 4, nil), c.CreateTopic(t, 4, nil)
			recs, truth := sentences(in, 400)
			produceAll(t, c.Client(t), recs)
			topo := stream.NewTopology()
			stream.AddSource(topo, "sentences", in, serde.String{}, serde.String{})
			stream.AddProcessor(topo, "split", func() stream.Processor[string, string, string, string] {
				return stream.ProcessorFunc[string, string, string, string](func(ctx *stream.Context[string, string], r stream.Record[string, string]) error {
					for _, w := range strings.Fields(r.Value) {
						ctx.Forward(stream.Record[string, string]{Key: w, Value: w})
					}
					return nil
				})
			}, "sentences")
			stream.AddRepartition(topo, "words", serde.String{}, serde.String{}, stream.RepartitionOptions{}, "split")
			stream.AddProcessor(topo, "count", func() stream.Processor[string, string, string, int64] { return &slowCounter{} }, "words")
			stream.AddKeyValueStore(topo, "counts", serde.String{}, serde.Int64{}, stream.StoreOptions{Changelog: true}, "count")
			stream.AddSink(topo, "out", out, serde.String{}, serde.Int64{}, "count")
			app, err := stream.New(topo, stream.Brokers(c.Seeds()...), stream.AppID("caught-up-"+in), stream.StateDir(t.TempDir()),
				stream.Parallelism(1), stream.Guarantee(g), stream.CommitInterval(50*time.Millisecond), stream.ExitWhenCaughtUp(),
				stream.Logger(testLogger(t)))
			if err != nil {
				t.Fatal(err)
			}
			if err := app.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			last := map[string]int64{}
			for _, r := range c.ReadToEnd(t, out) {
				n, _ := serde.Int64{}.Deserialize(r.Value)
				last[string(r.Key)] = max(last[string(r.Key)], n)
			}
			var short int
			for w, n := range truth {
				if last[w] != n {
					short++
				}
			}
			if short > 0 {
				t.Fatalf("%d of %d words not fully counted when the run ended", short, len(truth))
			}
		})
	}
}

// slowCounter counts like keyCounter, taking a millisecond a record.
type slowCounter struct{ keyCounter }

func (c *slowCounter) Process(ctx *stream.Context[string, int64], r stream.Record[string, string]) error {
	time.Sleep(time.Millisecond)
	return c.keyCounter.Process(ctx, r)
}

func TestRepartitionInTheDescription(t *testing.T) {
	d, err := stream.NewLocalDriver(wordCountTopology("sentences", "word-counts", nil), stream.LocalConfig{AppID: "wc"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	got := d.Describe()
	for _, want := range []string{
		"Sub-topology: 0", "Sink: words-repartition-sink (topic: wc-words-repartition)",
		"Sub-topology: 1", "Source: words (topics: [wc-words-repartition])",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("description lacks %q:\n%s", want, got)
		}
	}
}

// RepartitionOptions.Source names the node that reads the topic back, the
// topic and sink keeping the step's name (a join's side reads through
// <join>-left-repartition while <join>-left is the join's own node), and
// the words are counted right through it.
func TestRepartitionSourceName(t *testing.T) {
	topo := stream.NewTopology()
	stream.AddSource(topo, "sentences", "sentences", serde.String{}, serde.String{})
	stream.AddProcessor(topo, "split", func() stream.Processor[string, string, string, string] {
		return stream.ProcessorFunc[string, string, string, string](func(ctx *stream.Context[string, string], r stream.Record[string, string]) error {
			for _, w := range strings.Fields(r.Value) {
				ctx.Forward(stream.Record[string, string]{Key: w, Value: w})
			}
			return nil
		})
	}, "sentences")
	stream.AddRepartition(topo, "words", serde.String{}, serde.String{}, stream.RepartitionOptions{Source: "words-repartition-source"}, "split")
	stream.AddProcessor(topo, "count", func() stream.Processor[string, string, string, int64] { return &keyCounter{} }, "words-repartition-source")
	stream.AddKeyValueStore(topo, "counts", serde.String{}, serde.Int64{}, stream.StoreOptions{Changelog: true}, "count")
	stream.AddSink(topo, "out", "word-counts", serde.String{}, serde.Int64{}, "count")
	d, err := stream.NewLocalDriver(topo, stream.LocalConfig{AppID: "wc", Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	desc := d.Describe()
	for _, want := range []string{"Sink: words-repartition-sink (topic: wc-words-repartition)", "Source: words-repartition-source (topics: [wc-words-repartition])"} {
		if !strings.Contains(desc, want) {
			t.Errorf("description lacks %q:\n%s", want, desc)
		}
	}
	recs, truth := sentences("sentences", 200)
	for _, r := range recs {
		if err := d.Pipe("sentences", r.Key, r.Value, nil, time.Unix(0, 0)); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]int64{}
	for _, r := range d.Output("word-counts") {
		n, _ := serde.Int64{}.Deserialize(r.Value)
		got[string(r.Key)] = max(got[string(r.Key)], n)
	}
	if !mapsEqual(truth, got) {
		t.Fatalf("counts differ: %s", mapDiff(truth, got))
	}
}

// The LocalDriver partitions like production: with 4 partitions, a word
// count that re-keys without a repartition step counts each word in several
// tasks and gets it wrong; with the step, every count is right.
func TestLocalDriverPartitionsLikeProduction(t *testing.T) {
	recs, truth := sentences("sentences", 400)
	run := func(topo *stream.Topology) map[string]int64 {
		t.Helper()
		d, err := stream.NewLocalDriver(topo, stream.LocalConfig{AppID: "wc", Partitions: 4})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		for _, r := range recs {
			if err := d.Pipe("sentences", r.Key, r.Value, nil, time.Unix(0, 0)); err != nil {
				t.Fatal(err)
			}
		}
		got := map[string]int64{}
		parts := map[int32]bool{}
		for _, r := range d.Output("word-counts") {
			n, _ := serde.Int64{}.Deserialize(r.Value)
			got[string(r.Key)] = max(got[string(r.Key)], n)
			parts[r.Partition] = true
		}
		if len(parts) < 2 {
			t.Fatalf("outputs on %d partitions, want them spread over 4", len(parts))
		}
		return got
	}
	if got := run(wordCountTopology("sentences", "word-counts", nil)); !mapsEqual(truth, got) {
		t.Fatalf("with the repartition step, counts differ: %s", mapDiff(truth, got))
	}
	// The same topology with "count" fed by "split" directly.
	wrong := stream.NewTopology()
	stream.AddSource(wrong, "sentences", "sentences", serde.String{}, serde.String{})
	stream.AddProcessor(wrong, "split", func() stream.Processor[string, string, string, string] {
		return stream.ProcessorFunc[string, string, string, string](func(ctx *stream.Context[string, string], r stream.Record[string, string]) error {
			for _, w := range strings.Fields(r.Value) {
				ctx.Forward(stream.Record[string, string]{Key: w, Value: w})
			}
			return nil
		})
	}, "sentences")
	stream.AddProcessor(wrong, "count", func() stream.Processor[string, string, string, int64] { return &keyCounter{} }, "split")
	stream.AddKeyValueStore(wrong, "counts", serde.String{}, serde.Int64{}, stream.StoreOptions{Changelog: true}, "count")
	stream.AddSink(wrong, "out", "word-counts", serde.String{}, serde.Int64{}, "count")
	if got := run(wrong); mapsEqual(truth, got) {
		t.Fatal("without the repartition step the counts came out right: the driver does not partition like production")
	}
}

// A repartition topic that exists with a retention shorter than the app
// can rely on is refused at start, naming the topic and what to set: the
// broker could delete its records before the sub-topology that reads them
// has committed them. Unlimited retention (the app purges what it
// committed) and the broker's default week are accepted; so is a finite
// retention.bytes refused, which deletes the same way.
func TestRepartitionTopicRetentionIsChecked(t *testing.T) {
	for _, tc := range []struct {
		name    string
		configs map[string]string
		want    string // "" to start
	}{
		{"unlimited", map[string]string{"retention.ms": "-1"}, ""},
		{"a week", map[string]string{"retention.ms": "604800000"}, ""},
		{"a minute", map[string]string{"retention.ms": "60000"}, "has retention.ms=60000"},
		{"bounded bytes", map[string]string{"retention.ms": "-1", "retention.bytes": "1048576"}, "has retention.bytes=1048576"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := kafkatest.New(t)
			in, out := c.CreateTopic(t, 2, nil), c.CreateTopic(t, 2, nil)
			appID := "repart-retention-" + in
			repart := appID + "-words-repartition"
			configs := map[string]*string{}
			for k, v := range tc.configs {
				configs[k] = &v
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			adm := c.Admin(t)
			if _, err := adm.CreateTopic(ctx, 2, -1, configs, repart); err != nil {
				t.Fatalf("create %s: %v", repart, err)
			}
			t.Cleanup(func() { adm.DeleteTopics(context.Background(), repart) })
			_, err := runApp(t, wordCountTopology(in, out, nil), stream.Brokers(c.Seeds()...), stream.AppID(appID),
				stream.StateDir(t.TempDir()), stream.Logger(testLogger(t)), stream.ExitWhenCaughtUp())
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("repartition topic %q %s", repart, tc.want)) {
				t.Fatalf("Run: %v, want an error naming %s and saying it %s", err, repart, tc.want)
			}
		})
	}
}

// Issue 21: two instances of the repartitioned word count on 8 partitions
// each end up with 4 tasks of the splitting sub-topology and 4 of the
// counting one (the state), not one whole sub-topology each: started
// together or one after the other, with one or two units each, or the two
// left of three that joined one by one (where the balancer before issue 21
// left one with 6 of the counting tasks and the other with 2).
func TestWordCountTasksSpreadOverInstances(t *testing.T) {
	cases := []struct {
		name        string
		parallelism int
		// run starts and stops instances, and returns the two that must
		// end balanced.
		run func(h *spreadHarness) (string, string)
	}{
		{"together", 1, func(h *spreadHarness) (string, string) {
			h.start("a")
			h.start("b")
			return "a", "b"
		}},
		{"one by one", 1, func(h *spreadHarness) (string, string) {
			h.start("a")
			h.waitSpread("a")
			h.start("b")
			return "a", "b"
		}},
		{"one by one, two units each", 2, func(h *spreadHarness) (string, string) {
			h.start("a")
			h.waitSpread("a")
			h.start("b")
			return "a", "b"
		}},
		{"three one by one, then the first leaves", 1, func(h *spreadHarness) (string, string) {
			h.start("a")
			h.waitSpread("a")
			h.start("b")
			h.waitSpread("a", "b")
			h.start("c")
			h.waitSpread("a", "b", "c")
			h.stop("a")
			return "b", "c"
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := kafkatest.New(t)
			in, out := c.CreateTopic(t, 8, nil), c.CreateTopic(t, 8, nil)
			recs, _ := sentences(in, 200)
			produceAll(t, c.Client(t), recs)
			h := &spreadHarness{t: t, c: c, in: in, out: out, parallelism: tc.parallelism, apps: map[string]*stream.App{}, stops: map[string]func(){}}
			x, y := tc.run(h)
			h.waitSpread(x, y)
			for sub, n := range h.perSub(x) {
				if n != 4 {
					t.Errorf("instance %s runs %d tasks of sub-topology %d, want 4", x, n, sub)
				}
			}
		})
	}
}

// spreadHarness runs instances of the word count of one application.
type spreadHarness struct {
	t           *testing.T
	c           *kafkatest.Cluster
	in, out     string
	parallelism int
	apps        map[string]*stream.App
	stops       map[string]func()
}

func (h *spreadHarness) start(name string) {
	t := h.t
	app, err := stream.New(wordCountTopology(h.in, h.out, onDisk), stream.Brokers(h.c.Seeds()...), stream.AppID("spread-"+h.in),
		stream.StateDir(t.TempDir()), stream.InstanceID(name), stream.Parallelism(h.parallelism),
		stream.CommitInterval(200*time.Millisecond), stream.Logger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx) }()
	var once sync.Once
	h.stops[name] = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("instance %s: %v", name, err)
			}
		})
	}
	t.Cleanup(h.stops[name])
	h.apps[name] = app
}

func (h *spreadHarness) stop(name string) {
	h.stops[name]()
	delete(h.apps, name)
}

// perSub counts an instance's active tasks by sub-topology.
func (h *spreadHarness) perSub(name string) map[int]int {
	n := map[int]int{}
	for id := range h.apps[name].Stats().Tasks {
		n[id.Subtopology]++
	}
	return n
}

// waitSpread waits until the named instances, the only ones running, run
// every task once between them, each as many of each sub-topology as
// another, within one.
func (h *spreadHarness) waitSpread(names ...string) {
	h.t.Helper()
	waitFor(h.t, fmt.Sprintf("the tasks spread over %v", names), func() bool {
		owners := map[stream.TaskID]int{}
		lo, hi := map[int]int{0: 16, 1: 16}, map[int]int{}
		for _, name := range names {
			n := h.perSub(name)
			for sub := range 2 {
				lo[sub], hi[sub] = min(lo[sub], n[sub]), max(hi[sub], n[sub])
			}
			for id := range h.apps[name].Stats().Tasks {
				owners[id]++
			}
		}
		for sub := range 2 {
			if hi[sub]-lo[sub] > 1 {
				return false
			}
			for p := range int32(8) {
				if owners[stream.TaskID{Subtopology: sub, Partition: p}] != 1 {
					return false
				}
			}
		}
		return true
	})
}
