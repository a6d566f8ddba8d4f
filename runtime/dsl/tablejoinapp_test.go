package dsl_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
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

// enrichApp enriches clicks with the user row of their key (a left join,
// so a click that missed its row shows as "click@null").
func enrichApp(clicks, users, out string, onDisk bool) *stream.Topology {
	s := serde.String{}
	opts := stream.StoreOptions{Changelog: true}
	if onDisk {
		opts.Persistent = pebblestore.Opener(pebblestore.Options{})
	}
	t := stream.NewTopology()
	stream.AddSource(t, "clicks", clicks, s, s)
	dsl.Table(t, "users", users, s, s, "users-store", opts)
	dsl.StreamTableLeftJoin[string](t, "enrich", "users-store", func(click string, user *string) string { return click + "@" + orNull(user) }, "clicks")
	stream.AddSink(t, "out", out, s, s, "enrich")
	return t
}

// A stream enriched from a table whose rows arrived first, in an App on two
// instances (the second joins mid-run, so tasks move and their tables are
// restored from the changelog), under both guarantees: every click is
// joined with its user's row, none with a missing one, as the rows are
// older than the clicks and a task holds its stream back while the table's
// partition has unfetched records.
func TestStreamTableJoinInAnApp(t *testing.T) {
	for _, g := range []stream.GuaranteeKind{stream.AtLeastOnce, stream.ExactlyOnce} {
		t.Run(g.String(), func(t *testing.T) {
			c := kafkatest.New(t)
			clicks, users, out := c.CreateTopic(t, 4, nil), c.CreateTopic(t, 4, nil), c.CreateTopic(t, 4, nil)
			cl := c.Client(t)
			produce := func(rs []*kgo.Record) {
				if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			base := time.Now().Add(-time.Hour)
			var rows []*kgo.Record
			for u := range 50 {
				rows = append(rows, &kgo.Record{Topic: users, Key: fmt.Appendf(nil, "u%02d", u), Value: fmt.Appendf(nil, "name%02d", u), Timestamp: base})
			}
			produce(rows)
			want := map[string]bool{}
			click := func(from, to int) []*kgo.Record {
				var rs []*kgo.Record
				for i := from; i < to; i++ {
					u := i % 50
					rs = append(rs, &kgo.Record{Topic: clicks, Key: fmt.Appendf(nil, "u%02d", u), Value: fmt.Appendf(nil, "c%d", i),
						Timestamp: base.Add(time.Duration(i+1) * time.Millisecond)})
					want[fmt.Sprintf("u%02d=c%d@name%02d", u, i, u)] = true
				}
				return rs
			}
			produce(click(0, 500))
			appID := "enrich-" + clicks
			start := func(name string) func() {
				app, err := stream.New(enrichApp(clicks, users, out, g == stream.ExactlyOnce), stream.Brokers(c.Seeds()...),
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
			stopA := start("a")
			defer stopA()
			time.Sleep(500 * time.Millisecond)
			stopB := start("b")
			defer stopB()
			produce(click(500, 1000))
			deadline := time.Now().Add(90 * time.Second)
			for {
				got := map[string]bool{}
				for _, r := range c.ReadToEnd(t, out, kafkatest.ReadCommitted()) {
					got[fmt.Sprintf("%s=%s", r.Key, r.Value)] = true
				}
				var wrong []string
				for k := range got {
					if !want[k] {
						wrong = append(wrong, k)
					}
				}
				if len(wrong) > 0 {
					slices.Sort(wrong)
					t.Fatalf("%d joined clicks that are not the click with its user's row, as %q", len(wrong), wrong[:min(5, len(wrong))])
				}
				if len(got) == len(want) {
					break
				}
				if time.Now().After(deadline) {
					missing := 0
					for k := range maps.Keys(want) {
						if !got[k] {
							missing++
						}
					}
					t.Fatalf("after 90 s, %d of %d clicks are not in the output", missing, len(want))
				}
				time.Sleep(300 * time.Millisecond)
			}
		})
	}
}

// An App refuses to join a stream with a table whose topics have different
// partition counts: the join makes them one sub-topology, whose topics must
// be co-partitioned, and a key's row would be in another task than its
// records.
func TestStreamTableJoinAppNeedsCoPartitioning(t *testing.T) {
	c := kafkatest.New(t)
	clicks, users, out := c.CreateTopic(t, 4, nil), c.CreateTopic(t, 2, nil), c.CreateTopic(t, 4, nil)
	app, err := stream.New(enrichApp(clicks, users, out, false), stream.Brokers(c.Seeds()...),
		stream.AppID("enrich-copart-"+clicks), stream.StateDir(t.TempDir()), stream.Logger(testlog.New(t)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err = app.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "co-partitioned topics with different partition counts") {
		t.Fatalf("Run error = %v, want one about co-partitioned topics", err)
	}
}
