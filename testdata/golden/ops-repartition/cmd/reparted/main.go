// Command reparted runs the reparted stream processing application. With no
// -brokers (or KGEN_BROKERS) it starts an embedded development broker.
//
// kgen wrote this file once and will not touch it again: it is yours to edit.
package main

import opsrepartition "github.com/kgen-dev/kgen/testdata/golden/ops-repartition"

func main() {
	opsrepartition.Main(opsrepartition.Factories{})
}
