package orders

import "math/big"

// Factories holds the functions of the operators of kgen.yaml, called from
// every task at once (they share no state). Pass it to NewTestDriver,
// Application or Main.
type Factories struct{}

var _ Processors = Factories{}

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

// WithCountryKey maps a paid order to its customer's country code, the key
// of the global table countries: none for an order without a customer or a
// customer without a country (the order is then written without one).
func (Factories) WithCountryKey(orderID string, e EnrichedOrder) (code string, ok bool) {
	if e.Customer == nil || e.Customer.Country == nil {
		return "", false
	}
	return *e.Customer.Country, true
}

// WithCountry is the joiner of leftJoin "with-country": the order with its
// customer's country, nil when it has none or the table does not know it.
// Every instance holds all of the table, so the orders need not be
// partitioned by country.
func (Factories) WithCountry(orderID string, e EnrichedOrder, c *Country) EnrichedOrder {
	e.Country = c
	return e
}
