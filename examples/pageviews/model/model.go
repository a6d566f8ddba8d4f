// Package model holds the record types of the page views example.
package model

// PageView is one page a user viewed.
//
//kgen:record
type PageView struct {
	User string `json:"user"`
	Page string `json:"page"`
}
