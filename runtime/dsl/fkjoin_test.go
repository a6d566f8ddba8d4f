package dsl_test

import (
	"hash/fnv"
	"strings"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/runtime/dsl"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// fkOf reads an order's customer: the value's part before ':', none
// without one.
func fkOf(v string) *string {
	fk, _, ok := strings.Cut(v, ":")
	if !ok {
		return nil
	}
	return &fk
}

// fkJoinTopo joins the table "orders" with "customers" by the customer an
// order names, inner or left, and writes the result's updates to "out".
func fkJoinTopo(left bool) *stream.Topology {
	s := serde.String{}
	opts := stream.StoreOptions{Changelog: true}
	t := stream.NewTopology()
	dsl.Table(t, "orders", "orders", s, s, "orders-store", opts)
	dsl.Table(t, "customers", "customers", s, s, "customers-store", opts)
	l, r := dsl.TableRef{Node: "orders", Store: "orders-store"}, dsl.TableRef{Node: "customers", Store: "customers-store"}
	sd := dsl.FKJoinSerdes[string, string, string, string]{LeftKey: s, LeftValue: s, RightKey: s, RightValue: s}
	if left {
		dsl.ForeignKeyLeftJoin(t, "join", l, r, fkOf, func(a string, b *string) string { return a + "+" + orNull(b) }, sd)
	} else {
		dsl.ForeignKeyJoin(t, "join", l, r, fkOf, func(a, b string) string { return a + "+" + b }, sd)
	}
	dsl.ToStream[string, string](t, "updates", "join")
	stream.AddSink(t, "out", "out", s, dsl.Nullable[string](s), "updates")
	return t
}

type fkIn struct {
	topic, k string
	v        *string
	ms       int64
}

// fkInputs: a new order before and after its customer exists, customer
// updates, a foreign-key change (the old customer's updates no longer
// reach the order), a foreign key set to none, a customer deleted, an
// order deleted.
var fkInputs = []fkIn{
	{"customers", "c1", str("A"), 10}, {"orders", "o1", str("c1:x"), 20}, {"orders", "o2", str("c2:y"), 30},
	{"customers", "c2", str("B"), 40}, {"customers", "c1", str("A2"), 50}, {"orders", "o1", str("c2:x"), 60},
	{"customers", "c1", str("A3"), 70}, {"orders", "o2", str("none"), 80}, {"customers", "c2", nil, 90},
	{"orders", "o1", nil, 100}, {"orders", "o2", nil, 110}, {"customers", "c9", nil, 120},
}

func pipeFK(t *testing.T, d *stream.LocalDriver, in []fkIn) {
	t.Helper()
	for _, r := range in {
		var v []byte
		if r.v != nil {
			v = []byte(*r.v)
		}
		if err := d.Pipe(r.topic, []byte(r.k), v, nil, t0.Add(time.Duration(r.ms)*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	}
}

// Foreign-key joins, inner and left, over the same updates: on 1 and 4
// partitions, and with the two tables of different partition counts (the
// subscription topic takes the customers', the response topic the
// orders').
func TestForeignKeyJoins(t *testing.T) {
	for _, tc := range []struct {
		left bool
		want []string
	}{
		{false, []string{"o1=c1:x+A@20", "o2=c2:y+B@40", "o1=c1:x+A2@50", "o1=c2:x+B@60", "o2=-@80", "o1=-@90", "o1=-@100"}},
		{true, []string{"o1=c1:x+A@20", "o2=c2:y+null@30", "o2=c2:y+B@40", "o1=c1:x+A2@50", "o1=c2:x+B@60",
			"o2=none+null@80", "o1=c2:x+null@90", "o1=-@100", "o2=-@110"}},
	} {
		for _, layout := range []struct {
			orders, customers int32
		}{{1, 1}, {4, 4}, {4, 2}, {1, 3}} {
			d, err := stream.NewLocalDriver(fkJoinTopo(tc.left), stream.LocalConfig{
				TopicPartitions: map[string]int32{"orders": layout.orders, "customers": layout.customers, "out": layout.orders},
			})
			if err != nil {
				t.Fatal(err)
			}
			pipeFK(t, d, fkInputs)
			got, want := render(d.Output("out"), text), tc.want
			if layout.orders > 1 || layout.customers > 1 {
				got, want = byKey(got), byKey(want)
			}
			same(t, "foreign-key join", got, want)
			sub := d.Output("test-join-subscription-registration-repartition")
			if len(sub) == 0 {
				t.Fatalf("left %v %v: no subscriptions written", tc.left, layout)
			}
			for _, r := range sub {
				if r.Partition >= layout.customers {
					t.Errorf("subscription in partition %d of a %d-partition topic", r.Partition, layout.customers)
				}
			}
			d.Close()
		}
	}
}

// A response computed from a left value the row no longer holds is
// dropped: the row moved to another foreign key (and back) while the
// answer was on its way. The driver processes each record at once, so the
// late answer is written into the response topic by hand, in kgen's
// format: the hash of the value it answers, then the right value.
func TestForeignKeyJoinDropsStaleResponse(t *testing.T) {
	for _, left := range []bool{false, true} {
		d, _ := nullDriver(t, fkJoinTopo(left), 1)
		pipeFK(t, d, []fkIn{
			{"customers", "c1", str("A"), 10}, {"customers", "c2", str("B"), 20},
			{"orders", "o1", str("c1:x"), 30}, {"orders", "o1", str("c2:x"), 40},
		})
		response := func(leftValue, right string) []byte {
			h := fnv.New128a()
			h.Write([]byte(leftValue))
			return append(append(append([]byte{1}, h.Sum(nil)...), 1), right...)
		}
		topic := "test-join-subscription-response-repartition"
		// The answer to c1:x arrives after the row became c2:x: dropped.
		if err := d.Pipe(topic, []byte("o1"), response("c1:x", "LATE"), nil, t0.Add(50*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		// An answer to the value the row holds is joined.
		if err := d.Pipe(topic, []byte("o1"), response("c2:x", "B2"), nil, t0.Add(60*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		// The row goes back to c1: the answer to its first c1:x subscription
		// now matches again, as in Kafka Streams (the hash is of the value).
		pipeFK(t, d, []fkIn{{"orders", "o1", str("c1:x"), 70}})
		if err := d.Pipe(topic, []byte("o1"), response("c2:x", "STALE"), nil, t0.Add(80*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		want := []string{"o1=c1:x+A@30", "o1=c2:x+B@40", "o1=c2:x+B2@60", "o1=c1:x+A@70"}
		same(t, "stale responses", render(d.Output("out"), text), want)
	}
}

// A right row's update reaches every left row subscribed to it, and only
// those: subscriptions of one foreign key do not leak into another's whose
// bytes extend it ("c1" and "c10").
func TestForeignKeyJoinRightUpdateFansOut(t *testing.T) {
	d, _ := nullDriver(t, fkJoinTopo(false), 1)
	pipeFK(t, d, []fkIn{
		{"customers", "c1", str("A"), 1}, {"customers", "c10", str("Z"), 2},
		{"orders", "o1", str("c1:a"), 3}, {"orders", "o2", str("c1:b"), 4}, {"orders", "o3", str("c10:c"), 5},
		{"customers", "c1", str("A2"), 6},
	})
	want := []string{"o1=c1:a+A@3", "o2=c1:b+A@4", "o3=c10:c+Z@5", "o1=c1:a+A2@6", "o2=c1:b+A2@6"}
	same(t, "fan-out", render(d.Output("out"), text), want)
}

// Two foreign-key joins of the same tables: each join's registration
// topic is read beside the other's (both subscribe to the customers), and
// each response topic beside the other's, so each takes its partition
// count from the tables rather than from the other, which waits likewise.
func TestTwoForeignKeyJoinsOfOneTable(t *testing.T) {
	s := serde.String{}
	opts := stream.StoreOptions{Changelog: true}
	topo := stream.NewTopology()
	dsl.Table(topo, "orders", "orders", s, s, "orders-store", opts)
	dsl.Table(topo, "customers", "customers", s, s, "customers-store", opts)
	l, r := dsl.TableRef{Node: "orders", Store: "orders-store"}, dsl.TableRef{Node: "customers", Store: "customers-store"}
	sd := dsl.FKJoinSerdes[string, string, string, string]{LeftKey: s, LeftValue: s, RightKey: s, RightValue: s}
	dsl.ForeignKeyJoin(topo, "inner", l, r, fkOf, func(a, b string) string { return a + "+" + b }, sd)
	dsl.ForeignKeyLeftJoin(topo, "left", l, r, fkOf, func(a string, b *string) string { return a + "+" + orNull(b) }, sd)
	dsl.ToStream[string, string](topo, "inner-updates", "inner")
	stream.AddSink(topo, "out", "out", s, dsl.Nullable[string](s), "inner-updates")
	dsl.ToStream[string, string](topo, "left-updates", "left")
	stream.AddSink(topo, "out-left", "out-left", s, dsl.Nullable[string](s), "left-updates")
	d, err := stream.NewLocalDriver(topo, stream.LocalConfig{
		TopicPartitions: map[string]int32{"orders": 4, "customers": 2, "out": 4, "out-left": 4},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	pipeFK(t, d, fkInputs)
	same(t, "inner", byKey(render(d.Output("out"), text)), byKey([]string{"o1=c1:x+A@20", "o2=c2:y+B@40", "o1=c1:x+A2@50", "o1=c2:x+B@60", "o2=-@80", "o1=-@90", "o1=-@100"}))
	same(t, "left", byKey(render(d.Output("out-left"), text)), byKey([]string{"o1=c1:x+A@20", "o2=c2:y+null@30", "o2=c2:y+B@40", "o1=c1:x+A2@50", "o1=c2:x+B@60",
		"o2=none+null@80", "o1=c2:x+null@90", "o1=-@100", "o2=-@110"}))
	for _, topic := range []string{"test-inner-subscription-registration-repartition", "test-left-subscription-registration-repartition"} {
		for _, r := range d.Output(topic) {
			if r.Partition >= 2 {
				t.Errorf("%s: a subscription in partition %d of the customers' 2", topic, r.Partition)
			}
		}
	}
}
