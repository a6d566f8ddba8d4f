// Command kgen generates typed Kafka stream processors from a topology spec
// (kgen.yaml): processor interfaces and contexts, serdes, the topology, a test
// driver and a main. Run "kgen help" for the commands.
package main

import (
	"os"

	"github.com/kgen-dev/kgen/gen/cli"
)

func main() {
	os.Exit(cli.Run(os.Args[1:], os.Stdout, os.Stderr))
}
