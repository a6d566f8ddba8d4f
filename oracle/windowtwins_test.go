package oracle_test

import (
	"time"

	"github.com/kgen-dev/kgen/runtime/dsl"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// The Go twins of Topologies.java's windowed topologies, with the same
// windows: every time window is 10 s long (TW10 reads them all).
var (
	tumbling      = dsl.TumblingWindows(10 * time.Second)
	tumblingGrace = dsl.TumblingWindows(10 * time.Second).Grace(5 * time.Second)
	tumblingG2    = dsl.TumblingWindows(10 * time.Second).Grace(2 * time.Second)
	hopping       = dsl.HoppingWindows(10*time.Second, 5*time.Second)
	slidingW      = dsl.SlidingWindows(10*time.Second, 5*time.Second)
	sessionW      = dsl.SessionWindows(5 * time.Second).Grace(10 * time.Second)
	sessionG2     = dsl.SessionWindows(5 * time.Second).Grace(2 * time.Second)
	tw10          = serde.TimeWindowed[string](S, 10*time.Second)
	sw            = serde.SessionWindowed[string](S)
	windowOpts    = dsl.WindowOptions{Store: opts}
	finalOpts     = dsl.WindowOptions{Store: opts, Emit: dsl.EmitFinal}
)

// toWindowedLongs ends a windowed aggregation: toStream().to(topic,
// Produced.with(keys, Long)), partitioned by the key alone as Kafka
// Streams partitions windowed keys.
func toWindowedLongs(t *stream.Topology, parent, topic string, keys serde.Serde[dsl.Windowed[string]]) {
	dsl.ToStream[dsl.Windowed[string], int64](t, parent+"-to-stream", parent)
	stream.AddSinkWith(t, topic, topic, keys, dsl.Nullable[int64](L), stream.SinkConfig[dsl.Windowed[string], *int64]{
		Partitioner: dsl.WindowedPartitioner[string, *int64](S),
	}, parent+"-to-stream")
}

func windowCount(w dsl.Windows, o dsl.WindowOptions) func(*env) *stream.Topology {
	return func(*env) *stream.Topology {
		t := stream.NewTopology()
		in(t)
		dsl.WindowedCount[string, string](t, "count", "count-store", w, S, o, "in")
		toWindowedLongs(t, "count", "out", tw10)
		return t
	}
}

func sessionCount(w dsl.SessionWindowSpec, o dsl.WindowOptions) func(*env) *stream.Topology {
	return func(*env) *stream.Topology {
		t := stream.NewTopology()
		in(t)
		dsl.SessionCount[string, string](t, "count", "count-store", w, S, o, "in")
		toWindowedLongs(t, "count", "out", sw)
		return t
	}
}

func init() {
	twins := map[string]func(*env) *stream.Topology{
		"tumbling-count":       windowCount(tumbling, windowOpts),
		"tumbling-grace-count": windowCount(tumblingGrace, windowOpts),
		"hopping-count":        windowCount(hopping, windowOpts),
		"sliding-count":        windowCount(slidingW, windowOpts),
		"session-count":        sessionCount(sessionW, windowOpts),
		"tumbling-emit-final":  windowCount(tumblingG2, finalOpts),
		"session-emit-final":   sessionCount(sessionG2, finalOpts),
		"tumbling-reduce": func(*env) *stream.Topology {
			t := stream.NewTopology()
			inLong(t)
			dsl.WindowedReduce(t, "reduce", "reduce-store", tumbling, S, L, windowOpts, func(a, v int64) int64 { return a + v }, "in")
			toWindowedLongs(t, "reduce", "out", tw10)
			return t
		},
		"tumbling-aggregate": func(*env) *stream.Topology {
			t := stream.NewTopology()
			in(t)
			dsl.WindowedAggregate(t, "aggregate", "aggregate-store", tumbling, S, L, windowOpts,
				func() int64 { return 100 }, func(_, v string, agg int64) int64 { return agg + int64(len(v)) }, "in")
			toWindowedLongs(t, "aggregate", "out", tw10)
			return t
		},
		"session-reduce": func(*env) *stream.Topology {
			t := stream.NewTopology()
			inLong(t)
			dsl.SessionReduce(t, "reduce", "reduce-store", sessionW, S, L, windowOpts, func(a, v int64) int64 { return a + v }, "in")
			toWindowedLongs(t, "reduce", "out", sw)
			return t
		},
		"session-aggregate": func(*env) *stream.Topology {
			t := stream.NewTopology()
			in(t)
			dsl.SessionAggregate(t, "aggregate", "aggregate-store", sessionW, S, L, windowOpts,
				func() int64 { return 100 }, func(_, v string, agg int64) int64 { return agg + int64(len(v)) },
				func(_ string, a, b int64) int64 { return a + b }, "in")
			toWindowedLongs(t, "aggregate", "out", sw)
			return t
		},
		"tumbling-suppress": func(*env) *stream.Topology {
			t := stream.NewTopology()
			in(t)
			dsl.WindowedCount[string, string](t, "count", "count-store", tumblingG2, S, windowOpts, "in")
			dsl.SuppressUntilWindowCloses(t, "suppress", "suppress-store", tumblingG2, tw10, L, dsl.SuppressOptions{Store: opts}, "count")
			toWindowedLongs(t, "suppress", "out", tw10)
			return t
		},
		// kgen's emit final emits the window Kafka Streams' loses (the case
		// says so): the same windows as suppress.
		"emit-final-vs-suppress": func(*env) *stream.Topology {
			t := stream.NewTopology()
			in(t)
			dsl.WindowedCount[string, string](t, "final", "final-store", tumbling, S, finalOpts, "in")
			toWindowedLongs(t, "final", "out-final", tw10)
			dsl.WindowedCount[string, string](t, "count", "count-store", tumbling, S, windowOpts, "in")
			dsl.SuppressUntilWindowCloses(t, "suppress", "suppress-store", tumbling, tw10, L, dsl.SuppressOptions{Store: opts}, "count")
			toWindowedLongs(t, "suppress", "out-suppress", tw10)
			return t
		},
	}
	for name, build := range twins {
		topologies[name] = build
	}
}
