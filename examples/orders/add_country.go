package orders

import "github.com/kgen-dev/kgen/runtime/stream"

// AddCountry adds to each paid order its customer's country from the global
// table countries: every instance holds all of it, so the orders need not be
// partitioned by country. An order with no customer, no country or an
// unknown country is written without one (a left join).
type AddCountry struct {
	countries *stream.GlobalTable[string, Country]
}

var _ AddCountryProcessor = (*AddCountry)(nil)

// Init finds the global table, which NewTopologyWithGlobals adds.
func (p *AddCountry) Init(ctx *AddCountryContext) error {
	var err error
	p.countries, err = stream.GetGlobalTable[string, Country](ctx.Runtime(), GlobalCountries)
	return err
}

// Process forwards the order with its country when there is one.
func (p *AddCountry) Process(ctx *AddCountryContext, orderID string, e EnrichedOrder) error {
	if e.Customer != nil && e.Customer.Country != nil {
		c, ok, err := p.countries.Get(*e.Customer.Country)
		if err != nil {
			return err
		}
		if ok {
			e.Country = &c
		}
	}
	// Forward keeps the record's time, the join's (the later of order and
	// payment), and its headers.
	ctx.Forward(orderID, e)
	return nil
}
