package shop

// Enrich joins each order with its customer from store "customers".
type Enrich struct{}

var _ EnrichProcessor = (*Enrich)(nil)

// Process forwards the order with its customer, when the store knows it.
func (p *Enrich) Process(ctx *EnrichContext, key string, value Order) error {
	out := EnrichedOrder{Order: value}
	c, ok, err := ctx.Customers().Get(key)
	if err != nil {
		return err
	}
	if ok {
		out.Customer = &c
	}
	ctx.Forward(key, out)
	return nil
}
