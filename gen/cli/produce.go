package cli

import (
	"fmt"
	"io"
)

func cmdProduce(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "kgen produce: not yet")
	return ExitInternal
}

func cmdConsume(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "kgen consume: not yet")
	return ExitInternal
}
