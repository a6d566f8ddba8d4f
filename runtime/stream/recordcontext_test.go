package stream_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kgen-dev/kgen/runtime/dsl"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// seen is what a processor read of its context: its time (as an offset
// from t0) and its headers.
type seen struct {
	Node    string
	At      time.Duration
	Headers string
}

func headerString(hs []stream.Header) string {
	var b strings.Builder
	for _, h := range hs {
		fmt.Fprintf(&b, "%s=%s;", h.Key, h.Value)
	}
	return b.String()
}

// contextRecorder appends what its context says to *log and writes the
// record to its store, whose changelog record gets the context's time.
type contextRecorder struct {
	node  string
	log   *[]seen
	store state.KeyValueStore[string, string]
}

func (p *contextRecorder) Init(ctx *stream.Context[string, string]) (err error) {
	p.store, err = stream.GetKeyValueStore[string, string](ctx, p.node+"-store")
	return err
}

func (p *contextRecorder) Process(ctx *stream.Context[string, string], r stream.Record[string, string]) error {
	*p.log = append(*p.log, seen{p.node, ctx.Timestamp().Sub(t0), headerString(ctx.Headers())})
	return p.store.Put(r.Key, r.Value)
}

// addRecorder adds a contextRecorder named node under parent, with a
// changelogged store of its own.
func addRecorder(t *stream.Topology, node string, log *[]seen, parent string) {
	s := serde.String{}
	stream.AddProcessor(t, node, func() stream.Processor[string, string, string, string] {
		return &contextRecorder{node: node, log: log}
	}, parent)
	stream.AddKeyValueStore(t, node+"-store", s, s, stream.StoreOptions{Changelog: true}, node)
}

// changelogTimes are the timestamps, as offsets from t0, of a store's
// changelog records.
func changelogTimes(d *stream.LocalDriver, store string) []time.Duration {
	var out []time.Duration
	for _, r := range d.Changelog(store) {
		out = append(out, r.Timestamp.Sub(t0))
	}
	return out
}

