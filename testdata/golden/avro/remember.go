package shop

// Remember keeps the latest version of every customer in store "customers".
type Remember struct{}

var _ RememberProcessor = (*Remember)(nil)

// Process stores the customer under its key.
func (p *Remember) Process(ctx *RememberContext, key string, value Customer) error {
	return ctx.Customers().Put(key, value)
}
