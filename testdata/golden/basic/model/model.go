// Package model holds the record types of the basic golden case.
package model

import "time"

// Order is an order as placed.
//
//kgen:record
type Order struct {
	ID         string            `json:"id"`
	CustomerID string            `json:"customer_id"`
	Items      []Item            `json:"items"`
	PlacedAt   time.Time         `json:"placed_at"`
	Note       *string           `json:"note,omitempty"`
	Attrs      map[string]string `json:"attrs"`
	internal   int               // unexported: not part of the record
}

// Item is one line of an order.
type Item struct {
	SKU   string  `json:"sku"`
	Qty   int32   `json:"qty"`
	Price float64 `json:"price"`
}

// Customer is who placed an order.
//
//kgen:record
type Customer struct {
	ID   string   `json:"id"`
	Name string   `json:"name"`
	Tags []string `json:"tags"`
}

// Enriched is an order with its customer, when known.
//
//kgen:record
type Enriched struct {
	Order    Order     `json:"order"`
	Customer *Customer `json:"customer"`
}
