package dsl_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kgen-dev/kgen/runtime/dsl"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// orNull writes a side with no row as "null", as the oracle's joiners do.
func orNull(s *string) string {
	if s == nil {
		return "null"
	}
	return *s
}

// enrichTopo enriches "clicks" (keys and values may be null) from the
// table "users", with an inner or a left join.
func enrichTopo(left bool) *stream.Topology {
	s := serde.String{}
	ns := dsl.Nullable[string](s)
	t := stream.NewTopology()
	stream.AddSource(t, "clicks", "clicks", ns, ns)
	dsl.Table(t, "users", "users", ns, s, "users-store", stream.StoreOptions{Changelog: true})
	if left {
		dsl.StreamTableLeftJoin[*string](t, "enrich", "users-store", func(v *string, row *string) string { return *v + "@" + orNull(row) }, "clicks")
	} else {
		dsl.StreamTableJoin[*string](t, "enrich", "users-store", func(v *string, row string) string { return *v + "@" + row }, "clicks")
	}
	stream.AddSink(t, "out", "out", ns, s, "enrich")
	return t
}

// A stream–table join reads the row the table holds when the stream record
// arrives: later updates and deletions change what later records join, and
// emit nothing. An inner join drops a record with no row silently and
// counts a null key or value as dropped; a left join joins a missing row,
// and a null key, with nil, and drops only a null value. On 1 and 4
// partitions (the table and the stream are co-partitioned: one task each).
func TestStreamTableJoin(t *testing.T) {
	type in struct {
		topic string
		k, v  []byte
	}
	b := func(s string) []byte { return []byte(s) }
	inputs := []in{
		{"users", b("u1"), b("ann")}, {"clicks", b("u1"), b("c1")}, {"clicks", b("u2"), b("c2")},
		{"users", b("u2"), b("bob")}, {"clicks", b("u2"), b("c3")}, {"users", b("u1"), b("amy")},
		{"clicks", b("u1"), b("c4")}, {"users", b("u1"), nil}, {"clicks", b("u1"), b("c5")},
		{"clicks", nil, b("c6")}, {"clicks", b("u2"), nil}, {"users", nil, b("nobody")},
	}
	for _, tc := range []struct {
		left    bool
		want    []string
		dropped map[stream.DropReason]uint64
	}{
		{false, []string{"u1=c1@ann@0", "u2=c3@bob@0", "u1=c4@amy@0"},
			map[stream.DropReason]uint64{stream.DropNullKey: 2, stream.DropNullValue: 1}},
		{true, []string{"u1=c1@ann@0", "u2=c2@null@0", "u2=c3@bob@0", "u1=c4@amy@0", "u1=c5@null@0", "=c6@null@0"},
			map[stream.DropReason]uint64{stream.DropNullKey: 1, stream.DropNullValue: 1}},
	} {
		for _, parts := range []int32{1, 4} {
			d, _ := nullDriver(t, enrichTopo(tc.left), parts)
			for _, r := range inputs {
				pipeBytes(t, d, r.topic, r.k, r.v)
			}
			got := render(d.Output("out"), text)
			if parts > 1 {
				got = byKey(got)
				tc.want = byKey(tc.want)
			}
			same(t, "join output", got, tc.want)
			if diff := cmp.Diff(tc.dropped, d.Dropped()); diff != "" {
				t.Errorf("left %v, %d partitions: dropped (-want +got):\n%s", tc.left, parts, diff)
			}
		}
	}
}

// byKey orders rendered records by key, keeping each key's order: what
// several partitions keep.
func byKey(rs []string) []string {
	out := append([]string(nil), rs...)
	key := func(r string) string { return r[:strings.IndexByte(r, '=')] }
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && key(out[j-1]) > key(out[j]); j-- {
			out[j-1], out[j] = out[j], out[j-1]
		}
	}
	return out
}

