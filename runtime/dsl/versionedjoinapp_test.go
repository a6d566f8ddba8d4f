package dsl_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/internal/testlog"
	"github.com/kgen-dev/kgen/runtime/dsl"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state/pebblestore"
	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/twmb/franz-go/pkg/kgo"
)

// priceApp enriches clicks with the price their key had at the click's
// time, from a versioned table, each click waiting 10 s in the join's
// grace buffer for late price updates.
func priceApp(clicks, prices, out string, onDisk bool) *stream.Topology {
	s := serde.String{}
	opts := stream.StoreOptions{Changelog: true}
	if onDisk {
		opts.Persistent = pebblestore.Opener(pebblestore.Options{})
	}
	t := stream.NewTopology()
	stream.AddSource(t, "clicks", clicks, s, s)
	dsl.VersionedTable(t, "prices", prices, s, s, "prices-store", 24*time.Hour, opts)
	dsl.StreamTableLeftJoinWith(t, "enrich", "prices-store", s, s, dsl.StreamTableJoinOptions{Grace: 10 * time.Second, Store: opts},
		func(_ string, click string, price *string) string { return click + "@" + orNull(price) }, "clicks")
	stream.AddSink(t, "out", out, s, s, "enrich")
	return t
}

// The grace buffer of a stream–table join survives a restart: two
// instances process clicks of 20 s on four partitions, the last ~10 s of
// each partition's clicks wait in the buffer, and both stop once every
// click's offset is committed. Two new instances with empty state
// directories restore the buffer from its changelog; a price update whose
// time falls among the buffered clicks, then one later click per key (which
// moves stream time past them), must emit every buffered click, each with
// the price as of its time: the old price before the update's time, the new
// one from it. The last clicks stay buffered: nothing moves stream time
// past them. Both guarantees; Pebble stores under exactly-once.
func TestVersionedJoinGraceBufferSurvivesRestart(t *testing.T) {
	for _, g := range []stream.GuaranteeKind{stream.AtLeastOnce, stream.ExactlyOnce} {
		t.Run(g.String(), func(t *testing.T) {
			c := kafkatest.New(t)
			clicks, prices, out := c.CreateTopic(t, 4, nil), c.CreateTopic(t, 4, nil), c.CreateTopic(t, 4, nil)
			cl := c.Client(t)
			produce := func(rs []*kgo.Record) {
				if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			const users, n = 20, 200
			base := time.Now().Add(-time.Hour).Truncate(time.Second)
			user := func(i int) string { return fmt.Sprintf("u%02d", i%users) }
			var rs []*kgo.Record
			for u := range users {
				rs = append(rs, &kgo.Record{Topic: prices, Key: []byte(user(u)), Value: []byte("p1"), Timestamp: base.Add(-time.Minute)})
			}
			produce(rs)
			// Clicks every 100 ms for 20 s; the price changes to p2 at 15 s.
			update := base.Add(15 * time.Second)
			want := map[string]bool{}
			rs = nil
			for i := range n {
				ts := base.Add(time.Duration(i) * 100 * time.Millisecond)
				rs = append(rs, &kgo.Record{Topic: clicks, Key: []byte(user(i)), Value: fmt.Appendf(nil, "c%d", i), Timestamp: ts})
				price := "p1"
				if !ts.Before(update) {
					price = "p2"
				}
				want[fmt.Sprintf("%s=c%d@%s", user(i), i, price)] = true
			}
			produce(rs)
			appID := "verjoin-" + clicks
			start := func(name string) func() {
				app, err := stream.New(priceApp(clicks, prices, out, g == stream.ExactlyOnce), stream.Brokers(c.Seeds()...),
					stream.AppID(appID), stream.StateDir(t.TempDir()), stream.InstanceID(name), stream.Parallelism(1),
					stream.Guarantee(g), stream.CommitInterval(200*time.Millisecond),
					stream.Logger(testlog.New(t)))
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- app.Run(ctx) }()
				return func() {
					cancel()
					if err := <-done; err != nil {
						t.Errorf("instance %s: %v", name, err)
					}
				}
			}
			// committed is how many clicks the app has committed, over all
			// partitions.
			adm := c.Admin(t)
			committed := func() int64 {
				offs, err := adm.FetchOffsets(context.Background(), appID)
				if err != nil {
					return 0
				}
				var sum int64
				for _, ps := range offs[clicks] {
					if ps.Err == nil {
						sum += ps.At
					}
				}
				return sum
			}
			read := func() map[string]bool {
				got := map[string]bool{}
				for _, r := range c.ReadToEnd(t, out, kafkatest.ReadCommitted()) {
					k := fmt.Sprintf("%s=%s", r.Key, r.Value)
					if !want[k] {
						t.Fatalf("output %q is not a click with the price as of its time", k)
					}
					got[k] = true
				}
				return got
			}

			stopA, stopB := start("a"), start("b")
			deadline := time.Now().Add(90 * time.Second)
			for committed() < n {
				if time.Now().After(deadline) {
					t.Fatalf("after 90 s, %d of %d clicks committed", committed(), n)
				}
				time.Sleep(200 * time.Millisecond)
			}
			stopA()
			stopB()
			before := read()
			if len(before) == 0 || len(before) >= n {
				t.Fatalf("before the restart %d of %d clicks left the buffer; want some, not all", len(before), n)
			}
			for k := range before {
				if k[len(k)-2:] == "p2" {
					t.Fatalf("before the price update, output %q", k)
				}
			}

			stopA, stopB = start("a2"), start("b2")
			defer stopB()
			defer stopA()
			rs = nil
			for u := range users {
				rs = append(rs, &kgo.Record{Topic: prices, Key: []byte(user(u)), Value: []byte("p2"), Timestamp: update})
			}
			produce(rs)
			rs = nil
			for u := range users {
				rs = append(rs, &kgo.Record{Topic: clicks, Key: []byte(user(u)), Value: []byte("late"), Timestamp: base.Add(time.Minute)})
			}
			produce(rs)
			deadline = time.Now().Add(90 * time.Second)
			for {
				got := read()
				if len(got) == len(want) {
					break
				}
				if time.Now().After(deadline) {
					var missing []string
					for k := range want {
						if !got[k] {
							missing = append(missing, k)
						}
					}
					slices.Sort(missing)
					t.Fatalf("after 90 s, %d of %d clicks are not in the output, as %q", len(missing), n, missing[:min(5, len(missing))])
				}
				time.Sleep(300 * time.Millisecond)
			}
		})
	}
}
