package oracle_test

import (
	"github.com/kgen-dev/kgen/runtime/dsl"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// The Go twins of Topologies.java's joins of a re-keyed stream: a selectKey
// (the value's first character) before the join, where Kafka Streams
// inserts a repartition topic by itself and the twin adds it, with the
// partition count of the side it joins (LikeReaders).
func init() {
	topologies["join-ss-rekeyed"] = func(*env) *stream.Topology {
		t := stream.NewTopology()
		stream.AddSource(t, "left", "left", S, S)
		stream.AddSource(t, "right", "right", S, S)
		dsl.SelectKey(t, "select-key", func(_, v string) string { return first(v) }, "left")
		stream.AddRepartition(t, "join-left", S, S, stream.RepartitionOptions{LikeReaders: true, Source: "join-left-repartition-source"}, "select-key")
		dsl.JoinStreams(t, "join", joinSS, S, S, S, joinSSOpts, func(_ string, l, r string) string { return l + "|" + r }, "join-left-repartition-source", "right")
		stream.AddSink(t, "out", "out", S, S, "join")
		return t
	}
	topologies["join-table-stream-rekeyed"] = func(*env) *stream.Topology {
		t := stream.NewTopology()
		in(t)
		dsl.SelectKey(t, "select-key", func(_, v string) string { return first(v) }, "in")
		stream.AddRepartition(t, "join", S, S, stream.RepartitionOptions{LikeReaders: true, Source: "join-repartition-source"}, "select-key")
		dsl.Table(t, "table", "in2", S, S, "table-store", opts)
		dsl.StreamTableJoin[string](t, "join", "table-store", func(v, row string) string { return v + "/" + row }, "join-repartition-source")
		stream.AddSink(t, "out", "out", S, S, "join")
		return t
	}
}
