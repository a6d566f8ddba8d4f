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

// Trades priced from a versioned table of quotes: each trade joins the
// quote as of its own time, and waits up to 5 s (the grace period) for
// quotes that arrive late. The quote of 10:00:02 arrives after the trade of
// 10:00:03, yet that trade is priced with it; the trade of 10:00:10 moves
// stream time past 10:00:03 + 5 s, which lets the first trade out of the
// buffer; the last trade is still waiting.
func ExampleStreamTableJoinWith() {
	s := serde.String{}
	t := stream.NewTopology()
	stream.AddSource(t, "trades", "trades", s, s)
	dsl.VersionedTable(t, "quotes", "quotes", s, s, "quotes", time.Hour, stream.StoreOptions{Changelog: true})
	dsl.StreamTableJoinWith(t, "price", "quotes", s, s,
		dsl.StreamTableJoinOptions{Grace: 5 * time.Second, Store: stream.StoreOptions{Changelog: true}},
		func(symbol, trade, quote string) string { return trade + " " + symbol + " at " + quote }, "trades")
	stream.AddSink(t, "out", "priced", s, s, "price")

	d, err := stream.NewLocalDriver(t, stream.LocalConfig{AppID: "trades"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close()
	at := func(sec int) time.Time { return time.Date(2026, 1, 1, 10, 0, sec, 0, time.UTC) }
	for _, r := range []struct {
		topic, k, v string
		sec         int
	}{
		{"quotes", "ACME", "100", 0}, {"trades", "ACME", "buy 5", 3}, {"quotes", "ACME", "101", 2},
		{"trades", "ACME", "sell 2", 10},
	} {
		if err := d.Pipe(r.topic, []byte(r.k), []byte(r.v), nil, at(r.sec)); err != nil {
			fmt.Println(err)
			return
		}
	}
	for _, r := range d.Output("priced") {
		fmt.Println(string(r.Value), r.Timestamp.UTC().Format(time.TimeOnly))
	}
	// Output:
	// buy 5 ACME at 101 10:00:03
}