// tableJoinTopo joins the tables "left" and "right" as kind says and writes
// the result's updates to "out" (a deletion as a tombstone).
func tableJoinTopo(kind string) *stream.Topology {
	s := serde.String{}
	opts := stream.StoreOptions{Changelog: true}
	t := stream.NewTopology()
	dsl.Table(t, "left", "left", s, s, "left-store", opts)
	dsl.Table(t, "right", "right", s, s, "right-store", opts)
	l, r := dsl.TableRef{Node: "left", Store: "left-store"}, dsl.TableRef{Node: "right", Store: "right-store"}
	switch kind {
	case "inner":
		dsl.TableJoin[string](t, "join", l, r, func(a, b string) string { return a + "+" + b })
	case "left":
		dsl.TableLeftJoin[string](t, "join", l, r, func(a string, b *string) string { return a + "+" + orNull(b) })
	case "outer":
		dsl.TableOuterJoin[string](t, "join", l, r, func(a, b *string) string { return orNull(a) + "+" + orNull(b) })
	}
	dsl.ToStream[string, string](t, "updates", "join")
	stream.AddSink(t, "out", "out", s, dsl.Nullable[string](s), "updates")
	return t
}

// Table–table joins emit the new result on an update of either side, with
// the later of both rows' timestamps, and a tombstone where Kafka Streams
// sends one: inner, left and outer over the same updates, with an update
// older than the row it replaces, on 1 and 4 partitions.
func TestTableTableJoins(t *testing.T) {
	type in struct {
		topic, k string
		v        *string
		ms       int64
	}
	inputs := []in{
		{"left", "k", str("L1"), 10}, {"right", "k", str("R1"), 20}, {"left", "k", str("L2"), 5},
		{"right", "k", nil, 30}, {"left", "k", nil, 40}, {"right", "k", str("R2"), 50},
		{"right", "k", nil, 60}, {"right", "j", nil, 70},
	}
	for _, tc := range []struct {
		kind string
		want []string
	}{
		{"inner", []string{"k=L1+R1@20", "k=L2+R1@20", "k=-@30"}},
		{"left", []string{"k=L1+null@10", "k=L1+R1@20", "k=L2+R1@20", "k=L2+null@30", "k=-@40"}},
		{"outer", []string{"k=L1+null@10", "k=L1+R1@20", "k=L2+R1@20", "k=L2+null@30", "k=-@40", "k=null+R2@50", "k=-@60"}},
	} {
		for _, parts := range []int32{1, 4} {
			d, _ := nullDriver(t, tableJoinTopo(tc.kind), parts)
			for _, r := range inputs {
				var v []byte
				if r.v != nil {
					v = []byte(*r.v)
				}
				if err := d.Pipe(r.topic, []byte(r.k), v, nil, t0.Add(time.Duration(r.ms)*time.Millisecond)); err != nil {
					t.Fatal(err)
				}
			}
			same(t, tc.kind+" join", render(d.Output("out"), text), tc.want)
		}
	}
}

// Joined topics must be co-partitioned: a join puts both inputs in one
// sub-topology, and their partition counts must agree.
func TestTableJoinNeedsCoPartitioning(t *testing.T) {
	_, err := stream.NewLocalDriver(tableJoinTopo("inner"), stream.LocalConfig{
		Partitions: 4, TopicPartitions: map[string]int32{"right": 2},
	})
	if err == nil || !strings.Contains(err.Error(), "co-partitioned") {
		t.Fatalf("got %v, want an error about co-partitioned topics", err)
	}
	_, err = stream.NewLocalDriver(enrichTopo(true), stream.LocalConfig{
		Partitions: 4, TopicPartitions: map[string]int32{"users": 3},
	})
	if err == nil || !strings.Contains(err.Error(), "co-partitioned") {
		t.Fatalf("got %v, want an error about co-partitioned topics", err)
	}
}

