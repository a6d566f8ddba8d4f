package dsl_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/runtime/dsl"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// Suppress until the window closes, after a tumbling count that emits
// every update: the same final results as EmitFinal, by the suppress node's
// own stream time (the updates' timestamps), stamped with each window's
// last update.
func TestSuppressUntilWindowCloses(t *testing.T) {
	w := dsl.TumblingWindows(10 * ms).Grace(5 * ms)
	keys := dsl.WindowedKey(serde.String{}, w)
	topo := windowedTopo(func(topo *stream.Topology) (string, serde.Serde[dsl.Windowed[string]]) {
		dsl.WindowedCount[string, string](topo, "count", "counts", w, serde.String{}, dsl.WindowOptions{}, "in")
		dsl.SuppressUntilWindowCloses(topo, "final", "final-buffer", w, keys, serde.Int64{}, dsl.SuppressOptions{Store: stream.StoreOptions{Changelog: true}}, "count")
		return "final", keys
	})
	d := driver(t, topo, 2)
	pipeAll(t, d, []in{{"a", 1}, {"a", 3}, {"a", 14}, {"a", 2}, {"a", 14}, {"a", 9}, {"a", 15}, {"a", 5}, {"a", 30}})
	same(t, "output", windowedOut(t, d, keys), []string{"a@0/10=4@9", "a@10/20=3@15"})
}

// Suppress after sessions drops a merged-away session's tombstone: its
// last change is a deletion. (Kafka Streams 4.4's TopologyTestDriver gives
// the same two records for this input.)
func TestSuppressSessionsDropsTombstones(t *testing.T) {
	w := dsl.SessionWindows(10 * ms)
	keys := dsl.SessionKey(serde.String{})
	topo := windowedTopo(func(topo *stream.Topology) (string, serde.Serde[dsl.Windowed[string]]) {
		dsl.SessionCount[string, string](topo, "count", "sessions", w, serde.String{}, dsl.WindowOptions{}, "in")
		dsl.SuppressUntilWindowCloses(topo, "final", "final-buffer", w, keys, serde.Int64{}, dsl.SuppressOptions{}, "count")
		return "final", keys
	})
	d := driver(t, topo, 1)
	pipeAll(t, d, []in{{"a", 0}, {"a", 5}, {"a", 30}, {"a", 60}})
	// [0,0] was replaced by [0,5]: its tombstone is not forwarded
	same(t, "output", windowedOut(t, d, keys), []string{"a@0/5=2@5", "a@30/30=1@30"})
}

// Suppress until a time limit, on a plain count: a key's latest change, once
// the node's stream time is the limit past the key's first buffered change
// (later changes keep its place); with a bounded buffer, the policy when
// full. Unbounded and emitting early by records or bytes, the outputs are
// those of Kafka Streams 4.4's TopologyTestDriver for the same input.
func TestSuppressUntilTimeLimit(t *testing.T) {
	s := serde.String{}
	build := func(opts dsl.SuppressOptions) *stream.Topology {
		topo := stream.NewTopology()
		stream.AddSource(topo, "in", "in", s, s)
		dsl.Count[string, string](topo, "count", "counts", s, stream.StoreOptions{}, "in")
		dsl.SuppressUntilTimeLimit(topo, "limit", "limit-buffer", 10*ms, s, serde.Int64{}, opts, "count")
		dsl.ToStream[string, int64](topo, "updates", "limit")
		stream.AddSink(topo, "out", "out", s, dsl.Nullable[int64](serde.Int64{}), "updates")
		return topo
	}
	recs := []in{{"a", 0}, {"a", 5}, {"b", 7}, {"a", 12}, {"c", 30}}

	d := driver(t, build(dsl.SuppressOptions{}), 1)
	pipeAll(t, d, recs)
	same(t, "output", render(d.Output("out"), long), []string{"a=3@12", "b=1@7"})

	d = driver(t, build(dsl.SuppressOptions{MaxRecords: 1, WhenFull: dsl.EmitEarlyWhenFull}), 1)
	pipeAll(t, d, recs)
	// b's arrival makes two keys: a (the earliest) goes early; and so on
	same(t, "emit early", render(d.Output("out"), long), []string{"a=2@5", "b=1@7", "a=3@12"})

	d = driver(t, build(dsl.SuppressOptions{MaxBytes: 1, WhenFull: dsl.EmitEarlyWhenFull}), 1)
	pipeAll(t, d, recs)
	// every entry is over a byte: each change goes at once
	same(t, "emit early by bytes", render(d.Output("out"), long), []string{"a=1@0", "a=2@5", "b=1@7", "a=3@12", "c=1@30"})

	d = driver(t, build(dsl.SuppressOptions{MaxRecords: 1}), 1)
	pipe(t, d, "in", "a", "x", 0)
	err := d.Pipe("in", []byte("b"), []byte("x"), nil, t0.Add(7*time.Millisecond))
	if err == nil || !strings.Contains(err.Error(), "full") {
		t.Errorf("a full buffer that shuts down: %v", err)
	}

	if _, err := stream.NewLocalDriver(func() *stream.Topology {
		topo := stream.NewTopology()
		stream.AddSource(topo, "in", "in", s, s)
		w := dsl.TumblingWindows(10 * ms)
		dsl.WindowedCount[string, string](topo, "count", "counts", w, s, dsl.WindowOptions{}, "in")
		dsl.SuppressUntilWindowCloses(topo, "final", "final-buffer", w, dsl.WindowedKey(s, w), serde.Int64{},
			dsl.SuppressOptions{MaxRecords: 5, WhenFull: dsl.EmitEarlyWhenFull}, "count")
		return topo
	}(), stream.LocalConfig{}); err == nil || !strings.Contains(err.Error(), "not final") {
		t.Errorf("until the window closes with a buffer that emits early: %v", err)
	}
}

// Suppress after sliding windows, which hold their end: a window goes out
// once the stream time reaches its end plus grace, one millisecond before
// the aggregation stops taking records for it, so a record at that very
// time updates it and it goes out again. Kafka Streams 4.4's
// TopologyTestDriver gives these records for the same input (sliding
// windows of 10 s, no grace, suppress until the windows close).
func TestSuppressSlidingEmitsAtEnd(t *testing.T) {
	w := dsl.SlidingWindows(10*time.Second, 0)
	keys := dsl.WindowedKey(serde.String{}, w)
	topo := windowedTopo(func(topo *stream.Topology) (string, serde.Serde[dsl.Windowed[string]]) {
		dsl.WindowedCount[string, string](topo, "count", "counts", w, serde.String{}, dsl.WindowOptions{}, "in")
		dsl.SuppressUntilWindowCloses(topo, "final", "buffer", w, keys, serde.Int64{}, dsl.SuppressOptions{}, "count")
		return "final", keys
	})
	d := driver(t, topo, 1)
	var got []string
	for _, at := range []int64{10000, 20000, 20000, 40000} {
		if err := d.Pipe("in", []byte("a"), []byte("x"), nil, time.UnixMilli(at)); err != nil {
			t.Fatal(err)
		}
		for _, r := range d.Output("out") {
			k, _ := keys.Deserialize(r.Key)
			got = append(got, fmt.Sprintf("after %d: %d/%d=%s@%d", at, k.Start, k.End, long(r.Value), r.Timestamp.UnixMilli()))
		}
	}
	same(t, "output", got, []string{
		"after 10000: 0/10000=1@10000",
		"after 20000: 10000/20000=2@20000",
		"after 20000: 10000/20000=3@20000",
		"after 40000: 10001/20001=2@20000",
		"after 40000: 30000/40000=1@40000",
	})
}
