package dsl_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/runtime/dsl"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/stream"
)

const ms = time.Millisecond

var base = t0.UnixMilli()

// windowedCount is a topology counting "in" per key in w, written to "out"
// with the windowed key serde; after adds nodes between the count and the
// sink (a suppress) and returns the node the sink reads.
func windowedTopo(add func(t *stream.Topology) (last string, keys serde.Serde[dsl.Windowed[string]])) *stream.Topology {
	s := serde.String{}
	topo := stream.NewTopology()
	stream.AddSource(topo, "in", "in", s, s)
	last, keys := add(topo)
	dsl.ToStream[dsl.Windowed[string], int64](topo, "updates", last)
	stream.AddSink(topo, "out", "out", keys, dsl.Nullable[int64](serde.Int64{}), "updates")
	return topo
}

// windowedOut renders the output as key@start/end=count@ts (times relative
// to t0, "-" for a tombstone), each key's records in order, keys sorted: the
// order within a key does not depend on the partitioning.
func windowedOut(t *testing.T, d *stream.LocalDriver, keys serde.Serde[dsl.Windowed[string]]) []string {
	t.Helper()
	type line struct{ key, s string }
	var lines []line
	for _, r := range d.Output("out") {
		k, err := keys.Deserialize(r.Key)
		if err != nil {
			t.Fatal(err)
		}
		v := "-"
		if r.Value != nil {
			v = long(r.Value)
		}
		lines = append(lines, line{k.Key, fmt.Sprintf("%s@%d/%d=%s@%d", k.Key, k.Start-base, k.End-base, v, r.Timestamp.UnixMilli()-base)})
	}
	slices.SortStableFunc(lines, func(a, b line) int { return strings.Compare(a.key, b.key) })
	out := []string{}
	for _, l := range lines {
		out = append(out, l.s)
	}
	return out
}

type in struct {
	key string
	at  time.Duration // after t0, in ms
}

func pipeAll(t *testing.T, d *stream.LocalDriver, recs []in) {
	t.Helper()
	for _, r := range recs {
		pipe(t, d, "in", r.key, "x", r.at)
	}
}

// Tumbling windows with grace: every update as it happens, a window closed
// once the operator's stream time reaches its end plus grace (an update at
// exactly end+grace-1 still counts, at end+grace it is late), the update
// stamped with the window's largest record time; with EmitFinal, each
// window once when it closes. On one partition and on four, where other
// keys' records move their own tasks' stream times. a's updates are the
// records of Kafka Streams 4.4's TopologyTestDriver for the same input.
func TestTumblingWindows(t *testing.T) {
	w := dsl.TumblingWindows(10 * ms).Grace(5 * ms)
	keys := dsl.WindowedKey(serde.String{}, w)
	recs := []in{{"a", 1}, {"a", 3}, {"a", 14}, {"a", 2}, {"a", 14}, {"a", 9}, {"a", 15}, {"a", 5}, {"a", 30}, {"a", 50}}
	for _, c := range []struct {
		emit dsl.Emit
		want []string
	}{
		{dsl.EmitUpdates, []string{
			"a@0/10=1@1", "a@0/10=2@3", "a@10/20=1@14", "a@0/10=3@3", "a@10/20=2@14",
			"a@0/10=4@9", // stream time 14, close time 9: [0,10) still open
			"a@10/20=3@15",
			// a@5: stream time 15, close time 10 = the window's end: late
			"a@30/40=1@30", "a@50/60=1@50",
		}},
		{dsl.EmitFinal, []string{"a@0/10=4@9", "a@10/20=3@15", "a@30/40=1@30"}},
	} {
		for _, parts := range []int32{1, 4} {
			t.Run(fmt.Sprintf("%s/%d", c.emit, parts), func(t *testing.T) {
				topo := windowedTopo(func(topo *stream.Topology) (string, serde.Serde[dsl.Windowed[string]]) {
					dsl.WindowedCount[string, string](topo, "count", "counts", w, serde.String{}, dsl.WindowOptions{Emit: c.emit, Store: stream.StoreOptions{Changelog: true}}, "in")
					return "count", keys
				})
				d := driver(t, topo, parts)
				pipeAll(t, d, recs)
				// other keys, after: they must not disturb a's windows
				pipeAll(t, d, []in{{"b", 61}, {"c", 62}, {"b", 75}})
				got := windowedOut(t, d, keys)
				want := c.want
				if c.emit == dsl.EmitUpdates {
					want = append(slices.Clone(want), "b@60/70=1@61", "b@70/80=1@75", "c@60/70=1@62")
				} else if parts == 1 {
					// one task: b@75 closes [50,60) and [60,70) for every key of the task
					want = append(slices.Clone(want), "a@50/60=1@50", "b@60/70=1@61", "c@60/70=1@62")
				}
				if parts == 1 || c.emit == dsl.EmitUpdates {
					same(t, "output", got, want)
				} else {
					// a's windows are the same wherever b and c land, but for
					// [50,60), which b@75 closes if a shares b's task
					same(t, "a's output", slices.DeleteFunc(got, func(s string) bool {
						return !strings.HasPrefix(s, "a@") || strings.HasPrefix(s, "a@50/")
					}), want)
				}
				if got := d.Dropped()[stream.DropLateRecord]; got != 1 {
					t.Errorf("late records dropped: %d, want 1", got)
				}
			})
		}
	}
}

