package dsl_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kgen-dev/kgen/runtime/dsl"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/stream"
)

func str(s string) *string { return &s }

// nullDriver runs topo on partitions partitions, logging at debug level
// into the returned buffer.
func nullDriver(t *testing.T, topo *stream.Topology, partitions int32) (*stream.LocalDriver, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	d, err := stream.NewLocalDriver(topo, stream.LocalConfig{
		Partitions: partitions, Logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, &buf
}

func pipeBytes(t *testing.T, d *stream.LocalDriver, topic string, k, v []byte) {
	t.Helper()
	if err := d.Pipe(topic, k, v, nil, t0); err != nil {
		t.Fatal(err)
	}
}

// Aggregations of a nullable stream drop a nil key and a nil value, as
// Kafka Streams does, and count each drop by reason, with a debug line
// naming the node and the record; the source, which can say null, drops
// nothing and warns of nothing.
func TestAggregationsDropNulls(t *testing.T) {
	ns := dsl.Nullable[string](serde.String{})
	for _, parts := range []int32{1, 4} {
		topo := stream.NewTopology()
		stream.AddSource(topo, "in", "in", ns, ns)
		dsl.Count[*string, *string](topo, "count", "count-store", ns, stream.StoreOptions{}, "in")
		dsl.ToStream[*string, int64](topo, "updates", "count")
		stream.AddSink(topo, "out", "out", ns, dsl.Nullable[int64](serde.Int64{}), "updates")
		d, buf := nullDriver(t, topo, parts)
		for _, r := range []struct{ k, v []byte }{{nil, []byte("x")}, {[]byte("a"), nil}, {[]byte("a"), []byte("")}, {nil, nil}, {[]byte(""), []byte("y")}} {
			pipeBytes(t, d, "in", r.k, r.v)
		}
		same(t, "count", render(d.Output("out"), long), []string{"a=1@0", "=1@0"})
		want := map[stream.DropReason]uint64{stream.DropNullKey: 2, stream.DropNullValue: 1}
		if diff := cmp.Diff(want, d.Dropped()); diff != "" {
			t.Errorf("%d partitions: dropped (-want +got):\n%s", parts, diff)
		}
		var drops []string
		for _, l := range strings.Split(buf.String(), "\n") {
			if strings.Contains(l, "dropping record") {
				drops = append(drops, l)
			}
		}
		if len(drops) != 3 || !strings.Contains(drops[0], "node=count") || !strings.Contains(drops[0], "topic=in") {
			t.Errorf("%d partitions: debug lines for drops %q, want 3 naming node count and topic in", parts, drops)
		}
		if strings.Contains(buf.String(), "level=WARN") {
			t.Errorf("%d partitions: a nullable source warned:\n%s", parts, buf.String())
		}
	}
}

// A table with a nilable key drops a nil key (Kafka Streams' table source
// does), and a nil value deletes its row.
func TestTableDropsNullKey(t *testing.T) {
	ns := dsl.Nullable[string](serde.String{})
	topo := stream.NewTopology()
	dsl.Table(topo, "table", "in", ns, serde.String{}, "table-store", stream.StoreOptions{})
	dsl.ToStream[*string, string](topo, "updates", "table")
	stream.AddSink(topo, "out", "out", ns, ns, "updates")
	d, _ := nullDriver(t, topo, 2)
	pipeBytes(t, d, "in", []byte("a"), []byte("1"))
	pipeBytes(t, d, "in", nil, []byte("2"))
	pipeBytes(t, d, "in", []byte("a"), nil)
	same(t, "table", render(d.Output("out"), text), []string{"a=1@0", "a=-@0"})
	if diff := cmp.Diff(map[stream.DropReason]uint64{stream.DropNullKey: 1}, d.Dropped()); diff != "" {
		t.Errorf("dropped (-want +got):\n%s", diff)
	}
}

// TableGroupBy leaves out a half whose group key or value is nil, as Kafka
// Streams leaves out a null, and a record with no half left is counted as
// dropped.
func TestTableGroupByLeavesOutNulls(t *testing.T) {
	s := serde.String{}
	ns := dsl.Nullable[string](s)
	topo := stream.NewTopology()
	dsl.Table(topo, "table", "in", s, s, "table-store", stream.StoreOptions{})
	// "-" groups under no key, "?" has no value: both are left out.
	dsl.TableGroupBy(topo, "group-by", ns, func(k, v string) (*string, *string) {
		switch v {
		case "-":
			return nil, &k
		case "?":
			return &v, nil
		}
		return &v, &k
	}, "table")
	stream.AddRepartition(topo, "group-by-repartition", ns, dsl.Changes(ns), stream.RepartitionOptions{}, "group-by")
	dsl.TableCount[*string, *string](topo, "count", "count-store", ns, stream.StoreOptions{}, "group-by-repartition")
	dsl.ToStream[*string, int64](topo, "updates", "count")
	stream.AddSink(topo, "out", "out", ns, dsl.Nullable[int64](serde.Int64{}), "updates")
	d, _ := nullDriver(t, topo, 2)
	for _, r := range [][2]string{{"a", "x"}, {"a", "-"}, {"b", "?"}, {"b", "x"}, {"a", "x"}} {
		pipeBytes(t, d, "in", []byte(r[0]), []byte(r[1]))
	}
	// a joins x; a leaves x for no group (the subtraction only); b's first
	// row has no value (nothing); b joins x; a joins x again.
	same(t, "count", render(d.Output("out"), long), []string{"x=1@0", "x=0@0", "x=1@0", "x=2@0"})
	want := map[stream.DropReason]uint64{stream.DropNullValue: 1}
	if diff := cmp.Diff(want, d.Dropped()); diff != "" {
		t.Errorf("dropped (-want +got):\n%s", diff)
	}
}

// DropNulls in front of a count makes a nullable stream's sides plain: a
// nil key or value is dropped and counted by reason, the others are counted
// under their plain key.
func TestDropNullsBeforeAnAggregation(t *testing.T) {
	ns := dsl.Nullable[string](serde.String{})
	for _, parts := range []int32{1, 3} {
		topo := stream.NewTopology()
		stream.AddSource(topo, "in", "in", ns, ns)
		dsl.DropNulls(topo, "non-null", dsl.Deref[string], dsl.Deref[string], "in")
		dsl.Count[string, string](topo, "count", "count-store", serde.String{}, stream.StoreOptions{}, "non-null")
		dsl.ToStream[string, int64](topo, "updates", "count")
		stream.AddSink(topo, "out", "out", serde.String{}, dsl.Nullable[int64](serde.Int64{}), "updates")
		d, _ := nullDriver(t, topo, parts)
		for _, r := range []struct{ k, v []byte }{{nil, []byte("x")}, {[]byte("a"), nil}, {[]byte("a"), []byte("")}, {nil, nil}, {[]byte("a"), []byte("y")}} {
			pipeBytes(t, d, "in", r.k, r.v)
		}
		same(t, "count", render(d.Output("out"), long), []string{"a=1@0", "a=2@0"})
		want := map[stream.DropReason]uint64{stream.DropNullKey: 2, stream.DropNullValue: 1}
		if diff := cmp.Diff(want, d.Dropped()); diff != "" {
			t.Errorf("%d partitions: dropped (-want +got):\n%s", parts, diff)
		}
	}
}
