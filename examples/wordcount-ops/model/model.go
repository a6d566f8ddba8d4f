// Package model holds the record types of the operator word count example.
package model

// Sentence is a line of text to count the words of.
//
//kgen:record
type Sentence struct {
	Text string `json:"text"`
}
