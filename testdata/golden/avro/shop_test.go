package shop

import (
	"context"
	"math/big"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/kgen-dev/kgen/runtime/streamtest"
)

func order(id string, placed time.Time) Order {
	return Order{
		ID: id, Placed: placed, Day: placed.Truncate(24 * time.Hour),
		Total: big.NewRat(1999, 100), Tax: big.NewRat(1, 10), Status: StatusPaid,
		Lines: []Line{{Sku: "sku-1", Qty: 2, Price: 9.5, Digest: Digest{1, 2, 3, 4}}},
		Attrs: map[string]int64{}, Flags: map[string][]bool{},
		Choice: OrderChoiceLong{Value: 7},
	}
}

// TestEnrich runs the Avro topology through the generated test driver: the
// plain Avro, Confluent wire format and store serdes all round-trip.
func TestEnrich(t *testing.T) {
	d, err := NewTestDriver(Factories{}, streamtest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ann := Customer{Name: "Ann", Address: Address{Street: "1 Main St", City: "Springfield"}, Previous: []Address{}}
	if err := d.PipeCustomers("c1", ann, t0); err != nil {
		t.Fatal(err)
	}
	o1, o2 := order("o1", t0.Add(time.Minute)), order("o2", t0.Add(2*time.Minute))
	if err := d.PipeOrders("c1", o1, t0); err != nil {
		t.Fatal(err)
	}
	if err := d.PipeOrders("c2", o2, t0); err != nil {
		t.Fatal(err)
	}
	got, err := d.ReadEnriched()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("got %d enriched orders, want 2", len(got))
	}
	opts := cmp.Comparer(func(a, b *big.Rat) bool { return a == nil && b == nil || a != nil && b != nil && a.Cmp(b) == 0 })
	if diff := cmp.Diff(EnrichedOrder{Order: o1, Customer: &ann}, got[0].Value, opts, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("first (-want +got):\n%s", diff)
	}
	if got[1].Value.Customer != nil || got[1].Value.Order.ID != "o2" {
		t.Errorf("second = %+v, want o2 with no customer", got[1].Value)
	}
	// The event time comes from the order's placed field, not the record's.
	if !got[0].Timestamp.Equal(o1.Placed) {
		t.Errorf("timestamp %v, want the placed time %v", got[0].Timestamp, o1.Placed)
	}
}

// TestRunOnDevBroker runs the application the way its generated main does,
// with no brokers and no schema registry: the embedded broker and an
// in-process registry start, the Confluent schema gets an id, and Run
// returns once the (empty) input is consumed.
func TestRunOnDevBroker(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := Run(ctx, Config{AppID: "shop-test", Parallelism: 1, StateDir: t.TempDir()}, Factories{}, stream.ExitWhenCaughtUp())
	if err != nil {
		t.Fatal(err)
	}
}

// TestRegisterSchemas: RegisterSchemas fills in the schema id of the Serdes
// it is given, and only of those: serdes are values, not shared state.
func TestRegisterSchemas(t *testing.T) {
	reg := srfake.New()
	t.Cleanup(reg.Close)
	cl, err := sr.NewClient(sr.URLs(reg.URL()))
	if err != nil {
		t.Fatal(err)
	}
	s := DefaultSerdes()
	if err := RegisterSchemas(context.Background(), cl, &s); err != nil {
		t.Fatal(err)
	}
	if v, ok := s.OrdersValue.(OrderConfluentSerde); !ok || v.SchemaID == 0 {
		t.Errorf("orders value serde = %#v, want a registered OrderConfluentSerde", s.OrdersValue)
	}
	if v := DefaultSerdes().OrdersValue.(OrderConfluentSerde); v.SchemaID != 0 {
		t.Errorf("DefaultSerdes changed: schema id %d", v.SchemaID)
	}
}
