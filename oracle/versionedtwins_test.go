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

// The Go twins of Topologies.java's verjoin-*: a stream joined with a
// versioned table of 10 s history. Without a grace period the plain
// StreamTableJoin reads the row as of each record's time, since the table's
// store is versioned; with one, StreamTableJoinWith buffers the records 2 s.
func init() {
	versioned := func(t *stream.Topology) {
		in(t)
		dsl.VersionedTable(t, "table", "in2", S, S, "vt", 10*time.Second, opts)
	}
	// The left joins read keys that may be null, which they join with no
	// row (KIP-962).
	versionedNullKeys := func(t *stream.Topology) {
		stream.AddSource(t, "in", "in", NS, S)
		dsl.VersionedTable(t, "table", "in2", NS, S, "vt", 10*time.Second, opts)
	}
	inner := func(v, row string) string { return v + "/" + row }
	left := func(v string, row *string) string { return v + "/" + orNull(row) }
	grace := dsl.StreamTableJoinOptions{Grace: 2 * time.Second, Store: opts}
	topologies["verjoin-inner"] = func(*env) *stream.Topology {
		t := stream.NewTopology()
		versioned(t)
		dsl.StreamTableJoin[string](t, "join", "vt", inner, "in")
		stream.AddSink(t, "out", "out", S, S, "join")
		return t
	}
	topologies["verjoin-left"] = func(*env) *stream.Topology {
		t := stream.NewTopology()
		versionedNullKeys(t)
		dsl.StreamTableLeftJoin[*string](t, "join", "vt", left, "in")
		stream.AddSink(t, "out", "out", NS, S, "join")
		return t
	}
	topologies["verjoin-inner-grace"] = func(*env) *stream.Topology {
		t := stream.NewTopology()
		versioned(t)
		dsl.StreamTableJoinWith(t, "join", "vt", S, S, grace, func(_, v, row string) string { return inner(v, row) }, "in")
		stream.AddSink(t, "out", "out", S, S, "join")
		return t
	}
	topologies["verjoin-left-grace"] = func(*env) *stream.Topology {
		t := stream.NewTopology()
		versionedNullKeys(t)
		dsl.StreamTableLeftJoinWith(t, "join", "vt", NS, S, grace, func(_ *string, v string, row *string) string { return left(v, row) }, "in")
		stream.AddSink(t, "out", "out", NS, S, "join")
		return t
	}
	notGenerated = append(notGenerated, "verjoin-inner", "verjoin-left", "verjoin-inner-grace", "verjoin-left-grace")
}
