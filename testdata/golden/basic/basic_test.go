package basic

import (
	"testing"
	"time"

	"github.com/kgen-dev/kgen/runtime/streamtest"
	"github.com/kgen-dev/kgen/testdata/golden/basic/model"
)

// enricher records what the generated adapter calls: Init, Process,
// Punctuate and Close.
type enricher struct {
	calls []string
}

func (e *enricher) Init(ctx *EnrichContext) error {
	e.calls = append(e.calls, "init")
	return nil
}

func (e *enricher) Process(ctx *EnrichContext, key string, value model.Order) error {
	e.calls = append(e.calls, "process "+value.ID)
	c, ok, err := ctx.CustomersById().Get(value.CustomerID)
	if err != nil {
		return err
	}
	out := model.Enriched{Order: value}
	if ok {
		out.Customer = &c
	}
	ctx.Forward(key, out)
	return ctx.Pending().Put(value.ID, value)
}

func (e *enricher) Punctuate(ctx *EnrichContext, now time.Time) error {
	e.calls = append(e.calls, "punctuate "+now.Format("15:04:05"))
	return nil
}

func (e *enricher) Close() error {
	e.calls = append(e.calls, "close")
	return nil
}

type remember struct{}

// testProcessors makes the test's processors, keeping every enricher made.
type testProcessors struct{ made *[]*enricher }

func (p testProcessors) Enrich() EnrichProcessor {
	e := &enricher{}
	*p.made = append(*p.made, e)
	return e
}

func (testProcessors) RememberCustomer() RememberCustomerProcessor { return remember{} }

func (remember) Process(ctx *RememberCustomerContext, key string, value model.Customer) error {
	return ctx.CustomersById().Put(key, value)
}

func TestAdapter(t *testing.T) {
	var made []*enricher
	d, err := NewTestDriver(testProcessors{&made}, streamtest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	if err := d.PipeCustomers("c1", model.Customer{ID: "c1", Name: "Ann"}, t0); err != nil {
		t.Fatal(err)
	}
	// The event time comes from PlacedAt (the spec's timestamp field), not
	// from the record timestamp given here.
	for i, id := range []string{"o1", "o2"} {
		o := model.Order{ID: id, CustomerID: "c1", PlacedAt: t0.Add(time.Duration(i) * time.Minute)}
		if err := d.PipeOrders("c1", o, t0); err != nil {
			t.Fatal(err)
		}
	}
	got, err := d.ReadEnriched()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Value.Customer == nil || got[0].Value.Customer.Name != "Ann" || !got[1].Timestamp.Equal(t0.Add(time.Minute)) {
		t.Fatalf("enriched = %+v", got)
	}
	pending, err := d.Pending()
	if err != nil {
		t.Fatal(err)
	}
	if o, ok, err := pending.Get("o2"); err != nil || !ok || o.ID != "o2" {
		t.Errorf("pending[o2] = %+v, %v, %v", o, ok, err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	var calls []string
	for _, e := range made {
		calls = append(calls, e.calls...)
	}
	// One task (orders and customers have 4 partitions, all records went to
	// one of them); stream time moved a minute, so the 30s punctuation ran.
	want := map[string]bool{"init": true, "process o1": true, "process o2": true, "close": true}
	var punctuated bool
	for _, c := range calls {
		if len(c) > 9 && c[:9] == "punctuate" {
			punctuated = true
			continue
		}
		delete(want, c)
	}
	if len(want) > 0 || !punctuated {
		t.Errorf("calls %v: missing %v, punctuated %v", calls, want, punctuated)
	}
}
