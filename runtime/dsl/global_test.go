package dsl_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kgen-dev/kgen/runtime/dsl"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// globalJoinTopology joins orders (nullable key and value: the customer id)
// with the global table customers; the customer "none" maps to no key.
func globalJoinTopology(left bool) *stream.Topology {
	ns := dsl.Nullable[string](serde.String{})
	t := stream.NewTopology()
	customers := dsl.NewGlobalTable(t, "customers", "customers", serde.String{}, serde.String{}, stream.StoreOptions{})
	stream.AddSource(t, "orders", "orders", ns, ns)
	mapper := func(_ *string, customer *string) (string, bool) {
		if *customer == "none" {
			return "", false
		}
		return *customer, true
	}
	if left {
		dsl.LeftJoinGlobal(t, "join", customers, mapper, func(_ *string, customer *string, name *string) string {
			if name == nil {
				return *customer + ":-"
			}
			return *customer + ":" + *name
		}, "orders")
	} else {
		dsl.JoinGlobal(t, "join", customers, mapper, func(_ *string, customer *string, name string) string {
			return *customer + ":" + name
		}, "orders")
	}
	stream.AddSink(t, "out", "out", ns, serde.String{}, "join")
	return t
}

// The null rules of Kafka Streams 4.4's stream–global table joins: a nil
// value is dropped by both; a key mapped to null is dropped by the inner
// join and joined with no row by the left one (KIP-962); a missing row
// emits nothing on the inner join; the stream's own nil key is no reason
// to drop. Table updates and tombstones before a record are seen by it,
// whatever partition either is in.
func TestJoinGlobalNulls(t *testing.T) {
	for _, tc := range []struct {
		left    bool
		want    []string
		dropped map[stream.DropReason]uint64
	}{
		{false, []string{"o1=c1:Ann", "<nil>=c1:Ann", "o5=c3:Cid2"},
			map[stream.DropReason]uint64{stream.DropNullKey: 2, stream.DropNullValue: 1}},
		{true, []string{"o1=c1:Ann", "o2=c2:-", "o3=none:-", "<nil>=c1:Ann", "o5=c3:Cid2", "o6=c9:-"},
			map[stream.DropReason]uint64{stream.DropNullKey: 1, stream.DropNullValue: 1}},
	} {
		for _, parts := range []int32{1, 4} {
			d, err := stream.NewLocalDriver(globalJoinTopology(tc.left), stream.LocalConfig{
				Partitions: parts, TopicPartitions: map[string]int32{"customers": parts + 1},
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range []struct{ topic, k, v string }{
				{"customers", "c1", "Ann"}, {"customers", "c2", "Bob"}, {"customers", "c2", "\x00"}, // tombstone
				{"customers", "\x00", "Nobody"}, // null key: dropped
				{"customers", "c3", "Cid"}, {"customers", "c3", "Cid2"},
				{"orders", "o1", "c1"}, {"orders", "o2", "c2"}, {"orders", "o3", "none"},
				{"orders", "o4", "\x00"}, // null value: dropped
				{"orders", "\x00", "c1"}, {"orders", "o5", "c3"}, {"orders", "o6", "c9"},
			} {
				k, v := []byte(r.k), []byte(r.v)
				if r.k == "\x00" {
					k = nil
				}
				if r.v == "\x00" {
					v = nil
				}
				pipeBytes(t, d, r.topic, k, v)
			}
			var got []string
			for _, r := range d.Output("out") {
				k := "<nil>"
				if r.Key != nil {
					k = string(r.Key)
				}
				got = append(got, k+"="+string(r.Value))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("left %v, %d partitions: outputs (-want +got):\n%s", tc.left, parts, diff)
			}
			if diff := cmp.Diff(tc.dropped, d.Dropped()); diff != "" {
				t.Errorf("left %v, %d partitions: dropped (-want +got):\n%s", tc.left, parts, diff)
			}
			d.Close()
		}
	}
}
