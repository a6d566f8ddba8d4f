// Package orders enriches orders: each order (keyed by customer id) is
// joined with its customer as of its placing (leftJoin with the table of
// topic customers), re-keyed by order id, joined with its payment when the
// two are at most 10 minutes apart (a stream-stream join), and given its
// customer's country from the global table countries by the hand-written
// processor add-country. The record types come from the Avro schemas in
// schemas/. The spec cannot declare global tables yet: global.go adds it to
// the generated topology (NewTopologyWithGlobals, NewDriver, App).
package orders

//go:generate go tool kgen generate
