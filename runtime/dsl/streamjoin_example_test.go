package dsl_test

import (
	"fmt"
	"time"

	"github.com/kgen-dev/kgen/runtime/dsl"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// Orders matched with their payments within five minutes either way; an
// order paid for by no payment is written with "unpaid" once its window
// (and a minute of grace) has closed, never earlier.
func ExampleLeftJoinStreams() {
	s := serde.String{}
	t := stream.NewTopology()
	stream.AddSource(t, "orders", "orders", s, s)
	stream.AddSource(t, "payments", "payments", s, s)
	dsl.LeftJoinStreams(t, "paid", dsl.JoinWindowsOf(5*time.Minute).Grace(time.Minute), s, s, s,
		dsl.StreamJoinOptions{Store: stream.StoreOptions{Changelog: true}},
		func(id, order string, payment *string) string {
			if payment == nil {
				return order + ": unpaid"
			}
			return order + ": paid " + *payment
		}, "orders", "payments")
	stream.AddSink(t, "out", "order-status", s, s, "paid")

	d, err := stream.NewLocalDriver(t, stream.LocalConfig{AppID: "orders"})
	if err != nil {
		panic(err)
	}
	defer d.Close()
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	d.Pipe("orders", []byte("o1"), []byte("book"), nil, at)
	d.Pipe("orders", []byte("o2"), []byte("pen"), nil, at.Add(time.Minute))
	d.Pipe("payments", []byte("o1"), []byte("12 EUR"), nil, at.Add(2*time.Minute))
	d.Pipe("orders", []byte("o3"), []byte("ink"), nil, at.Add(10*time.Minute)) // closes o2's window
	for _, r := range d.Output("order-status") {
		fmt.Printf("%s %s\n", r.Key, r.Value)
	}
	// Output:
	// o1 book: paid 12 EUR
	// o2 pen: unpaid
}
