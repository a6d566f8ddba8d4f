package oracle_test

import (
	"strconv"
	"strings"

	"github.com/kgen-dev/kgen/runtime/dsl"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// The Go twins of Topologies.java's joins with tables: "in" is the stream
// (or the left table), "in2" the right table; a joiner writes
// "left/right", "null" for a side with no row, as Java's string
// concatenation writes a null.

// orNull is Java's "" + s: the string, or "null".
func orNull(s *string) string {
	if s == nil {
		return "null"
	}
	return *s
}

// joinTables reads "in" and "in2" as the tables "left" and "right".
func joinTables(t *stream.Topology) (left, right dsl.TableRef) {
	dsl.Table(t, "left", "in", S, S, "left-store", opts)
	dsl.Table(t, "right", "in2", S, S, "right-store", opts)
	return dsl.TableRef{Node: "left", Store: "left-store"}, dsl.TableRef{Node: "right", Store: "right-store"}
}

// joinToOut writes a table join's result to "out": a deletion is a tombstone.
func joinToOut(t *stream.Topology, parent string) {
	dsl.ToStream[string, string](t, "to-stream", parent)
	stream.AddSink(t, "out", "out", S, NS, "to-stream")
}

// foreignKey is Topologies.java's FOREIGN_KEY: a "fk:rest" value's fk,
// none without ':'.
func foreignKey(v string) *string {
	i := strings.IndexByte(v, ':')
	if i < 0 {
		return nil
	}
	fk := v[:i]
	return &fk
}

var fkSerdes = dsl.FKJoinSerdes[string, string, string, string]{LeftKey: S, LeftValue: S, RightKey: S, RightValue: S}

func init() {
	twins := map[string]func(*env) *stream.Topology{
		"join-table-stream-inner": func(*env) *stream.Topology {
			t := stream.NewTopology()
			in(t)
			dsl.Table(t, "table", "in2", S, S, "table-store", opts)
			dsl.StreamTableJoin[string](t, "join", "table-store", func(v, row string) string { return v + "/" + row }, "in")
			stream.AddSink(t, "out", "out", S, S, "join")
			return t
		},
		"join-table-stream-left": func(*env) *stream.Topology {
			t := stream.NewTopology()
			in(t)
			dsl.Table(t, "table", "in2", S, S, "table-store", opts)
			dsl.StreamTableLeftJoin[string](t, "join", "table-store", func(v string, row *string) string { return v + "/" + orNull(row) }, "in")
			stream.AddSink(t, "out", "out", S, S, "join")
			return t
		},
		"join-table-stream-inner-nullable": func(*env) *stream.Topology {
			t := stream.NewTopology()
			inNullable(t)
			dsl.Table(t, "table", "in2", NS, S, "table-store", opts)
			dsl.StreamTableJoin[*string](t, "join", "table-store", func(v *string, row string) string { return orNull(v) + "/" + row }, "in")
			stream.AddSink(t, "out", "out", NS, S, "join")
			return t
		},
		"join-table-stream-left-nullable": func(*env) *stream.Topology {
			t := stream.NewTopology()
			inNullable(t)
			dsl.Table(t, "table", "in2", NS, S, "table-store", opts)
			dsl.StreamTableLeftJoin[*string](t, "join", "table-store", func(v *string, row *string) string { return orNull(v) + "/" + orNull(row) }, "in")
			stream.AddSink(t, "out", "out", NS, S, "join")
			return t
		},
		"join-table-table-inner": func(*env) *stream.Topology {
			t := stream.NewTopology()
			left, right := joinTables(t)
			dsl.TableJoin[string](t, "join", left, right, func(l, r string) string { return l + "/" + r })
			joinToOut(t, "join")
			return t
		},
		"join-fk-inner": func(*env) *stream.Topology {
			t := stream.NewTopology()
			left, right := joinTables(t)
			dsl.ForeignKeyJoin(t, "join", left, right, foreignKey, func(l, r string) string { return l + "/" + r }, fkSerdes)
			joinToOut(t, "join")
			return t
		},
		"join-fk-left": func(*env) *stream.Topology {
			t := stream.NewTopology()
			left, right := joinTables(t)
			dsl.ForeignKeyLeftJoin(t, "join", left, right, foreignKey, func(l string, r *string) string { return l + "/" + orNull(r) }, fkSerdes)
			joinToOut(t, "join")
			return t
		},
		"join-fk-left-count": func(*env) *stream.Topology {
			t := stream.NewTopology()
			left, right := joinTables(t)
			dsl.ForeignKeyLeftJoin(t, "join", left, right, foreignKey, func(l string, r *string) string { return l + "/" + orNull(r) }, fkSerdes)
			joined := dsl.MaterializeTable(t, "joined", "joined-store", S, S, opts, "join")
			dsl.TableGroupBy(t, "group-by", S, func(k, v string) (string, string) { return v[strings.IndexByte(v, '/')+1:], k }, joined.Node)
			stream.AddRepartition(t, "group-by-repartition", S, dsl.Changes[string](S), stream.RepartitionOptions{}, "group-by")
			dsl.TableCount[string, string](t, "count", "count-store", S, opts, "group-by-repartition")
			toLongs(t, "count")
			return t
		},
		"join-table-table-left": func(*env) *stream.Topology {
			t := stream.NewTopology()
			left, right := joinTables(t)
			dsl.TableLeftJoin[string](t, "join", left, right, func(l string, r *string) string { return l + "/" + orNull(r) })
			joinToOut(t, "join")
			return t
		},
		"join-table-table-outer": func(*env) *stream.Topology {
			t := stream.NewTopology()
			left, right := joinTables(t)
			dsl.TableOuterJoin[string](t, "join", left, right, func(l, r *string) string { return orNull(l) + "/" + orNull(r) })
			joinToOut(t, "join")
			return t
		},
		"join-table-table-left-count": func(*env) *stream.Topology {
			t := stream.NewTopology()
			left, right := joinTables(t)
			dsl.TableLeftJoin[string](t, "join", left, right, func(l string, r *string) string { return l + "/" + orNull(r) })
			dsl.TableGroupBy(t, "group-by", S, func(k, v string) (string, string) { return v[strings.IndexByte(v, '/')+1:], k }, "join")
			stream.AddRepartition(t, "group-by-repartition", S, dsl.Changes[string](S), stream.RepartitionOptions{}, "group-by")
			dsl.TableCount[string, string](t, "count", "count-store", S, opts, "group-by-repartition")
			toLongs(t, "count")
			return t
		},
		"join-table-table-materialized": func(*env) *stream.Topology {
			t := stream.NewTopology()
			left, right := joinTables(t)
			dsl.TableJoin[string](t, "join", left, right, func(l, r string) string { return l + "/" + r })
			joined := dsl.MaterializeTable(t, "joined", "joined-store", S, S, opts, "join")
			dsl.ToStream[string, string](t, "to-stream", joined.Node)
			stream.AddSink(t, "out-joined", "out-joined", S, NS, "to-stream")
			stream.AddSource(t, "in3", "in3", S, S)
			dsl.StreamTableJoin[string](t, "enrich", joined.Store, func(v, row string) string { return v + "/" + row }, "in3")
			stream.AddSink(t, "out", "out", S, S, "enrich")
			return t
		},
		"join-table-stream-count": func(*env) *stream.Topology {
			t := stream.NewTopology()
			in(t)
			stream.AddSource(t, "in2", "in2", S, S)
			dsl.Count[string, string](t, "count", "count-store", S, opts, "in2")
			dsl.StreamTableJoin[string](t, "join", "count-store", func(v string, n int64) string { return v + "/" + strconv.FormatInt(n, 10) }, "in")
			stream.AddSink(t, "out", "out", S, S, "join")
			return t
		},
	}
	for name, build := range twins {
		topologies[name] = build
	}
}