// A processor's context is the record its parent forwarded, not the task's
// input record: after a join, its time is the join's (the later of the two
// records), which is also its store writes' changelog time.
func TestContextFollowsJoinedRecord(t *testing.T) {
	s := serde.String{}
	topo := stream.NewTopology()
	stream.AddSource(topo, "orders", "orders", s, s)
	stream.AddSource(topo, "payments", "payments", s, s)
	dsl.JoinStreams(topo, "paid", dsl.JoinWindowsOf(5*time.Minute), s, s, s, dsl.StreamJoinOptions{},
		func(_ string, order, payment string) string { return order + "+" + payment }, "orders", "payments")
	var log []seen
	addRecorder(topo, "after-join", &log, "paid")
	d, err := stream.NewLocalDriver(topo, stream.LocalConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	hs := []stream.Header{{Key: "from", Value: []byte("order")}}
	// The payment (3 minutes) comes first, the order (1 minute) second:
	// the joined record has the payment's time, the input the order's.
	if err := d.Pipe("payments", []byte("o1"), []byte("pay"), nil, t0.Add(3*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := d.Pipe("orders", []byte("o1"), []byte("order"), hs, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	want := []seen{{"after-join", 3 * time.Minute, "from=order;"}}
	if diff := cmp.Diff(want, log); diff != "" {
		t.Errorf("the processor after the join saw (-want +got):\n%s", diff)
	}
	if got, want := changelogTimes(d, "after-join-store"), []time.Duration{3 * time.Minute}; !cmp.Equal(got, want) {
		t.Errorf("changelog record times %v, want the joined record's %v", got, want)
	}
}

// A record forwarded from a punctuation brings its own time and headers to
// the child, not the punctuation's time.
func TestContextFollowsPunctuationForward(t *testing.T) {
	s := serde.String{}
	topo := stream.NewTopology()
	stream.AddSource(topo, "in", "in", s, s)
	stream.AddProcessor(topo, "emit", func() stream.Processor[string, string, string, string] {
		return &punctuationEmitter{}
	}, "in")
	var log []seen
	addRecorder(topo, "after-punctuation", &log, "emit")
	d, err := stream.NewLocalDriver(topo, stream.LocalConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	// The first record starts the schedule (next at 1 minute); the second,
	// at 90 seconds, fires it.
	for _, at := range []time.Duration{0, 90 * time.Second} {
		if err := d.Pipe("in", []byte("k"), []byte("v"), nil, t0.Add(at)); err != nil {
			t.Fatal(err)
		}
	}
	// The punctuation ran at 90 seconds and forwarded a record of the
	// minute that ended at 1 minute (its last millisecond).
	end := time.Minute - time.Millisecond
	want := []seen{{"after-punctuation", end, "window=0;"}}
	if diff := cmp.Diff(want, log); diff != "" {
		t.Errorf("the processor after the punctuation saw (-want +got):\n%s", diff)
	}
	if got, want := changelogTimes(d, "after-punctuation-store"), []time.Duration{end}; !cmp.Equal(got, want) {
		t.Errorf("changelog record times %v, want the forwarded record's %v", got, want)
	}
}

// punctuationEmitter forwards, from a stream-time punctuation each minute,
// one record stamped with the end of the minute that passed.
type punctuationEmitter struct{}

func (punctuationEmitter) Init(ctx *stream.Context[string, string]) error {
	ctx.Schedule(time.Minute, stream.StreamTime, func(now time.Time) error {
		end := now.Truncate(time.Minute).Add(-time.Millisecond)
		ctx.Forward(stream.Record[string, string]{Key: "minute", Value: "done", Timestamp: end,
			Headers: []stream.Header{{Key: "window", Value: []byte("0")}}})
		return nil
	})
	return nil
}

func (punctuationEmitter) Process(*stream.Context[string, string], stream.Record[string, string]) error {
	return nil
}

// Each child sees the record forwarded to it; a record forwarded without a
// time has its parent's; after forwarding, the parent sees its own record
// again (and its store writes carry its time).
func TestContextPerChildAndRestored(t *testing.T) {
	s := serde.String{}
	topo := stream.NewTopology()
	stream.AddSource(topo, "in", "in", s, s)
	var log []seen
	stream.AddProcessor(topo, "fan", func() stream.Processor[string, string, string, string] {
		return stream.ProcessorFunc[string, string, string, string](func(ctx *stream.Context[string, string], r stream.Record[string, string]) error {
			ctx.ForwardTo("a", stream.Record[string, string]{Key: r.Key, Value: "a", Timestamp: r.Timestamp.Add(time.Second),
				Headers: []stream.Header{{Key: "to", Value: []byte("a")}}})
			ctx.ForwardTo("c", stream.Record[string, string]{Key: r.Key, Value: "c", Headers: r.Headers}) // no time
			ctx.ForwardTo("b", stream.Record[string, string]{Key: r.Key, Value: "b", Timestamp: r.Timestamp.Add(2 * time.Second)})
			log = append(log, seen{"fan", ctx.Timestamp().Sub(t0), headerString(ctx.Headers())})
			return nil
		})
	}, "in")
	for _, child := range []string{"a", "b", "c"} {
		addRecorder(topo, child, &log, "fan")
	}
	d, err := stream.NewLocalDriver(topo, stream.LocalConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	hs := []stream.Header{{Key: "in", Value: []byte("1")}}
	if err := d.Pipe("in", []byte("k"), []byte("v"), hs, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	want := []seen{
		{"a", time.Minute + time.Second, "to=a;"},
		{"c", time.Minute, "in=1;"},
		{"b", time.Minute + 2*time.Second, ""},
		{"fan", time.Minute, "in=1;"},
	}
	if diff := cmp.Diff(want, log); diff != "" {
		t.Errorf("contexts (-want +got):\n%s", diff)
	}
	for store, want := range map[string]time.Duration{"a-store": time.Minute + time.Second, "b-store": time.Minute + 2*time.Second, "c-store": time.Minute} {
		if got := changelogTimes(d, store); !cmp.Equal(got, []time.Duration{want}) {
			t.Errorf("%s changelog record times %v, want [%v]", store, got, want)
		}
	}
}

// initWriter writes its store in Init, before any record.
type initWriter struct {
	initTime time.Time
}

func (p *initWriter) Init(ctx *stream.Context[string, string]) error {
	p.initTime = ctx.Timestamp()
	store, err := stream.GetKeyValueStore[string, string](ctx, "init-store")
	if err != nil {
		return err
	}
	return store.Put("init", "x")
}

func (p *initWriter) Process(*stream.Context[string, string], stream.Record[string, string]) error {
	return nil
}

// In Init no record is being processed: the context has no time, and a
// store write's changelog record none either (the producer stamps it).
func TestContextInInitHasNoTime(t *testing.T) {
	s := serde.String{}
	topo := stream.NewTopology()
	stream.AddSource(topo, "in", "in", s, s)
	p := &initWriter{}
	stream.AddProcessor(topo, "init", func() stream.Processor[string, string, string, string] { return p }, "in")
	stream.AddKeyValueStore(topo, "init-store", s, s, stream.StoreOptions{Changelog: true}, "init")
	d, err := stream.NewLocalDriver(topo, stream.LocalConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if !p.initTime.IsZero() {
		t.Errorf("Timestamp in Init is %v, want none (the zero time)", p.initTime)
	}
	logged := d.Changelog("init-store")
	if len(logged) != 1 || !logged[0].Timestamp.IsZero() {
		t.Fatalf("changelog of a write in Init: %v, want one record without a timestamp", logged)
	}
}
