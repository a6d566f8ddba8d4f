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

// Validate reports every problem at once, each naming its flag and
// variable; Main prints them and exits with status 2 before starting
// anything.
func ExampleConfig_Validate() {
	cfg := appmain.Config{Brokers: []string{"kafka:9092"}, SASLUser: "orders", TLSKeyFile: "client.key", OnProcessError: "retry"}
	fmt.Println(cfg.Validate())
	// Output:
	// -tls-key (KGEN_TLS_KEY) is set but -tls-cert (KGEN_TLS_CERT) is not: a client key needs its certificate
	// -sasl-user (KGEN_SASL_USER) is set but -sasl-mechanism (KGEN_SASL_MECHANISM) is not: the client would connect unauthenticated
	// -on-process-error (KGEN_ON_PROCESS_ERROR): "retry": want fail, continue or dead-letter=TOPIC
}
