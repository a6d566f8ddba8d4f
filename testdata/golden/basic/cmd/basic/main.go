// Command basic runs the basic stream processing application. With no
// -brokers (or KGEN_BROKERS) it starts an embedded development broker.
//
// kgen wrote this file once and will not touch it again: it is yours to edit.
package main

import "github.com/kgen-dev/kgen/testdata/golden/basic"

func main() {
	basic.Main(basic.Processors{
		Enrich:           func() basic.EnrichProcessor { return &basic.Enrich{} },
		RememberCustomer: func() basic.RememberCustomerProcessor { return &basic.RememberCustomer{} },
	})
}
