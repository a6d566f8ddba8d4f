package dsl_test

import (
	"fmt"
	"time"

	"github.com/kgen-dev/kgen/runtime/dsl"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// Orders enriched from a table of customers: a left join, so an order whose
// customer has no row is kept, joined with nil. The order reads the row the
// table holds when the order is processed.
func ExampleStreamTableLeftJoin() {
	s := serde.String{}
	t := stream.NewTopology()
	stream.AddSource(t, "orders", "orders", s, s)
	dsl.Table(t, "customers", "customers", s, s, "customers", stream.StoreOptions{Changelog: true})
	dsl.StreamTableLeftJoin[string](t, "enrich", "customers", func(order string, customer *string) string {
		if customer == nil {
			return order + " for an unknown customer"
		}
		return order + " for " + *customer
	}, "orders")
	stream.AddSink(t, "out", "enriched", s, s, "enrich")

	d, err := stream.NewLocalDriver(t, stream.LocalConfig{AppID: "orders", Partitions: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close()
	for _, r := range []struct{ topic, k, v string }{
		{"customers", "c1", "Ann"}, {"orders", "c1", "book"}, {"orders", "c2", "pen"}, {"customers", "c1", "Ann B."}, {"orders", "c1", "lamp"},
	} {
		if err := d.Pipe(r.topic, []byte(r.k), []byte(r.v), nil, time.Now()); err != nil {
			fmt.Println(err)
			return
		}
	}
	// Each key's records in order (the two keys may be on two partitions).
	out := d.Output("enriched")
	for _, key := range []string{"c1", "c2"} {
		for _, r := range out {
			if string(r.Key) == key {
				fmt.Println(string(r.Value))
			}
		}
	}
	// Output:
	// book for Ann
	// lamp for Ann B.
	// pen for an unknown customer
}
