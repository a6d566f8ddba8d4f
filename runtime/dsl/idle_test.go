package dsl_test

import (
	"testing"
	"time"

	"github.com/kgen-dev/kgen/runtime/dsl"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// Final results need stream time to move: an input that goes quiet emits
// nothing, whatever the wall clock does, unless IdleClose lets the wall
// clock move the operator's stream time once it has been idle that long;
// a record that arrives afterwards for a window it closed is late.
func TestIdleClose(t *testing.T) {
	w := dsl.TumblingWindows(10 * ms).Grace(5 * ms)
	keys := dsl.WindowedKey(serde.String{}, w)
	build := func(idle time.Duration, suppress bool) *stream.Topology {
		return windowedTopo(func(topo *stream.Topology) (string, serde.Serde[dsl.Windowed[string]]) {
			if suppress {
				dsl.WindowedCount[string, string](topo, "count", "counts", w, serde.String{}, dsl.WindowOptions{}, "in")
				dsl.SuppressUntilWindowCloses(topo, "final", "buffer", w, keys, serde.Int64{}, dsl.SuppressOptions{IdleClose: idle}, "count")
				return "final", keys
			}
			opts := dsl.WindowOptions{Emit: dsl.EmitFinal, IdleClose: idle}
			dsl.WindowedCount[string, string](topo, "count", "counts", w, serde.String{}, opts, "in")
			return "count", keys
		})
	}
	for _, c := range []struct {
		name     string
		suppress bool
	}{{"emit final", false}, {"suppress", true}} {
		t.Run(c.name, func(t *testing.T) {
			quiet := driver(t, build(0, c.suppress), 2)
			pipeAll(t, quiet, []in{{"a", 1}, {"a", 3}})
			if err := quiet.AdvanceWallClock(time.Hour); err != nil {
				t.Fatal(err)
			}
			same(t, "without idle close", windowedOut(t, quiet, keys), []string{})

			d := driver(t, build(time.Second, c.suppress), 2)
			pipeAll(t, d, []in{{"a", 1}, {"a", 3}})
			// The clock notices the stream time at its first tick, and moves
			// it once a whole second passed without a record.
			for range 2 {
				if err := d.AdvanceWallClock(500 * time.Millisecond); err != nil {
					t.Fatal(err)
				}
			}
			same(t, "idle less than a second", windowedOut(t, d, keys), []string{})
			if err := d.AdvanceWallClock(500 * time.Millisecond); err != nil {
				t.Fatal(err)
			}
			same(t, "idle a second", windowedOut(t, d, keys), []string{"a@0/10=2@3"})
			pipeAll(t, d, []in{{"a", 4}})
			same(t, "a late record", windowedOut(t, d, keys), []string{})
			if got := d.Dropped()[stream.DropLateRecord]; got != 1 {
				t.Errorf("late records dropped after the wall clock closed the window: %d, want 1", got)
			}
		})
	}
}
