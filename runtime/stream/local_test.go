package stream_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/kgen-dev/kgen/runtime/streamtest"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// wordCount is the canonical stateful topology: split sentences into words,
// count per word in a changelogged store (persistent, or in memory when
// nil), emit the new count.
func wordCount(persistent state.Opener) *stream.Topology {
	t := stream.NewTopology()
	stream.AddSource(t, "sentences", "sentences", serde.String{}, serde.String{})
	stream.AddProcessor(t, "split", func() stream.Processor[string, string, string, string] {
		return stream.ProcessorFunc[string, string, string, string](func(ctx *stream.Context[string, string], r stream.Record[string, string]) error {
			for _, w := range strings.Fields(r.Value) {
				ctx.Forward(stream.Record[string, string]{Key: w, Value: w, Timestamp: r.Timestamp})
			}
			return nil
		})
	}, "sentences")
	stream.AddProcessor(t, "count", func() stream.Processor[string, string, string, int64] { return &counter{} }, "split")
	stream.AddKeyValueStore(t, "counts", serde.String{}, serde.Int64{}, stream.StoreOptions{Persistent: persistent, Changelog: true}, "count")
	stream.AddSink(t, "out", "word-counts", serde.String{}, serde.Int64{}, "count")
	return t
}

type counter struct {
	store state.KeyValueStore[string, int64]
}

func (c *counter) Init(ctx *stream.Context[string, int64]) error {
	var err error
	c.store, err = stream.GetKeyValueStore[string, int64](ctx, "counts")
	return err
}

func (c *counter) Process(ctx *stream.Context[string, int64], r stream.Record[string, string]) error {
	n, _, err := c.store.Get(r.Key)
	if err != nil {
		return err
	}
	n++
	if err := c.store.Put(r.Key, n); err != nil {
		return err
	}
	ctx.Forward(stream.Record[string, int64]{Key: r.Key, Value: n, Timestamp: r.Timestamp})
	return nil
}

