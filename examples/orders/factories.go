package orders

import "math/big"

// Factories makes the processors of kgen.yaml for the runtime: one method per
// processor, each called once per task; its other methods are the functions
// of the operators, called from every task at once (they share no state).
// Pass it to NewDriver, App or MainWithGlobals (not to the generated NewTestDriver and
// Run: add-country needs the global table countries, which the spec cannot
// declare yet; see global.go).
type Factories struct{}

var _ Processors = Factories{}

// AddCountry makes processor "add-country".
func (Factories) AddCountry() AddCountryProcessor { return &AddCountry{} }

// WithCustomer is the joiner of leftJoin "with-customer": the order, its
// total, and its customer as of now, nil when unknown (the order is kept).
func (Factories) WithCustomer(customerID string, o Order, c *Customer) EnrichedOrder {
	out := EnrichedOrder{Order: o, Customer: c, Total: new(big.Rat)}
	for _, l := range o.Lines {
		if l.Price == nil {
			continue
		}
		out.Total.Add(out.Total, new(big.Rat).Mul(l.Price, big.NewRat(int64(l.Qty), 1)))
	}
	return out
}

// ByOrder is the key selector of selectKey "by-order": payments are keyed by
// order id, so the enriched order is too before it meets them.
func (Factories) ByOrder(customerID string, e EnrichedOrder) string { return e.Order.ID }

// Paid is the joiner of join "paid": an order meets its payment when they are
// at most 10 minutes apart.
func (Factories) Paid(orderID string, e EnrichedOrder, p Payment) EnrichedOrder {
	e.Payment = &p
	return e
}
