package dsl_test

import (
	"testing"

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
