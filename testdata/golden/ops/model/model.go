// Package model holds the record types of the ops golden case.
package model

// Sentence is a line of text.
//
//kgen:record
type Sentence struct {
	Text string `json:"text"`
}

// Profile is a person and the city they live in.
//
//kgen:record
type Profile struct {
	Name string `json:"name"`
	City string `json:"city"`
}
