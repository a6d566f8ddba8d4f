package dsl_test

import (
	"testing"
	"time"

	"github.com/kgen-dev/kgen/runtime/dsl"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// A grouped stream's aggregations drop a record with a nil value, as Kafka
// Streams drops a null value (oracle case count-null-value-nullable): the
// aggregate does not change, nothing is emitted, and the aggregate's
// timestamp does not move.
func TestAggregationsDropNilValues(t *testing.T) {
	s, l := serde.String{}, serde.Int64{}
	topo := stream.NewTopology()
	stream.AddSource(topo, "in", "in", s, dsl.Nullable[string](s))
	stream.AddSource(topo, "bytes", "bytes", s, serde.Bytes{})
	opts := stream.StoreOptions{Changelog: true}
	dsl.Count[string, *string](topo, "count", "count-store", s, opts, "in")
	dsl.Reduce(topo, "reduce", "reduce-store", s, dsl.Nullable[string](s), opts,
		func(agg, v *string) *string { r := *agg + *v; return &r }, "in")
	dsl.Aggregate(topo, "aggregate", "aggregate-store", s, l, opts,
		func() int64 { return 100 }, func(_ string, v []byte, agg int64) int64 { return agg + int64(len(v)) }, "bytes")
	for _, n := range []string{"count", "aggregate"} {
		dsl.MapValues(topo, n+"-new", func(_ string, ch dsl.Change[int64]) int64 { return *ch.New }, n)
	}
	dsl.MapValues(topo, "reduce-new", func(_ string, ch dsl.Change[*string]) string { return **ch.New }, "reduce")
	stream.AddSink(topo, "count-out", "count-out", s, l, "count-new")
	stream.AddSink(topo, "aggregate-out", "aggregate-out", s, l, "aggregate-new")
	stream.AddSink(topo, "reduce-out", "reduce-out", s, s, "reduce-new")
	d := driver(t, topo, 1)
	pipe(t, d, "in", "a", "x", 1)
	pipe(t, d, "in", "a", "\x00", 5)
	pipe(t, d, "in", "b", "\x00", 6)
	pipe(t, d, "in", "a", "", 3) // an empty value is a value
	pipe(t, d, "bytes", "a", "xy", 1)
	pipe(t, d, "bytes", "a", "\x00", 5)
	pipe(t, d, "bytes", "a", "z", 2)
	same(t, "count", render(d.Output("count-out"), long), []string{"a=1@1", "a=2@3"})
	same(t, "reduce", render(d.Output("reduce-out"), text), []string{"a=x@1", "a=x@3"})
	same(t, "aggregate", render(d.Output("aggregate-out"), long), []string{"a=102@1", "a=103@2"})
}

// A nil aggregate deletes the key's aggregate, as Kafka Streams' null does
// (oracle cases reduce-delete and table-reduce-delete): a tombstone goes out,
// and the key's next record starts afresh, with its own timestamp. Before,
// the nil was stored, and the next record failed to decode it (a stream
// reduce) or the subtraction handed it to the adder (a table reduce).
func TestNilAggregateDeletes(t *testing.T) {
	s, l := serde.String{}, dsl.Nullable[int64](serde.Int64{})
	opts := stream.StoreOptions{Changelog: true}
	sum := func(agg, v *int64) *int64 { r := *agg + *v; return &r }
	zeroIsNil := func(r int64) *int64 {
		if r == 0 {
			return nil
		}
		return &r
	}
	show := func(b []byte) string { return long(b) }

	topo := stream.NewTopology()
	stream.AddSource(topo, "in", "in", s, l)
	dsl.Reduce(topo, "reduce", "reduce-store", s, l, opts, func(agg, v *int64) *int64 { return zeroIsNil(*agg + *v) }, "in")
	dsl.ToStream[string, *int64](topo, "to-stream", "reduce")
	stream.AddSink(topo, "out", "out", s, dsl.Nullable(l), "to-stream")
	d := driver(t, topo, 1)
	for _, r := range []struct {
		v  int64
		at time.Duration
	}{{5, 5}, {-5, 2}, {3, 1}, {4, 3}} {
		b, _ := serde.Int64{}.Serialize(r.v)
		if err := d.Pipe("in", []byte("a"), b, nil, t0.Add(r.at*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	}
	same(t, "reduce", render(d.Output("out"), show), []string{"a=5@5", "a=-@5", "a=3@1", "a=7@3"})

	topo = stream.NewTopology()
	dsl.Table(topo, "table", "in", s, l, "table-store", opts)
	dsl.TableGroupBy(topo, "group-by", s, func(k string, v *int64) (string, *int64) { return "g", v }, "table")
	stream.AddRepartition(topo, "group-by-repartition", s, dsl.Changes(l), stream.RepartitionOptions{}, "group-by")
	dsl.TableReduce(topo, "reduce", "reduce-store", s, l, opts, sum,
		func(agg, v *int64) *int64 { return zeroIsNil(*agg - *v) }, "group-by-repartition")
	dsl.ToStream[string, *int64](topo, "to-stream", "reduce")
	stream.AddSink(topo, "out", "out", s, dsl.Nullable(l), "to-stream")
	d = driver(t, topo, 1)
	for _, r := range []struct {
		k  string
		v  int64 // 0: a tombstone
		at time.Duration
	}{{"a", 4, 5}, {"a", 6, 1}, {"a", 0, 2}, {"b", 2, 4}} {
		var b []byte
		if r.v != 0 {
			b, _ = serde.Int64{}.Serialize(r.v)
		}
		if err := d.Pipe("in", []byte(r.k), b, nil, t0.Add(r.at*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	}
	// a=6 replaces a=4: 4-4 leaves no aggregate, so 6 starts it afresh.
	same(t, "table reduce", render(d.Output("out"), show), []string{"g=4@5", "g=6@5", "g=-@5", "g=2@4"})
}

// The nil test of every kind that has nil tells nil from every other value,
// an empty slice and a nil pointer inside an interface among them.
func TestNilTestOfEveryKind(t *testing.T) {
	var nilPtr *int
	one := 1
	check := func(kind string, isNil func() (bool, bool), want bool) {
		t.Helper()
		got, ok := isNil()
		if !ok {
			t.Errorf("%s: no nil test", kind)
		} else if got != want {
			t.Errorf("%s: nil test says %v, want %v", kind, got, want)
		}
	}
	check("nil pointer", func() (bool, bool) { f := dsl.NilTest[*int](); return f != nil && f(nilPtr), f != nil }, true)
	check("pointer", func() (bool, bool) { f := dsl.NilTest[*int](); return f != nil && f(&one), f != nil }, false)
	check("nil slice", func() (bool, bool) { f := dsl.NilTest[[]byte](); return f != nil && f(nil), f != nil }, true)
	check("empty slice", func() (bool, bool) { f := dsl.NilTest[[]byte](); return f != nil && f([]byte{}), f != nil }, false)
	check("nil map", func() (bool, bool) { f := dsl.NilTest[map[string]int](); return f != nil && f(nil), f != nil }, true)
	check("map", func() (bool, bool) {
		f := dsl.NilTest[map[string]int]()
		return f != nil && f(map[string]int{}), f != nil
	}, false)
	check("nil interface", func() (bool, bool) { f := dsl.NilTest[any](); return f != nil && f(nil), f != nil }, true)
	check("interface holding a nil pointer", func() (bool, bool) { f := dsl.NilTest[any](); return f != nil && f(nilPtr), f != nil }, false)
	if dsl.NilTest[int64]() != nil || dsl.NilTest[string]() != nil || dsl.NilTest[struct{ P *int }]() != nil {
		t.Error("a type without nil values got a nil test")
	}
}
