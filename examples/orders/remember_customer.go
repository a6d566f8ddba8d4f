package orders

// RememberCustomer keeps the latest version of every customer in store
// "customers", keyed by customer id.
type RememberCustomer struct{}

var _ RememberCustomerProcessor = (*RememberCustomer)(nil)

// Process stores the customer.
func (p *RememberCustomer) Process(ctx *RememberCustomerContext, key string, value Customer) error {
	return ctx.Customers().Put(key, value)
}
