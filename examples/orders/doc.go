// Package orders enriches orders: each order (keyed by customer id) is
// joined with its customer as of its placing (leftJoin with the table of
// topic customers), re-keyed by order id, joined with its payment when the
// two are at most 10 minutes apart (a stream-stream join), and given its
// customer's country from the global table countries (a leftJoin with a
// globalTable, by the country code its customer names). The record types
// come from the Avro schemas in schemas/.
package orders

//go:generate go tool kgen generate