// Hopping windows: a record in several windows; one too late for the older
// of its windows still updates the newer, and is counted once as late. The
// records are those of Kafka Streams 4.4's TopologyTestDriver.
func TestHoppingWindows(t *testing.T) {
	w := dsl.HoppingWindows(10*ms, 5*ms)
	keys := dsl.WindowedKey(serde.String{}, w)
	topo := windowedTopo(func(topo *stream.Topology) (string, serde.Serde[dsl.Windowed[string]]) {
		dsl.WindowedCount[string, string](topo, "count", "counts", w, serde.String{}, dsl.WindowOptions{}, "in")
		return "count", keys
	})
	d := driver(t, topo, 2)
	pipeAll(t, d, []in{{"a", 13}, {"a", 17}, {"a", 22}, {"a", 19}})
	same(t, "output", windowedOut(t, d, keys), []string{
		"a@5/15=1@13", "a@10/20=1@13", "a@10/20=2@17", "a@15/25=1@17", "a@15/25=2@22", "a@20/30=1@22",
		"a@15/25=3@22", // a@19: [10,20) closed at stream time 22, [15,25) open
	})
	if got := d.Dropped()[stream.DropLateRecord]; got != 1 {
		t.Errorf("late records dropped: %d, want 1", got)
	}
}

// Reduce and Aggregate over time windows: the first value starts a window
// (Reduce) or init() does (Aggregate).
func TestWindowedReduceAndAggregate(t *testing.T) {
	s := serde.String{}
	w := dsl.TumblingWindows(10 * ms)
	keys := dsl.WindowedKey(s, w)
	topo := stream.NewTopology()
	stream.AddSource(topo, "in", "in", s, s)
	dsl.WindowedReduce(topo, "reduce", "reduced", w, s, s, dsl.WindowOptions{}, func(a, v string) string { return a + "+" + v }, "in")
	dsl.ToStream[dsl.Windowed[string], string](topo, "r-updates", "reduce")
	stream.AddSink(topo, "r-out", "reduced", keys, dsl.Nullable[string](s), "r-updates")
	dsl.WindowedAggregate(topo, "agg", "aggregated", w, s, s, dsl.WindowOptions{}, func() string { return "init" },
		func(k, v, a string) string { return a + "," + k + v }, "in")
	dsl.ToStream[dsl.Windowed[string], string](topo, "a-updates", "agg")
	stream.AddSink(topo, "a-out", "aggregated", keys, dsl.Nullable[string](s), "a-updates")
	d := driver(t, topo, 1)
	for i, r := range []in{{"k", 1}, {"k", 2}, {"k", 12}} {
		pipe(t, d, "in", r.key, fmt.Sprint(i), r.at)
	}
	render := func(topic string) []string {
		var out []string
		for _, r := range d.Output(topic) {
			k, _ := keys.Deserialize(r.Key)
			out = append(out, fmt.Sprintf("%d=%s@%d", k.Start-base, r.Value, r.Timestamp.UnixMilli()-base))
		}
		return out
	}
	same(t, "reduce", render("reduced"), []string{"0=0@1", "0=0+1@2", "10=2@12"})
	same(t, "aggregate", render("aggregated"), []string{"0=init,k0@1", "0=init,k0,k1@2", "10=init,k2@12"})
}

// Windows that close together are emitted by start, then by serialized key
// (Kafka Streams' time-ordered store), whatever order they were made in.
func TestEmitFinalOrder(t *testing.T) {
	w := dsl.HoppingWindows(10*ms, 5*ms)
	keys := dsl.WindowedKey(serde.String{}, w)
	topo := windowedTopo(func(topo *stream.Topology) (string, serde.Serde[dsl.Windowed[string]]) {
		dsl.WindowedCount[string, string](topo, "count", "counts", w, serde.String{}, dsl.WindowOptions{Emit: dsl.EmitFinal}, "in")
		return "count", keys
	})
	d := driver(t, topo, 1)
	pipeAll(t, d, []in{{"b", 6}, {"a", 7}, {"b", 8}, {"a", 30}})
	var got []string
	for _, r := range d.Output("out") {
		k, _ := keys.Deserialize(r.Key)
		got = append(got, fmt.Sprintf("%s@%d/%d=%s@%d", k.Key, k.Start-base, k.End-base, long(r.Value), r.Timestamp.UnixMilli()-base))
	}
	same(t, "order", got, []string{"a@0/10=1@7", "b@0/10=2@8", "a@5/15=1@7", "b@5/15=2@8"})
}
