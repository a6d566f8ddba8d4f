package dsl_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/internal/testlog"
	"github.com/kgen-dev/kgen/runtime/dsl"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A foreign-key join in an App, on a broker, between tables of different
// partition counts (orders 4, customers 2): the subscription topic is made
// with the customers' count and the response topic with the orders', and
// every order ends joined with its customer's latest row, after the
// customers change and some orders move to another customer.
func TestForeignKeyJoinInAnApp(t *testing.T) {
	c := kafkatest.New(t)
	orders, customers, out := c.CreateTopic(t, 4, nil), c.CreateTopic(t, 2, nil), c.CreateTopic(t, 4, nil)
	cl := c.Client(t)
	produce := func(rs ...*kgo.Record) {
		if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	base := time.Now().Add(-time.Hour)
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	want := map[string]string{} // order -> its latest result
	name := map[string]string{}
	for i := range 10 {
		k := fmt.Sprintf("c%d", i)
		name[k] = "first" + k
		produce(&kgo.Record{Topic: customers, Key: []byte(k), Value: []byte(name[k]), Timestamp: at(i)})
	}
	order := map[string]string{}
	for i := range 100 {
		k, v := fmt.Sprintf("o%03d", i), fmt.Sprintf("c%d:%d", i%10, i)
		order[k] = v
		produce(&kgo.Record{Topic: orders, Key: []byte(k), Value: []byte(v), Timestamp: at(100 + i)})
	}
	s := serde.String{}
	topo := stream.NewTopology()
	opts := stream.StoreOptions{Changelog: true}
	dsl.Table(topo, "orders", orders, s, s, "orders-store", opts)
	dsl.Table(topo, "customers", customers, s, s, "customers-store", opts)
	dsl.ForeignKeyJoin(topo, "join", dsl.TableRef{Node: "orders", Store: "orders-store"}, dsl.TableRef{Node: "customers", Store: "customers-store"},
		fkOf, func(a, b string) string { return a + "+" + b }, dsl.FKJoinSerdes[string, string, string, string]{LeftKey: s, LeftValue: s, RightKey: s, RightValue: s})
	dsl.ToStream[string, string](topo, "updates", "join")
	stream.AddSink(topo, "out", out, s, dsl.Nullable[string](s), "updates")
	appID := "fk-" + orders
	app, err := stream.New(topo, stream.Brokers(c.Seeds()...), stream.AppID(appID), stream.StateDir(t.TempDir()),
		stream.CommitInterval(200*time.Millisecond), stream.Logger(testlog.New(t)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx) }()
	stopped := false
	defer func() {
		cancel()
		if stopped {
			return
		}
		if err := <-done; err != nil {
			t.Errorf("app: %v", err)
		}
	}()
	// Changes while the app runs: customers renamed, orders moved.
	for i := range 10 {
		k := fmt.Sprintf("c%d", i)
		name[k] = "second" + k
		produce(&kgo.Record{Topic: customers, Key: []byte(k), Value: []byte(name[k]), Timestamp: at(1000 + i)})
	}
	for i := 0; i < 100; i += 7 {
		k, v := fmt.Sprintf("o%03d", i), fmt.Sprintf("c%d:%d", (i+3)%10, i)
		order[k] = v
		produce(&kgo.Record{Topic: orders, Key: []byte(k), Value: []byte(v), Timestamp: at(2000 + i)})
	}
	for k, v := range order {
		fk := *fkOf(v)
		want[k] = v + "+" + name[fk]
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		got := map[string]string{}
		for _, r := range c.ReadToEnd(t, out) {
			got[string(r.Key)] = string(r.Value)
		}
		wrong := 0
		for k, v := range want {
			if got[k] != v {
				wrong++
			}
		}
		if wrong == 0 && len(got) == len(want) {
			break
		}
		select {
		case err := <-done:
			stopped = true
			t.Fatalf("the app stopped: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 90 s, %d of %d orders do not show their customer's latest row (%d keys in the output)", wrong, len(want), len(got))
		}
		time.Sleep(300 * time.Millisecond)
	}
	details, err := kadm.NewClient(cl).ListTopics(context.Background(),
		appID+"-join-subscription-registration-repartition", appID+"-join-subscription-response-repartition")
	if err != nil {
		t.Fatal(err)
	}
	for topic, n := range map[string]int{appID + "-join-subscription-registration-repartition": 2, appID + "-join-subscription-response-repartition": 4} {
		if got := len(details[topic].Partitions); got != n {
			t.Errorf("%s: %d partitions, want %d", topic, got, n)
		}
	}
}
