package streamtest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kgen-dev/kgen/runtime/dsl"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/kgen-dev/kgen/runtime/streamtest"
)

// Null keys and tombstones are piped typed, on any topic, with several
// partitions: a topic read with a nullable serde hands them on, one read
// with serde.String drops them (counted by reason), a table deletes on a
// tombstone, and Read refuses to make a null into a zero value.
func TestPipeNulls(t *testing.T) {
	s, l := serde.String{}, serde.Int64{}
	ns := dsl.Nullable[string](s)
	topo := stream.NewTopology()
	// "events": nullable key and value, passed through mapValues.
	stream.AddSource(topo, "events", "events", ns, ns)
	dsl.MapValues(topo, "describe", func(k, v *string) string {
		show := func(p *string) string {
			if p == nil {
				return "null"
			}
			return *p
		}
		return show(k) + "=" + show(v)
	}, "events")
	stream.AddSink(topo, "described", "described", ns, s, "describe")
	// "counts": plain strings, so the source drops nulls before the count.
	stream.AddSource(topo, "words", "words", s, s)
	dsl.Count[string, string](topo, "count", "count-store", s, stream.StoreOptions{}, "words")
	// "prices": a table; a tombstone deletes.
	dsl.Table(topo, "prices", "prices", s, l, "price-store", stream.StoreOptions{})
	dsl.ToStream[string, int64](topo, "price-updates", "prices")
	stream.AddSink(topo, "price-out", "price-out", s, dsl.Nullable[int64](l), "price-updates")

	d, err := streamtest.New(topo, streamtest.Config{Partitions: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ts := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	x := "x"
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(streamtest.PipeNullKey(d, "events", ns, &x, ts))
	must(streamtest.PipeTombstone(d, "events", ns, &x, ts))
	must(d.PipeNulls("events", ts))
	must(streamtest.PipeNullKey(d, "words", s, "w", ts))
	must(streamtest.PipeTombstone(d, "words", s, "w", ts))
	must(d.PipeNulls("words", ts))
	must(streamtest.Pipe(d, "words", s, s, "w", "w", ts))
	must(streamtest.Pipe(d, "prices", s, l, "apple", 3, ts))
	must(streamtest.PipeTombstone(d, "prices", s, "apple", ts))
	must(streamtest.PipeNullKey(d, "prices", l, 5, ts))

	got, err := streamtest.Read(d, "described", ns, s)
	must(err)
	var described []string
	for _, r := range got {
		described = append(described, r.Value)
		if (r.Key == nil) != strings.HasPrefix(r.Value, "null=") {
			t.Errorf("record %q read with key %v", r.Value, r.Key)
		}
	}
	if diff := cmp.Diff([]string{"null=x", "x=null", "null=null"}, described); diff != "" {
		t.Errorf("described (-want +got):\n%s", diff)
	}
	prices, err := streamtest.Read(d, "price-out", s, dsl.Nullable[int64](l))
	must(err)
	if len(prices) != 2 || prices[0].Value == nil || *prices[0].Value != 3 || prices[1].Value != nil {
		t.Errorf("price updates %v, want apple=3 then its deletion", prices)
	}
	want := map[stream.DropReason]uint64{stream.DropNullKey: 3, stream.DropNullValue: 1}
	if diff := cmp.Diff(want, d.Dropped()); diff != "" {
		t.Errorf("dropped (-want +got):\n%s", diff)
	}

	// Read with serdes that cannot say null: an error naming the record.
	must(streamtest.PipeNullKey(d, "events", ns, &x, ts))
	if _, err := streamtest.Read(d, "described", s, s); err == nil || !strings.Contains(err.Error(), "null key") || !strings.Contains(err.Error(), "described/") {
		t.Errorf("reading a null key as a string: %v, want an error naming the record", err)
	}
}
