package dsl_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/runtime/dsl"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/stream"
)

func slidingTopo(w dsl.SlidingWindowSpec, opts dsl.WindowOptions) (*stream.Topology, serde.Serde[dsl.Windowed[string]]) {
	keys := dsl.WindowedKey(serde.String{}, w)
	return windowedTopo(func(topo *stream.Topology) (string, serde.Serde[dsl.Windowed[string]]) {
		dsl.WindowedCount[string, string](topo, "count", "counts", w, serde.String{}, opts, "in")
		return "count", keys
	}), keys
}

// Sliding windows (KIP-450), record by record: a record makes its left
// window from the one before it, the right window of the record before it
// when it lies in it, and its own right window when a later record is
// already there; an out-of-order record updates the windows it lies in.
// Windows are inclusive at both ends, and forwarded in Kafka Streams' order
// (the windows it updates by descending start, then the new ones): Kafka
// Streams 4.4's TopologyTestDriver gives these records for this input.
func TestSlidingWindows(t *testing.T) {
	w := dsl.SlidingWindows(10*ms, 100*ms)
	topo, keys := slidingTopo(w, dsl.WindowOptions{})
	d := driver(t, topo, 2)
	pipeAll(t, d, []in{{"a", 20}, {"a", 25}, {"a", 40}, {"a", 22}, {"a", 30}})
	same(t, "output", windowedOut(t, d, keys), []string{
		"a@10/20=1@20",
		"a@21/31=1@25", "a@15/25=2@25", // 25: the right window of 20, its own left window
		"a@30/40=1@40",                                                 // 40: nothing within 10 before it
		"a@21/31=2@25", "a@15/25=3@25", "a@12/22=2@22", "a@23/33=1@25", // 22, late but within grace
		// 30: updates the windows it lies in, makes the right window of 25
		// (now holding 30), its left window [20,30] (20, 22, 25, 30) and its
		// right window (40)
		"a@30/40=2@40", "a@23/33=2@30", "a@21/31=3@30", "a@26/36=1@30", "a@20/30=4@30", "a@31/41=1@40",
	})
}

// Records earlier than the time difference share the window [0, d]: here
// at the epoch itself, where a window cannot start before 0. The records
// are those of Kafka Streams 4.4's TopologyTestDriver for this input.
func TestSlidingWindowsEarlyRecords(t *testing.T) {
	s := serde.String{}
	w := dsl.SlidingWindows(10*ms, 100*ms)
	keys := dsl.WindowedKey(s, w)
	topo := windowedTopo(func(topo *stream.Topology) (string, serde.Serde[dsl.Windowed[string]]) {
		dsl.WindowedCount[string, string](topo, "count", "counts", w, s, dsl.WindowOptions{}, "in")
		return "count", keys
	})
	d := driver(t, topo, 1)
	for _, at := range []int64{3, 5, 1} {
		if err := d.Pipe("in", []byte("a"), []byte("x"), nil, time.UnixMilli(at)); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, r := range d.Output("out") {
		k, _ := keys.Deserialize(r.Key)
		got = append(got, fmt.Sprintf("%d/%d=%s@%d", k.Start, k.End, long(r.Value), r.Timestamp.UnixMilli()))
	}
	same(t, "output", got, []string{
		"0/10=1@3",
		"4/14=1@5", "0/10=2@5", // 5: the right window of 3
		"2/12=2@5", "0/10=3@5", // 1: its right window holds 3 and 5
	})
}

// Property: whatever the order of the records (all within grace), every
// window the store keeps holds exactly the count of the records between its
// start and end, both inclusive, and every record's left window exists.
func TestSlidingWindowsProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 60 {
		diff := 1 + rng.Int64N(20)
		w := dsl.SlidingWindows(time.Duration(diff)*ms, time.Hour)
		topo, _ := slidingTopo(w, dsl.WindowOptions{})
		d, err := stream.NewLocalDriver(topo, stream.LocalConfig{AppID: "dsl"})
		if err != nil {
			t.Fatal(err)
		}
		var times []int64
		for range 1 + rng.IntN(25) {
			at := 30 + rng.Int64N(100)
			times = append(times, at)
			pipe(t, d, "in", "a", "x", time.Duration(at))
		}
		ws := d.Store("counts").(state.WindowStore[string, state.ValueAndTimestamp[int64]])
		it, err := ws.All()
		if err != nil {
			t.Fatal(err)
		}
		starts := map[int64]bool{}
		for it.Next() {
			start := it.Start() - base
			n := int64(0)
			for _, at := range times {
				if start <= at && at <= start+diff {
					n++
				}
			}
			if it.Value().Value != n {
				t.Errorf("round %d, diff %d, records %v: window [%d,%d] counts %d, holds %d", round, diff, times, start, start+diff, it.Value().Value, n)
			}
			starts[start] = true
		}
		it.Close()
		for _, at := range times {
			if !starts[at-diff] {
				t.Errorf("round %d, diff %d, records %v: no left window for %d", round, diff, times, at)
			}
		}
		d.Close()
		if t.Failed() {
			slices.Sort(times)
			t.Fatalf("sorted records: %v", times)
		}
	}
}

// Sliding windows with EmitFinal: each window once, when the stream time
// passes its (inclusive) end plus grace, by start.
func TestSlidingWindowsFinal(t *testing.T) {
	topo, keys := slidingTopo(dsl.SlidingWindows(10*ms, 0), dsl.WindowOptions{Emit: dsl.EmitFinal})
	d := driver(t, topo, 2)
	pipeAll(t, d, []in{{"a", 20}, {"a", 25}, {"a", 40}, {"a", 50}})
	// at 50, [40,50] is still open (its end is not before 50); [30,40] is
	// closed (40 < 50)
	same(t, "output", windowedOut(t, d, keys), []string{"a@10/20=1@20", "a@15/25=2@25", "a@21/31=1@25", "a@30/40=1@40"})
	pipeAll(t, d, []in{{"a", 51}})
	same(t, "output after 51", windowedOut(t, d, keys), []string{"a@40/50=2@50"}) // Output returns what is new
}
