// Command rekeyedjoins runs the rekeyedjoins stream processing application. With no
// -brokers (or KGEN_BROKERS) it starts an embedded development broker.
//
// kgen wrote this file once and will not touch it again: it is yours to edit.
package main

import joinsrekeyed "github.com/kgen-dev/kgen/testdata/golden/joins-rekeyed"

func main() {
	joinsrekeyed.Main(joinsrekeyed.Factories{})
}
