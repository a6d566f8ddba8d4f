// Package orders enriches orders with their customers: processor
// remember-customer keeps the latest version of each customer in store
// "customers", and processor enrich joins every order (keyed by customer id)
// with it and adds up its total. The record types come from the Avro schemas
// in schemas/.
package orders

//go:generate go tool kgen generate
