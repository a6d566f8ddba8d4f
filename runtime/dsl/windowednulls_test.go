package dsl_test

import (
	"testing"

	"github.com/kgen-dev/kgen/runtime/dsl"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// Null values in windowed aggregations, as Kafka Streams 4.4 treats them
// (its TopologyTestDriver, the same three records): time and session
// windows count a null value (their aggregators are given it), sliding
// windows drop it; a null key is dropped by all.
func TestWindowedNullValues(t *testing.T) {
	s := serde.String{}
	ns := dsl.Nullable[string](s)
	tw := dsl.TumblingWindows(10 * ms)
	sl := dsl.SlidingWindows(10*ms, 100*ms)
	sess := dsl.SessionWindows(10 * ms)
	for _, c := range []struct {
		name    string
		add     func(*stream.Topology)
		keys    serde.Serde[dsl.Windowed[string]]
		want    []string
		dropped stream.DropReason
	}{
		{"tumbling", func(t *stream.Topology) {
			dsl.WindowedCount[string, *string](t, "count", "counts", tw, s, dsl.WindowOptions{}, "in")
		}, dsl.WindowedKey(s, tw), []string{"a@0/10=1@1", "a@0/10=2@2", "a@0/10=3@3"}, ""},
		{"session", func(t *stream.Topology) {
			dsl.SessionCount[string, *string](t, "count", "counts", sess, s, dsl.WindowOptions{}, "in")
		}, dsl.SessionKey(s), []string{"a@1/1=1@1", "a@1/1=-@1", "a@1/2=2@2", "a@1/2=-@2", "a@1/3=3@3"}, ""},
		{"sliding", func(t *stream.Topology) {
			dsl.WindowedCount[string, *string](t, "count", "counts", sl, s, dsl.WindowOptions{}, "in")
		}, dsl.WindowedKey(s, sl), []string{"a@-8/2=1@2"}, stream.DropNullValue},
	} {
		t.Run(c.name, func(t *testing.T) {
			topo := stream.NewTopology()
			stream.AddSource(topo, "in", "in", s, ns)
			c.add(topo)
			dsl.ToStream[dsl.Windowed[string], int64](topo, "updates", "count")
			stream.AddSink(topo, "out", "out", c.keys, dsl.Nullable[int64](serde.Int64{}), "updates")
			d := driver(t, topo, 2)
			pipe(t, d, "in", "a", "\x00", 1)
			pipe(t, d, "in", "a", "x", 2)
			pipe(t, d, "in", "a", "\x00", 3)
			same(t, "output", windowedOut(t, d, c.keys), c.want)
			if c.dropped != "" {
				if got := d.Dropped()[c.dropped]; got != 2 {
					t.Errorf("dropped as %s: %d, want 2", c.dropped, got)
				}
			}
		})
	}
}
