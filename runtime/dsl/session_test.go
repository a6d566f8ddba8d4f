package dsl_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/runtime/dsl"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/stream"
)

func sessionTopo(w dsl.SessionWindowSpec, opts dsl.WindowOptions) (*stream.Topology, serde.Serde[dsl.Windowed[string]]) {
	keys := dsl.SessionKey(serde.String{})
	return windowedTopo(func(topo *stream.Topology) (string, serde.Serde[dsl.Windowed[string]]) {
		dsl.SessionCount[string, string](topo, "count", "sessions", w, serde.String{}, opts, "in")
		return "count", keys
	}), keys
}

// Sessions: a record within gap of a session extends it; one that bridges
// two merges them, with a tombstone for each session replaced (stamped with
// its end) before the merged session (stamped with its end); a record whose
// session would already be closed (end before stream time - grace - gap) is
// dropped as late. With EmitFinal, each session once when it closes. Both
// are the records of Kafka Streams 4.4's TopologyTestDriver for this input
// (with its emit-final throttle off).
func TestSessionWindows(t *testing.T) {
	w := dsl.SessionWindows(10 * ms)
	recs := []in{{"a", 0}, {"a", 5}, {"a", 30}, {"a", 18}, {"a", 22}, {"a", 50}, {"a", 50}}
	for _, c := range []struct {
		emit dsl.Emit
		want []string
	}{
		{dsl.EmitUpdates, []string{
			"a@0/0=1@0",
			"a@0/0=-@0", "a@0/5=2@5",
			"a@30/30=1@30",
			// a@18: stream time 30, close time 20: its session [18,18] is late
			"a@30/30=-@30", "a@22/30=2@30",
			"a@50/50=1@50",
			"a@50/50=2@50", // same session: no tombstone
		}},
		{dsl.EmitFinal, []string{"a@0/5=2@5", "a@22/30=2@30"}},
	} {
		for _, parts := range []int32{1, 3} {
			t.Run(fmt.Sprintf("%s/%d", c.emit, parts), func(t *testing.T) {
				topo, keys := sessionTopo(w, dsl.WindowOptions{Emit: c.emit})
				d := driver(t, topo, parts)
				pipeAll(t, d, recs)
				same(t, "output", windowedOut(t, d, keys), c.want)
				if got := d.Dropped()[stream.DropLateRecord]; got != 1 {
					t.Errorf("late records dropped: %d, want 1", got)
				}
			})
		}
	}
}

// A session aggregate's merger combines the aggregates of the sessions a
// record bridges, in the order of their ends, from init().
func TestSessionAggregateMerges(t *testing.T) {
	s := serde.String{}
	keys := dsl.SessionKey(s)
	topo := stream.NewTopology()
	stream.AddSource(topo, "in", "in", s, s)
	dsl.SessionAggregate(topo, "agg", "sessions", dsl.SessionWindows(15*ms).Grace(100*ms), s, s, dsl.WindowOptions{},
		func() string { return "" }, func(_, v, a string) string { return a + v },
		func(_, a, b string) string { return "(" + a + "|" + b + ")" }, "in")
	dsl.ToStream[dsl.Windowed[string], string](topo, "updates", "agg")
	stream.AddSink(topo, "out", "out", keys, dsl.Nullable[string](s), "updates")
	d := driver(t, topo, 2)
	for _, r := range []struct {
		v  string
		at int64
	}{{"x", 0}, {"y", 30}, {"z", 15}} {
		pipe(t, d, "in", "k", r.v, time.Duration(r.at))
	}
	var got []string
	for _, r := range d.Output("out") {
		k, _ := keys.Deserialize(r.Key)
		v := "-"
		if r.Value != nil {
			v = string(r.Value)
		}
		got = append(got, fmt.Sprintf("%d/%d=%s@%d", k.Start-base, k.End-base, v, r.Timestamp.UnixMilli()-base))
	}
	same(t, "output", got, []string{"0/0=x@0", "30/30=y@30", "0/0=-@0", "30/30=-@30", "0/30=((|x)|y)z@30"})
}

// A session stays in the store until it is emitted: at the stream time
// where the store's retention (gap plus grace past the session's end) would
// drop it, it is not closed yet (a record at its end plus gap could still
// extend it).
func TestSessionFinalAtRetention(t *testing.T) {
	topo, keys := sessionTopo(dsl.SessionWindows(10*ms), dsl.WindowOptions{Emit: dsl.EmitFinal})
	d := driver(t, topo, 1)
	pipeAll(t, d, []in{{"a", 0}, {"b", 10}, {"b", 11}})
	same(t, "output", windowedOut(t, d, keys), []string{"a@0/0=1@0"})
}
