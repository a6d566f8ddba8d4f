// Package model holds the record type of the err-timestamp golden case.
package model

import "time"

// Event has one time field and one that is not.
//
//kgen:record
type Event struct {
	Name string    `json:"name"`
	At   time.Time `json:"at"`
}
