package orders

import "math/big"

// Enrich joins each order with its customer from store "customers" and adds
// up its total.
type Enrich struct{}

var _ EnrichProcessor = (*Enrich)(nil)

// Process forwards the order with its customer (nil when unknown) and total.
func (p *Enrich) Process(ctx *EnrichContext, key string, value Order) error {
	out := EnrichedOrder{Order: value, Total: new(big.Rat)}
	for _, l := range value.Lines {
		if l.Price == nil {
			continue
		}
		line := new(big.Rat).Mul(l.Price, big.NewRat(int64(l.Qty), 1))
		out.Total.Add(out.Total, line)
	}
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
