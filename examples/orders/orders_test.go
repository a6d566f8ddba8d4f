package orders

import (
	"fmt"
	"math/big"
	"slices"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/kgen-dev/kgen/runtime/streamtest"
)

var t0 = time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

// TestEnrich enriches orders on 1, 4 and 8 partitions (orders, customers
// and payments have 3, as the spec says; the repartition topic takes 3): an
// order is written once its payment comes within 10 minutes, with the
// customer it had when placed, that customer's country from the global
// table, and its total. An order without a payment in time is not written;
// an unknown customer or country leaves those out.
func TestEnrich(t *testing.T) {
	for _, partitions := range []int32{1, 4, 8} {
		t.Run(fmt.Sprintf("%d partitions", partitions), func(t *testing.T) {
			d, err := NewTestDriver(Factories{}, streamtest.Config{Partitions: partitions})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(d.PipeCountries("FR", Country{Code: "FR", Name: "France", VatPercent: 20}, t0))
			must(d.PipeCountries("DE", Country{Code: "DE", Name: "Germany", VatPercent: 19}, t0))
			must(d.PipeCustomers("c1", Customer{ID: "c1", Name: "Ann", Email: ptr("ann@example.com"), Tier: TierGold, Country: ptr("FR")}, t0))
			must(d.PipeCustomers("c2", Customer{ID: "c2", Name: "Bob", Tier: TierBasic, Country: ptr("XX")}, t0))
			lines := []Line{{Sku: "tea", Qty: 2, Price: big.NewRat(450, 100)}, {Sku: "cup", Qty: 1, Price: big.NewRat(1299, 100)}}
			order := func(id, customer string, at time.Duration) {
				t.Helper()
				must(d.PipeOrders(customer, Order{ID: id, CustomerID: customer, Placed: t0.Add(at), Lines: lines}, t0))
			}
			pay := func(id string, at time.Duration) {
				t.Helper()
				must(d.PipePayments(id, Payment{OrderID: id, Amount: big.NewRat(2199, 100), Paid: t0.Add(at)}, t0))
			}
			order("o1", "c1", time.Minute)   // Ann, France
			order("o2", "c2", 2*time.Minute) // Bob, an unknown country
			order("o3", "c9", 3*time.Minute) // no such customer
			order("o4", "c1", 4*time.Minute) // paid too late
			// Ann moves: orders placed from now on see Germany.
			must(d.PipeCustomers("c1", Customer{ID: "c1", Name: "Ann", Tier: TierGold, Country: ptr("DE")}, t0))
			order("o5", "c1", 5*time.Minute)
			pay("o1", 11*time.Minute)               // 10 minutes after: joins
			pay("o2", 2*time.Minute-10*time.Second) // before the order, within 10 minutes: joins
			pay("o3", 4*time.Minute)
			pay("o4", 15*time.Minute) // 11 minutes after: no join
			pay("o5", 6*time.Minute)
			pay("o9", 6*time.Minute) // no such order

			recs, err := d.ReadEnrichedOrders()
			must(err)
			type result struct {
				ID, Customer, Country string
				Total                 string
				Paid, At              time.Duration
			}
			var got []result
			for _, r := range recs {
				e := r.Value
				if r.Key != e.Order.ID {
					t.Errorf("order %s keyed %q, want its id", e.Order.ID, r.Key)
				}
				res := result{ID: e.Order.ID, Customer: "-", Country: "-", Total: e.Total.FloatString(2), At: r.Timestamp.Sub(t0)}
				if e.Customer != nil {
					res.Customer = e.Customer.Name
				}
				if e.Country != nil {
					res.Country = e.Country.Name
				}
				if e.Payment == nil || e.Payment.OrderID != e.Order.ID {
					t.Fatalf("order %s written with payment %+v", e.Order.ID, e.Payment)
				}
				res.Paid = e.Payment.Paid.Sub(t0)
				got = append(got, res)
			}
			slices.SortFunc(got, func(a, b result) int { return int(a.At - b.At) })
			// A joined record has the later of the two timestamps.
			want := []result{
				{"o2", "Bob", "-", "21.99", 2*time.Minute - 10*time.Second, 2 * time.Minute},
				{"o3", "-", "-", "21.99", 4 * time.Minute, 4 * time.Minute},
				{"o5", "Ann", "Germany", "21.99", 6 * time.Minute, 6 * time.Minute},
				{"o1", "Ann", "France", "21.99", 11 * time.Minute, 11 * time.Minute},
			}
			if !slices.Equal(got, want) {
				t.Fatalf("enriched orders:\n%v\nwant:\n%v", got, want)
			}
			// A deleted customer is unknown to the orders placed after; an
			// order without a key (a customer id) is dropped and counted.
			must(d.DeleteCustomers("c2", t0))
			order("o6", "c2", 20*time.Minute)
			pay("o6", 21*time.Minute)
			must(d.PipeOrdersNullKey(Order{ID: "o7", CustomerID: "c2", Placed: t0.Add(20 * time.Minute), Lines: lines}, t0))
			pay("o7", 21*time.Minute)
			recs, err = d.ReadEnrichedOrders()
			must(err)
			if len(recs) != 1 || recs[0].Key != "o6" || recs[0].Value.Customer != nil || recs[0].Value.Payment == nil {
				t.Fatalf("after c2 was deleted: %+v, want o6 alone, paid, without a customer", recs)
			}
			if n := d.Driver().Dropped()[stream.DropNullKey]; n != 1 {
				t.Errorf("%d records dropped for a null key, want 1 (o7)", n)
			}
		})
	}
}
