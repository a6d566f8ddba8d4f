package oracle_test

import (
	"time"

	"github.com/kgen-dev/kgen/runtime/dsl"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// The Go twin of Topologies.java's versioned-table: a table over a
// versioned store of 100 ms history, whose toStream emits in-order and
// out-of-order updates alike, as Kafka Streams' does.
func init() {
	topologies["versioned-table"] = func(*env) *stream.Topology {
		t := stream.NewTopology()
		dsl.VersionedTable(t, "table", "in", S, S, "vt", 100*time.Millisecond, opts)
		dsl.ToStream[string, string](t, "to-stream", "table")
		stream.AddSink(t, "out", "out", S, NS, "to-stream")
		return t
	}
}
