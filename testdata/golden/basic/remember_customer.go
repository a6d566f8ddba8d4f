package basic

import (
	"github.com/kgen-dev/kgen/testdata/golden/basic/model"
)

// RememberCustomer is the code of processor "remember-customer". kgen wrote this file once and
// will not touch it again: it is yours to edit.
type RememberCustomer struct{}

var _ RememberCustomerProcessor = (*RememberCustomer)(nil)

// Process handles one record from "customers".
func (p *RememberCustomer) Process(ctx *RememberCustomerContext, key string, value model.Customer) error {
	// Your code here.
	return nil
}
