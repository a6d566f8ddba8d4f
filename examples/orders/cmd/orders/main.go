// Command orders runs the orders stream processing application. With no
// -brokers (or KGEN_BROKERS) it starts an embedded development broker.
//
// kgen wrote this file once and will not touch it again: it is yours to edit.
package main

import "github.com/kgen-dev/kgen/examples/orders"

func main() {
	orders.Main(orders.Factories{})
}