func newDriver(t *testing.T, topo *stream.Topology, cfg streamtest.Config) *streamtest.Driver {
	t.Helper()
	d, err := streamtest.New(topo, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

type kv struct {
	K string
	V int64
}

func TestWordCountLocal(t *testing.T) {
	d := newDriver(t, wordCount(nil), streamtest.Config{})
	for i, s := range []string{"a b a", "c a"} {
		if err := streamtest.Pipe(d, "sentences", serde.String{}, serde.String{}, "", s, t0.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	out, err := streamtest.Read(d, "word-counts", serde.String{}, serde.Int64{})
	if err != nil {
		t.Fatal(err)
	}
	var got []kv
	for _, r := range out {
		got = append(got, kv{r.Key, r.Value})
	}
	want := []kv{{"a", 1}, {"b", 1}, {"a", 2}, {"c", 1}, {"a", 3}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("outputs (-want +got):\n%s", diff)
	}
	if !out[4].Timestamp.Equal(t0.Add(time.Second)) {
		t.Errorf("output timestamp = %v, want the input's %v", out[4].Timestamp, t0.Add(time.Second))
	}
	store, err := streamtest.KeyValueStore[string, int64](d, "counts")
	if err != nil {
		t.Fatal(err)
	}
	if n, ok, _ := store.Get("a"); !ok || n != 3 {
		t.Errorf("store a = %d,%v, want 3", n, ok)
	}
	if got := d.ChangelogLen("counts"); got != 5 {
		t.Errorf("changelog records = %d, want 5 (one per put)", got)
	}
}

// TestLocalDriverKeepsStoresInMemory checks that the test driver never opens
// a persistent store: it keeps every store in memory, and touches no disk.
func TestLocalDriverKeepsStoresInMemory(t *testing.T) {
	opened := 0
	persistent := func(dir string) (state.Backend, error) {
		opened++
		return nil, errors.New("the test driver opened a persistent store in " + dir)
	}
	d := newDriver(t, wordCount(persistent), streamtest.Config{})
	if err := streamtest.Pipe(d, "sentences", serde.String{}, serde.String{}, "", "a b a", t0); err != nil {
		t.Fatal(err)
	}
	store, err := streamtest.KeyValueStore[string, int64](d, "counts")
	if err != nil {
		t.Fatal(err)
	}
	if n, ok, _ := store.Get("a"); !ok || n != 2 {
		t.Errorf("store a = %d,%v, want 2", n, ok)
	}
	if opened != 0 {
		t.Errorf("the persistent opener was called %d times, want 0", opened)
	}
}

// mergeTopology reads two co-partitioned topics into one processor that
// records the order it saw records in.
func mergeTopology(seen *[]string) *stream.Topology {
	t := stream.NewTopology()
	stream.AddSource(t, "left", "left", serde.String{}, serde.String{})
	stream.AddSource(t, "right", "right", serde.String{}, serde.String{})
	stream.AddProcessor(t, "merge", func() stream.Processor[string, string, string, string] {
		return stream.ProcessorFunc[string, string, string, string](func(ctx *stream.Context[string, string], r stream.Record[string, string]) error {
			*seen = append(*seen, r.Value)
			ctx.Forward(r)
			return nil
		})
	}, "left", "right")
	stream.AddSink(t, "out", "merged", serde.String{}, serde.String{}, "merge")
	return t
}

func TestStreamTimePunctuation(t *testing.T) {
	topo := stream.NewTopology()
	stream.AddSource(topo, "in", "in", serde.String{}, serde.String{})
	var fired []time.Time
	stream.AddProcessor(topo, "p", func() stream.Processor[string, string, string, string] {
		return &punctuator{every: 10 * time.Second, typ: stream.StreamTime, fired: &fired}
	}, "in")
	stream.AddSink(topo, "out", "out", serde.String{}, serde.String{}, "p")
	d := newDriver(t, topo, streamtest.Config{})
	pipe := func(sec int) {
		t.Helper()
		if err := streamtest.Pipe(d, "in", serde.String{}, serde.String{}, "k", "v", t0.Add(time.Duration(sec)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	pipe(0)  // stream time 0: first due at 10
	pipe(5)  // nothing
	pipe(10) // fires at 10, next 20
	pipe(3)  // late record: stream time stays 10
	pipe(45) // skipped 20, 30, 40: fires once at 45, next 50
	pipe(49)
	pipe(50) // fires
	want := []time.Time{t0.Add(10 * time.Second), t0.Add(45 * time.Second), t0.Add(50 * time.Second)}
	if diff := cmp.Diff(want, fired); diff != "" {
		t.Fatalf("punctuations (-want +got):\n%s", diff)
	}
	// Wall-clock time does not drive stream-time punctuation.
	if err := d.AdvanceWallClock(time.Hour); err != nil {
		t.Fatal(err)
	}
	if len(fired) != 3 {
		t.Fatalf("stream-time punctuation fired on wall-clock advance: %v", fired)
	}
}

type punctuator struct {
	every time.Duration
	typ   stream.PunctuationType
	fired *[]time.Time
	c     stream.Cancellable
}

func (p *punctuator) Init(ctx *stream.Context[string, string]) error {
	p.c = ctx.Schedule(p.every, p.typ, func(now time.Time) error {
		*p.fired = append(*p.fired, now.UTC())
		ctx.Forward(stream.Record[string, string]{Key: "tick", Value: now.UTC().Format(time.RFC3339)})
		if len(*p.fired) == 3 && p.typ == stream.WallClock {
			p.c.Cancel()
		}
		return nil
	})
	return nil
}

func (p *punctuator) Process(ctx *stream.Context[string, string], r stream.Record[string, string]) error {
	return nil
}

func TestWallClockPunctuation(t *testing.T) {
	topo := stream.NewTopology()
	stream.AddSource(topo, "in", "in", serde.String{}, serde.String{})
	var fired []time.Time
	stream.AddProcessor(topo, "p", func() stream.Processor[string, string, string, string] {
		return &punctuator{every: time.Minute, typ: stream.WallClock, fired: &fired}
	}, "in")
	stream.AddSink(topo, "out", "out", serde.String{}, serde.String{}, "p")
	d := newDriver(t, topo, streamtest.Config{StartTime: t0})
	steps := []time.Duration{30 * time.Second, 30 * time.Second, 5 * time.Minute, time.Minute, time.Hour}
	for _, s := range steps {
		if err := d.AdvanceWallClock(s); err != nil {
			t.Fatal(err)
		}
	}
	// Fires at 1m, then once at 6m (skipping 2m..5m), then at 7m; then cancelled.
	want := []time.Time{t0.Add(time.Minute), t0.Add(6 * time.Minute), t0.Add(7 * time.Minute)}
	if diff := cmp.Diff(want, fired); diff != "" {
		t.Fatalf("punctuations (-want +got):\n%s", diff)
	}
	out, err := streamtest.Read(d, "out", serde.String{}, serde.String{})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 3 || !out[0].Timestamp.Equal(t0.Add(time.Minute)) {
		t.Fatalf("punctuation outputs = %+v, want 3 stamped with the punctuation time", out)
	}
}

type failing struct{ panics bool }

func (f failing) Process(ctx *stream.Context[string, string], r stream.Record[string, string]) error {
	if r.Value == "bad" {
		if f.panics {
			var m map[string]int
			m["boom"]++
		}
		return errors.New("cannot handle bad")
	}
	ctx.Forward(r)
	return nil
}

func failingTopology(panics bool) *stream.Topology {
	topo := stream.NewTopology()
	stream.AddSource(topo, "in", "in", serde.String{}, serde.Int64{})
	stream.AddProcessor(topo, "fmt", func() stream.Processor[string, int64, string, string] {
		return stream.ProcessorFunc[string, int64, string, string](func(ctx *stream.Context[string, string], r stream.Record[string, int64]) error {
			v := "good"
			if r.Value < 0 {
				v = "bad"
			}
			ctx.Forward(stream.Record[string, string]{Key: r.Key, Value: v})
			return nil
		})
	}, "in")
	stream.AddProcessor(topo, "check", func() stream.Processor[string, string, string, string] { return failing{panics} }, "fmt")
	stream.AddSink(topo, "out", "out", serde.String{}, serde.String{}, "check")
	return topo
}

func TestErrorPolicies(t *testing.T) {
	i64 := func(v int64) []byte { b, _ := serde.Int64{}.Serialize(v); return b }
	for _, tc := range []struct {
		name   string
		panics bool
		cfg    streamtest.Config
		value  []byte
		want   string // the error's text; "" = no error
	}{
		{"process error fails", false, streamtest.Config{}, i64(-1), `process record in/0@1 at node "check": cannot handle bad`},
		{"panic fails", true, streamtest.Config{}, i64(-1), `process record in/0@1 at node "check": panic: assignment to entry in nil map`},
		{"undecodable fails", false, streamtest.Config{}, []byte("xyz"), `deserialize record in/0@1 at node "in": value: decode int64: want 8 bytes, got 3; ` +
			`the deserialize-error policy is fail: set -on-deserialize-error (KGEN_ON_DESERIALIZE_ERROR; stream.OnDeserializeError by hand) ` +
			`to continue to log and skip such records, or to dead-letter=TOPIC to send them to TOPIC`},
		{"process error skipped", false, streamtest.Config{OnProcessError: stream.LogAndContinue()}, i64(-1), ""},
		{"panic skipped", true, streamtest.Config{OnProcessError: stream.LogAndContinue()}, i64(-1), ""},
		{"undecodable skipped", false, streamtest.Config{OnDeserializeError: stream.LogAndContinue()}, []byte("xyz"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDriver(t, failingTopology(tc.panics), tc.cfg)
			if err := d.PipeRaw("in", []byte("k"), i64(1), t0); err != nil {
				t.Fatal(err)
			}
			err := d.PipeRaw("in", []byte("k"), tc.value, t0)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("error = %v, want the record skipped", err)
				}
			} else if err == nil || err.Error() != tc.want {
				t.Fatalf("error:\n got %v\nwant %s", err, tc.want)
			}
			var re *stream.RecordError
			if err != nil && !errors.As(err, &re) {
				t.Fatalf("error %T is not a *RecordError", err)
			}
			// A failed record is reported once: the driver goes on with the next.
			if err := d.PipeRaw("in", []byte("k"), i64(2), t0); err != nil {
				t.Fatalf("the record after the failed one: %v; the driver stayed poisoned", err)
			}
			out, _ := streamtest.Read(d, "out", serde.String{}, serde.String{})
			if len(out) != 2 {
				t.Fatalf("outputs = %d, want the 2 good records around the failed one", len(out))
			}
		})
	}
}

func TestDeadLetter(t *testing.T) {
	topo := failingTopology(false)
	d := newDriver(t, topo, streamtest.Config{OnProcessError: stream.DeadLetter("dlq")})
	bad, _ := serde.Int64{}.Serialize(-1)
	if err := d.PipeRaw("in", []byte("k"), bad, t0); err != nil {
		t.Fatal(err)
	}
	dl, err := streamtest.Read(d, "dlq", serde.String{}, serde.Bytes{})
	if err != nil {
		t.Fatal(err)
	}
	if len(dl) != 1 {
		t.Fatalf("dead letters = %d, want 1", len(dl))
	}
	hdr := map[string]string{}
	for _, h := range dl[0].Headers {
		hdr[h.Key] = string(h.Value)
	}
	want := map[string]string{
		"kgen.error": "cannot handle bad", "kgen.error.node": "check",
		"kgen.source.topic": "in", "kgen.source.partition": "0", "kgen.source.offset": "0",
	}
	if diff := cmp.Diff(want, hdr); diff != "" {
		t.Fatalf("dead-letter headers (-want +got):\n%s", diff)
	}
	if string(dl[0].Value) != string(bad) {
		t.Fatalf("dead letter value = %x, want the raw input %x", dl[0].Value, bad)
	}
}

func TestValidationReportsEverything(t *testing.T) {
	topo := stream.NewTopology()
	stream.AddSource(topo, "src", "in", serde.String{}, serde.String{})
	stream.AddProcessor(topo, "p", func() stream.Processor[string, int64, string, string] { return nil }, "src")
	stream.AddProcessor(topo, "q", func() stream.Processor[string, string, string, string] { return nil }, "ghost")
	stream.AddProcessor(topo, "c1", func() stream.Processor[string, string, string, string] { return nil }, "src", "c2")
	stream.AddProcessor(topo, "c2", func() stream.Processor[string, string, string, string] { return nil }, "c1")
	stream.AddKeyValueStore(topo, "lonely", serde.String{}, serde.String{}, stream.StoreOptions{})
	stream.AddSink(topo, "src", "out", serde.String{}, serde.String{}, "p")
	err := topo.Validate()
	if err == nil {
		t.Fatal("Validate() = nil, want errors")
	}
	for _, want := range []string{
		`duplicate node name "src"`,
		`source "src" forwards (string, string) but child processor "p" takes (string, int64)`,
		`processor "q": unknown parent "ghost"`,
		`store "lonely" is not attached to any processor`,
		`cycle: c1 -> c2 -> c1`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v\nwant it to contain %q", err, want)
		}
	}
}

func TestDescribe(t *testing.T) {
	topo := wordCount(nil)
	want := `Topologies:
  Sub-topology: 0
    Source: sentences (topics: [sentences])
      --> split
    Processor: split (stores: [])
      --> count
      <-- sentences
    Processor: count (stores: [counts])
      --> out
      <-- split
    Sink: out (topic: word-counts)
      <-- count
`
	if diff := cmp.Diff(want, topo.Describe()); diff != "" {
		t.Fatalf("Describe (-want +got):\n%s", diff)
	}
	for _, s := range []string{"flowchart LR", "split --> count", "count --- store_counts"} {
		if !strings.Contains(topo.Mermaid(), s) {
			t.Errorf("Mermaid lacks %q:\n%s", s, topo.Mermaid())
		}
	}
	if !strings.Contains(topo.DOT(), `"split" -> "count";`) {
		t.Errorf("DOT lacks the split->count edge:\n%s", topo.DOT())
	}
}

func TestKafkaPartitionMatchesJava(t *testing.T) {
	// Expected partitions from Apache Kafka's Java default partitioner
	// (Utils.toPositive(Utils.murmur2(key)) % n) for well-known vectors of
	// murmur2: 21 -> -973932308, "foobar" -> -790332482, "a-little-bit-long-string" -> -985981536.
	for _, tc := range []struct {
		key  string
		hash int32
	}{
		{"21", -973932308},
		{"foobar", -790332482},
		{"a-little-bit-long-string", -985981536},
		{"a-little-bit-longer-string", -1486304829},
		{"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971},
	} {
		want := (tc.hash & 0x7fffffff) % 12
		if got := stream.KafkaPartition([]byte(tc.key), 12); got != want {
			t.Errorf("KafkaPartition(%q, 12) = %d, want %d", tc.key, got, want)
		}
	}
}
