package appmain_test

import (
	"context"
	"fmt"

	"github.com/kgen-dev/kgen/runtime/appmain"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// With no brokers, Run starts the embedded development broker with the
// application's topics. ExitWhenCaughtUp ends the run once the (here empty)
// input is consumed.
func ExampleRun() {
	app := appmain.App{
		ID:     "appmain-example",
		Topics: map[string]int32{"lines": 1, "copies": 1},
		Topology: func() (*stream.Topology, error) {
			t := stream.NewTopology()
			stream.AddSource(t, "lines", "lines", serde.String{}, serde.String{})
			stream.AddSink(t, "copies", "copies", serde.String{}, serde.String{}, "lines")
			return t, nil
		},
	}
	err := appmain.Run(context.Background(), appmain.Config{}, app, stream.ExitWhenCaughtUp())
	fmt.Println("stopped:", err)
	// Output: stopped: <nil>
}
