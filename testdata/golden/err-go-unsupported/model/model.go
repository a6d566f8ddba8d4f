// Package model holds record types the loader must reject.
package model

// Bad has fields kgen cannot carry.
//
//kgen:record
type Bad struct {
	Count   int            `json:"count"`
	Events  chan string    `json:"events"`
	ByID    map[int]string `json:"by_id"`
	Handler func()         `json:"-"`
	Fine    string         `json:"fine"`
}
