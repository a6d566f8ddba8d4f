package stream_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// enrich is an order stream (key: order id, value: customer id) enriched
// from the global table "customers" (customer id -> credit limit), read
// with stream.GetGlobalTable; an order whose customer has no row goes out
// with -1.
func enrich() *stream.Topology { return enrichTopics("customers", "orders", "enriched", nil) }

func enrichTopics(customers, orders, out string, persistent state.Opener) *stream.Topology {
	t := stream.NewTopology()
	stream.AddGlobalTable(t, "customers", customers, serde.String{}, serde.Int64{}, stream.StoreOptions{Persistent: persistent})
	stream.AddSource(t, "orders", orders, serde.String{}, serde.String{})
	stream.AddProcessor(t, "enrich", func() stream.Processor[string, string, string, int64] { return &enricher{} }, "orders")
	stream.AddSink(t, "out", out, serde.String{}, serde.Int64{}, "enrich")
	return t
}

type enricher struct {
	customers *stream.GlobalTable[string, int64]
}

func (e *enricher) Init(ctx *stream.Context[string, int64]) error {
	var err error
	e.customers, err = stream.GetGlobalTable[string, int64](ctx, "customers")
	return err
}

func (e *enricher) Process(ctx *stream.Context[string, int64], r stream.Record[string, string]) error {
	limit, ok, err := e.customers.Get(r.Value)
	if err != nil {
		return err
	}
	if !ok {
		limit = -1
	}
	ctx.Forward(stream.Record[string, int64]{Key: r.Key, Value: limit, Timestamp: r.Timestamp})
	return nil
}

func int64Bytes(n int64) []byte { b, _ := serde.Int64{}.Serialize(n); return b }

func outputs(t *testing.T, recs []*kgo.Record) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, r := range recs {
		n, err := serde.Int64{}.Deserialize(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		out[string(r.Key)] = n
	}
	return out
}

// Every stream partition reads every row of the global table, whatever
// partition its key is in: the global topic has 4 partitions, the stream 3.
func TestGlobalTableLocal(t *testing.T) {
	d, err := stream.NewLocalDriver(enrich(), stream.LocalConfig{TopicPartitions: map[string]int32{"customers": 4, "orders": 3, "enriched": 3}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	customers := map[string]int64{}
	for i := range 20 {
		c := string(rune('a' + i))
		customers[c] = int64(i * 100)
		if err := d.Pipe("customers", []byte(c), int64Bytes(int64(i*100)), nil, t0); err != nil {
			t.Fatal(err)
		}
	}
	// A tombstone deletes; a null key is dropped and counted.
	if err := d.Pipe("customers", []byte("b"), nil, nil, t0); err != nil {
		t.Fatal(err)
	}
	customers["b"] = -1
	if err := d.Pipe("customers", nil, int64Bytes(7), nil, t0); err != nil {
		t.Fatal(err)
	}
	for c := range customers {
		if err := d.Pipe("orders", []byte("order-"+c), []byte(c), nil, t0); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]int64{}
	for c, n := range customers {
		want["order-"+c] = n
	}
	if diff := cmp.Diff(want, outputs(t, d.Output("enriched"))); diff != "" {
		t.Errorf("enriched (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[stream.DropReason]uint64{stream.DropNullKey: 1}, d.Dropped()); diff != "" {
		t.Errorf("dropped (-want +got):\n%s", diff)
	}
	// An update while running is read by the next record.
	if err := d.Pipe("customers", []byte("a"), int64Bytes(5), nil, t0); err != nil {
		t.Fatal(err)
	}
	if err := d.Pipe("orders", []byte("again"), []byte("a"), nil, t0); err != nil {
		t.Fatal(err)
	}
	if got := outputs(t, d.Output("enriched"))["again"]; got != 5 {
		t.Errorf("after the update: %d, want 5", got)
	}
}

// A global record that cannot be decoded meets the deserialization policy.
func TestGlobalTableBadRecordLocal(t *testing.T) {
	bad := []byte{1, 2, 3} // not 8 bytes: not an int64
	t.Run("fail", func(t *testing.T) {
		d, err := stream.NewLocalDriver(enrich(), stream.LocalConfig{})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		err = d.Pipe("customers", []byte("a"), bad, nil, t0)
		var rerr *stream.RecordError
		if !errors.As(err, &rerr) || !rerr.Deserialize || rerr.Topic != "customers" || rerr.Node != "customers" {
			t.Fatalf("error %v: want a deserialization RecordError of topic customers", err)
		}
	})
	t.Run("skip", func(t *testing.T) {
		d, err := stream.NewLocalDriver(enrich(), stream.LocalConfig{OnDeserializeError: stream.LogAndContinue()})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		if err := d.Pipe("customers", []byte("a"), int64Bytes(1), nil, t0); err != nil {
			t.Fatal(err)
		}
		if err := d.Pipe("customers", []byte("a"), bad, nil, t0); err != nil {
			t.Fatal(err)
		}
		if err := d.Pipe("orders", []byte("o"), []byte("a"), nil, t0); err != nil {
			t.Fatal(err)
		}
		if got := outputs(t, d.Output("enriched"))["o"]; got != 1 {
			t.Errorf("after a skipped record: %d, want the row before it, 1", got)
		}
	})
	t.Run("dead-letter", func(t *testing.T) {
		d, err := stream.NewLocalDriver(enrich(), stream.LocalConfig{OnDeserializeError: stream.DeadLetter("dlq")})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		if err := d.Pipe("customers", []byte("a"), bad, nil, t0); err != nil {
			t.Fatal(err)
		}
		dl := d.Output("dlq")
		if len(dl) != 1 || string(dl[0].Key) != "a" || string(dl[0].Value) != string(bad) {
			t.Fatalf("dead letters %v: want the bad record", dl)
		}
	})
}

func TestGlobalTableTopologyErrors(t *testing.T) {
	tp := enrich()
	stream.AddGlobalTable(tp, "orders-table", "orders", serde.String{}, serde.String{}, stream.StoreOptions{})
	stream.AddGlobalTable(tp, "customers", "other", serde.String{}, serde.String{}, stream.StoreOptions{})
	stream.AddGlobalTable(tp, "logged", "x", serde.String{}, serde.String{}, stream.StoreOptions{Changelog: true})
	err := tp.Validate()
	for _, want := range []string{`topic "orders" is also read by source "orders"`, `duplicate global table name "customers"`, `global table "logged": a global table is restored from its topic`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v: want %q", err, want)
		}
	}
}

func TestGlobalTableDescribed(t *testing.T) {
	if got := enrich().Describe(); !strings.Contains(got, "  Global table: customers (topic: customers)\n") {
		t.Errorf("Describe:\n%s\nwant the global table listed", got)
	}
}
