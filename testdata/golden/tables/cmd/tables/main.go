// Command tables runs the tables stream processing application. With no
// -brokers (or KGEN_BROKERS) it starts an embedded development broker.
//
// kgen wrote this file once and will not touch it again: it is yours to edit.
package main

import "github.com/kgen-dev/kgen/testdata/golden/tables"

func main() {
	tables.Main(tables.Factories{})
}
