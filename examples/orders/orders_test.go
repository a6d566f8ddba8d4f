package orders

import (
	"math/big"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/runtime/streamtest"
)

func TestEnrich(t *testing.T) {
	d, err := NewTestDriver(Factories{}, streamtest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	t0 := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	email := "ann@example.com"
	if err := d.PipeCustomers("c1", Customer{ID: "c1", Name: "Ann", Email: &email, Tier: TierGold}, t0); err != nil {
		t.Fatal(err)
	}
	order := Order{
		ID: "4b1e0c9e-8a51-4c1e-9b43-5d1c0c3f6a10", CustomerID: "c1", Placed: t0.Add(time.Hour),
		Lines: []Line{
			{Sku: "tea", Qty: 2, Price: big.NewRat(450, 100)},
			{Sku: "cup", Qty: 1, Price: big.NewRat(1299, 100)},
		},
	}
	if err := d.PipeOrders("c1", order, t0); err != nil {
		t.Fatal(err)
	}
	order.ID, order.CustomerID = "9d2f3c4b-0000-4000-8000-000000000001", "c9"
	if err := d.PipeOrders("c9", order, t0); err != nil {
		t.Fatal(err)
	}
	got, err := d.ReadEnrichedOrders()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("got %d enriched orders, want 2", len(got))
	}
	first := got[0].Value
	if first.Customer == nil || first.Customer.Name != "Ann" || first.Customer.Tier != TierGold || *first.Customer.Email != email {
		t.Errorf("customer = %+v, want Ann", first.Customer)
	}
	if first.Total.Cmp(big.NewRat(2199, 100)) != 0 {
		t.Errorf("total = %s, want 21.99", first.Total.FloatString(2))
	}
	if !got[0].Timestamp.Equal(t0.Add(time.Hour)) {
		t.Errorf("timestamp = %v, want the order's placed time", got[0].Timestamp)
	}
	if got[1].Value.Customer != nil {
		t.Errorf("unknown customer c9 enriched with %+v", got[1].Value.Customer)
	}
	customers, err := d.Customers()
	if err != nil {
		t.Fatal(err)
	}
	if n, err := customers.ApproximateCount(); err != nil || n != 1 {
		t.Errorf("customers in store = %d, %v; want 1", n, err)
	}
}
