// Package model holds the record types of the err-timestamp golden case.
package model

import "time"

// Event has one time field and some that are not.
//
//kgen:record
type Event struct {
	Name  string    `json:"name"`
	At    time.Time `json:"at"`
	Count int32     `json:"count"`
}

// Plain is a struct without the record comment: naming it in the spec must
// say so, not that the type is unknown.
type Plain struct {
	At time.Time
}
