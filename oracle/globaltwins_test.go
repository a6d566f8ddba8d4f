package oracle_test

import (
	"github.com/kgen-dev/kgen/runtime/dsl"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// globalJoinMapper is the key mapper of the global-join topologies: the
// stream value names the table's key, and "none" maps to a null key.
func globalJoinMapper(_ *string, v *string) (string, bool) {
	if v == nil || *v == "none" {
		return "", false
	}
	return *v, true
}

// The stream–global table joins: twins of Topologies.java's
// global-join-nullable and global-leftJoin-nullable. The stream reads keys
// and values that may be null; the global table "table" is read with
// String serdes (its null keys are dropped, its null values delete).
func init() {
	topologies["global-join-nullable"] = func(*env) *stream.Topology {
		t := stream.NewTopology()
		table := dsl.NewGlobalTable(t, "table", "table", S, S, stream.StoreOptions{})
		inNullable(t)
		dsl.JoinGlobal(t, "join", table, globalJoinMapper, func(_ *string, v *string, row string) *string {
			return ptr(javaString(v) + ":" + row)
		}, "in")
		stream.AddSink(t, "out", "out", NS, NS, "join")
		return t
	}
	topologies["global-leftJoin-nullable"] = func(*env) *stream.Topology {
		t := stream.NewTopology()
		table := dsl.NewGlobalTable(t, "table", "table", S, S, stream.StoreOptions{})
		inNullable(t)
		dsl.LeftJoinGlobal(t, "join", table, globalJoinMapper, func(_ *string, v *string, row *string) *string {
			r := "-"
			if row != nil {
				r = *row
			}
			return ptr(javaString(v) + ":" + r)
		}, "in")
		stream.AddSink(t, "out", "out", NS, NS, "join")
		return t
	}
}