// A table join whose joiner gives nil has no result for the key: a
// tombstone, never a row holding nil, and MaterializeTable deletes the row.
func TestTableJoinNilResult(t *testing.T) {
	s := serde.String{}
	ns := dsl.Nullable[string](s)
	opts := stream.StoreOptions{}
	topo := stream.NewTopology()
	dsl.Table(topo, "left", "left", s, s, "left-store", opts)
	dsl.Table(topo, "right", "right", s, s, "right-store", opts)
	dsl.TableJoin[string](topo, "join", dsl.TableRef{Node: "left", Store: "left-store"}, dsl.TableRef{Node: "right", Store: "right-store"},
		func(a, b string) *string {
			if b == "none" {
				return nil
			}
			return str(a + "+" + b)
		})
	joined := dsl.MaterializeTable(topo, "joined", "joined-store", s, ns, opts, "join")
	dsl.ToStream[string, *string](topo, "updates", joined.Node)
	stream.AddSink(topo, "out", "out", s, dsl.Nullable[*string](ns), "updates")
	d, _ := nullDriver(t, topo, 1)
	pipeBytes(t, d, "left", []byte("k"), []byte("L"))
	pipeBytes(t, d, "right", []byte("k"), []byte("R"))
	store := d.Store("joined-store").(interface {
		Get(string) (dsl.ValueAndTimestamp[*string], bool, error)
	})
	if v, ok, err := store.Get("k"); err != nil || !ok || v.Value == nil || *v.Value != "L+R" {
		t.Fatalf("joined row of k: %v %v %v, want L+R", v, ok, err)
	}
	pipeBytes(t, d, "right", []byte("k"), []byte("none"))
	same(t, "join output", render(d.Output("out"), text), []string{"k=L+R@0", "k=-@0"})
	if _, ok, err := store.Get("k"); err != nil || ok {
		t.Fatalf("joined row of k after a nil result: found %v (%v), want none", ok, err)
	}
}

// The WithKey joiners take the key too: the same joins, each result
// prefixed by its key.
func TestJoinsWithKey(t *testing.T) {
	s := serde.String{}
	ns := dsl.Nullable[string](s)
	opts := stream.StoreOptions{}
	topo := stream.NewTopology()
	stream.AddSource(topo, "clicks", "clicks", s, s)
	dsl.Table(topo, "left", "left", s, s, "left-store", opts)
	dsl.Table(topo, "right", "right", s, s, "right-store", opts)
	l, r := dsl.TableRef{Node: "left", Store: "left-store"}, dsl.TableRef{Node: "right", Store: "right-store"}
	dsl.StreamTableJoinWithKey(topo, "st-inner", "left-store", func(k, v, row string) string { return k + ":" + v + "+" + row }, "clicks")
	dsl.StreamTableLeftJoinWithKey(topo, "st-left", "right-store", func(k, v string, row *string) string { return k + ":" + v + "+" + orNull(row) }, "clicks")
	dsl.TableJoinWithKey(topo, "tt-inner", l, r, func(k, a, b string) string { return k + ":" + a + "+" + b })
	dsl.TableLeftJoinWithKey(topo, "tt-left", l, r, func(k, a string, b *string) string { return k + ":" + a + "+" + orNull(b) })
	dsl.TableOuterJoinWithKey(topo, "tt-outer", l, r, func(k string, a, b *string) string { return k + ":" + orNull(a) + "+" + orNull(b) })
	stream.AddSink(topo, "st-inner-out", "st-inner", s, s, "st-inner")
	stream.AddSink(topo, "st-left-out", "st-left", s, s, "st-left")
	for _, n := range []string{"tt-inner", "tt-left", "tt-outer"} {
		dsl.ToStream[string, string](topo, n+"-updates", n)
		stream.AddSink(topo, n+"-out", n, s, ns, n+"-updates")
	}
	d, _ := nullDriver(t, topo, 1)
	pipeBytes(t, d, "left", []byte("k"), []byte("L"))
	pipeBytes(t, d, "clicks", []byte("k"), []byte("c"))
	pipeBytes(t, d, "right", []byte("k"), []byte("R"))
	for topic, want := range map[string][]string{
		"st-inner": {"k=k:c+L@0"},
		"st-left":  {"k=k:c+null@0"},
		"tt-inner": {"k=k:L+R@0"},
		"tt-left":  {"k=k:L+null@0", "k=k:L+R@0"},
		"tt-outer": {"k=k:L+null@0", "k=k:L+R@0"},
	} {
		same(t, topic, render(d.Output(topic), text), want)
	}
}
