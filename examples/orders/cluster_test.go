package orders

import (
	"context"
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// TestOrdersOnACluster runs the enrichment as deployed: two instances, one
// of them stopped and started again mid-run (its tasks, with their join
// windows and customer rows, move to the other and back), on kfake and on
// the real broker (KGEN_TEST_BROKERS), under both guarantees, with a schema
// registry. Customers and countries are written first; the orders then
// come in three phases, each processed before the next is produced (so no
// task sees a record late by another phase's order). Each phase's orders
// are paid 1 to 9 minutes after being placed, except some paid 11 minutes
// after (too late) and some never. Every order paid in time must be written
// once (at least once under at-least-once), with its customer, country,
// payment and the later of the two times; no other order.
func TestOrdersOnACluster(t *testing.T) {
	for _, g := range []stream.GuaranteeKind{stream.AtLeastOnce, stream.ExactlyOnce} {
		t.Run(g.String(), func(t *testing.T) {
			c := kafkatest.New(t)
			adm := c.Admin(t)
			recreate(t, adm, map[string]int32{TopicOrders: 3, TopicCustomers: 3, TopicPayments: 3, TopicCountries: 2, TopicEnrichedOrders: 3})
			reg := srfake.New()
			defer reg.Close()
			cl, err := sr.NewClient(sr.URLs(reg.URL()))
			if err != nil {
				t.Fatal(err)
			}
			s := DefaultSerdes()
			if err := RegisterSchemas(context.Background(), cl, &s); err != nil {
				t.Fatal(err)
			}
			appID := fmt.Sprintf("orders-%s-%d", g, time.Now().UnixNano())
			base := time.Now().Truncate(time.Minute).Add(-2 * time.Hour)
			produce := func(recs ...*kgo.Record) {
				t.Helper()
				if err := c.Client(t).ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			record := func(topic string, key string, value []byte, err error, at time.Time) *kgo.Record {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
				return &kgo.Record{Topic: topic, Key: []byte(key), Value: value, Timestamp: at}
			}
			countries := map[string]string{"FR": "France", "DE": "Germany", "IT": "Italy"}
			var setup []*kgo.Record
			for code, name := range countries {
				v, err := s.CountriesValue.Serialize(Country{Code: code, Name: name, VatPercent: 20})
				setup = append(setup, record(TopicCountries, code, v, err, base))
			}
			// c0..c7: c6 lives in a country the table lacks; c7 and c8 are
			// not customers.
			codes := []string{"FR", "DE", "IT", "FR", "DE", "IT", "XX"}
			names := map[string]string{}
			for i, code := range codes {
				id := fmt.Sprintf("c%d", i)
				names[id] = "Name " + id
				v, err := s.CustomersValue.Serialize(Customer{ID: id, Name: names[id], Tier: TierBasic, Country: &code})
				setup = append(setup, record(TopicCustomers, id, v, err, base))
			}
			produce(setup...)

			rng := rand.New(rand.NewPCG(5, 6))
			want := map[string]string{}
			var phases [][]*kgo.Record
			for k := range 3 {
				var recs []*kgo.Record
				for i := range 30 {
					id := fmt.Sprintf("00000000-0000-4000-8000-%06d%06d", k, i)
					cust := fmt.Sprintf("c%d", rng.IntN(9))
					placed := base.Add(time.Duration(k)*15*time.Minute + time.Duration(i)*10*time.Second)
					v, err := s.OrdersValue.Serialize(Order{ID: id, CustomerID: cust, Placed: placed,
						Lines: []Line{{Sku: "tea", Qty: int32(1 + i%3), Price: big.NewRat(450, 100)}}})
					recs = append(recs, record(TopicOrders, cust, v, err, placed))
					var paid time.Time
					switch n := rng.IntN(10); {
					case n == 0: // never paid
						continue
					case n == 1: // too late
						paid = placed.Add(11 * time.Minute)
					default:
						paid = placed.Add(time.Duration(1+rng.IntN(9)) * time.Minute)
					}
					v, err = s.PaymentsValue.Serialize(Payment{OrderID: id, Amount: big.NewRat(int64(450*(1+i%3)), 100), Paid: paid})
					recs = append(recs, record(TopicPayments, id, v, err, paid))
					if paid.Sub(placed) > 10*time.Minute {
						continue
					}
					country, name := "-", "-"
					if n, ok := names[cust]; ok {
						name = n
						if cn, ok := countries[codes[cust[1]-'0']]; ok {
							country = cn
						}
					}
					want[id] = fmt.Sprintf("%s/%s/%s/%s@%d", name, country, big.NewRat(int64(450*(1+i%3)), 100).FloatString(2),
						paid.UTC().Format(time.TimeOnly), paid.UnixMilli())
				}
				phases = append(phases, recs)
			}

			start := func(name, dir string) func() {
				topo, err := NewTopology(Factories{}, s)
				if err != nil {
					t.Fatal(err)
				}
				app, err := stream.New(topo, stream.Brokers(c.Seeds()...), stream.AppID(appID), stream.StateDir(dir),
					stream.InstanceID(name), stream.Parallelism(1), stream.Guarantee(g), stream.CommitInterval(200*time.Millisecond))
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- app.Run(ctx) }()
				var once sync.Once
				return func() {
					once.Do(func() {
						cancel()
						if err := <-done; err != nil {
							t.Errorf("instance %s: %v", name, err)
						}
					})
				}
			}
			// await waits until the output holds the orders of want whose id
			// is in phase k or before, and no others.
			await := func(k int) {
				t.Helper()
				expect := map[string]string{}
				for id, v := range want {
					if int(id[len(id)-7]-'0') <= k { // the phase's digit
						expect[id] = v
					}
				}
				var got map[string]string
				deadline := time.Now().Add(2 * time.Minute)
				for {
					var times map[string]int
					got, times = map[string]string{}, map[string]int{}
					for _, r := range c.ReadToEnd(t, TopicEnrichedOrders, kafkatest.ReadCommitted()) {
						e, err := s.EnrichedOrdersValue.Deserialize(r.Value)
						if err != nil {
							t.Fatal(err)
						}
						if string(r.Key) != e.Order.ID {
							t.Fatalf("order %s keyed %q", e.Order.ID, r.Key)
						}
						name, country := "-", "-"
						if e.Customer != nil {
							name = e.Customer.Name
						}
						if e.Country != nil {
							country = e.Country.Name
						}
						if e.Payment == nil {
							t.Fatalf("order %s without its payment", e.Order.ID)
						}
						got[e.Order.ID] = fmt.Sprintf("%s/%s/%s/%s@%d", name, country, e.Total.FloatString(2),
							e.Payment.Paid.UTC().Format(time.TimeOnly), r.Timestamp.UnixMilli())
						times[e.Order.ID]++
					}
					if fmt.Sprint(got) == fmt.Sprint(expect) {
						if g == stream.ExactlyOnce {
							for id, n := range times {
								if n != 1 {
									t.Errorf("order %s written %d times under exactly-once", id, n)
								}
							}
						}
						return
					}
					if time.Now().After(deadline) {
						var missing, extra []string
						for id := range expect {
							if got[id] != expect[id] {
								missing = append(missing, id+"="+expect[id]+" got "+got[id])
							}
						}
						for id := range got {
							if _, ok := expect[id]; !ok {
								extra = append(extra, id)
							}
						}
						slices.Sort(missing)
						t.Fatalf("phase %d after 2 minutes: %d orders of %d; wrong or missing: %v; not expected: %v", k, len(got), len(expect), missing, extra)
					}
					time.Sleep(200 * time.Millisecond)
				}
			}
			stopA := start("a", t.TempDir())
			defer stopA()
			dirB := t.TempDir()
			stopB := start("b", dirB)
			defer func() { stopB() }()
			// The customers are in their table before the first order.
			waitCommitted(t, adm, appID, TopicCustomers, int64(len(codes)))
			produce(phases[0]...)
			await(0)
			stopB()
			produce(phases[1]...)
			await(1)
			stopB = start("b", dirB)
			produce(phases[2]...)
			await(2)
			t.Logf("real broker: %v; %d of %d orders paid in time, each written", c.Real(), len(want), 3*30)
		})
	}
}

// recreate deletes and creates topics with their partition counts: a real
// broker keeps them between runs.
func recreate(t *testing.T, adm *kadm.Client, topics map[string]int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var names []string
	for name := range topics {
		names = append(names, name)
	}
	_, _ = adm.DeleteTopics(ctx, names...)
	for name, n := range topics {
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			resps, err := adm.CreateTopics(ctx, n, -1, nil, name)
			if err == nil && resps.Error() == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("create topic %s: %v %v", name, err, resps.Error())
			}
		}
	}
	// Created is not yet known to every broker answering metadata: wait
	// until the topics are listed with their partitions, as the
	// application checks them once at startup.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		td, err := adm.ListTopics(ctx, names...)
		ready := err == nil
		for name, n := range topics {
			d, ok := td[name]
			ready = ready && ok && d.Err == nil && len(d.Partitions) == int(n)
		}
		if ready {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("topics %v not listed with their partitions: %v", names, err)
		}
	}
	t.Cleanup(func() { _, _ = adm.DeleteTopics(context.Background(), names...) })
}

// waitCommitted waits until the group has committed n offsets of topic.
func waitCommitted(t *testing.T, adm *kadm.Client, group, topic string, n int64) {
	t.Helper()
	var sum int64
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		offs, err := adm.FetchOffsets(context.Background(), group)
		if err != nil {
			continue
		}
		sum = 0
		offs.Each(func(o kadm.OffsetResponse) {
			if o.Topic == topic {
				sum += o.At
			}
		})
		if sum >= n {
			return
		}
	}
	t.Fatalf("group %s: committed %d offsets of %s, want %d", group, sum, topic, n)
}
