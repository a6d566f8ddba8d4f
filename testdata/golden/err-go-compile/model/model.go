// Package model does not compile.
package model

// Thing uses a type that does not exist.
//
//kgen:record
type Thing struct {
	Name Strin `json:"name"`
}
