package stream_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestAppInputEndingInTransactionMarker: an input whose last records were
// written in a transaction ends with a commit marker, which is not a
// record. A task waits, with no deadline, for an input known to hold
// records not fetched yet; were the marker counted as one, the task would
// wait for it forever once the input's records were taken (a fetch session
// sends no further answer for an unchanged partition), and the other
// input's later records would never be processed.
func TestAppInputEndingInTransactionMarker(t *testing.T) {
	for _, g := range []stream.GuaranteeKind{stream.AtLeastOnce, stream.ExactlyOnce} {
		t.Run(fmt.Sprint(g), func(t *testing.T) {
			c := kafkatest.New(t)
			left, right, out := c.CreateTopic(t, 1, nil), c.CreateTopic(t, 1, nil), c.CreateTopic(t, 1, nil)
			base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			txn := c.Client(t, kgo.TransactionalID("marker-"+left), kgo.TransactionTimeout(time.Minute))
			if err := txn.BeginTransaction(); err != nil {
				t.Fatalf("begin: %v", err)
			}
			var recs []*kgo.Record
			for i := range 10 {
				recs = append(recs, &kgo.Record{Topic: left, Value: []byte(fmt.Sprint(i)), Timestamp: base.Add(time.Duration(i) * time.Second)})
			}
			if err := txn.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
			if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
				t.Fatalf("commit: %v", err)
			}
			// The commit returns before a real broker has written the
			// partition's marker: until then a read_committed fetch sees the
			// input empty and ended at the open transaction's start, and the
			// task rightly takes the other input's records first.
			awaitStable(t, ctx, c, left, 11) // ten records and the marker
			recs = nil
			for i := 10; i < 20; i++ {
				recs = append(recs, &kgo.Record{Topic: right, Value: []byte(fmt.Sprint(i)), Timestamp: base.Add(time.Duration(i) * time.Second)})
			}
			produceAll(t, c.Client(t), recs)

			var mu sync.Mutex
			var seen []string
			topo := stream.NewTopology()
			stream.AddSource(topo, "left", left, serde.Bytes{}, serde.String{})
			stream.AddSource(topo, "right", right, serde.Bytes{}, serde.String{})
			stream.AddProcessor(topo, "merge", func() stream.Processor[[]byte, string, []byte, string] {
				return stream.ProcessorFunc[[]byte, string, []byte, string](func(ctx *stream.Context[[]byte, string], r stream.Record[[]byte, string]) error {
					mu.Lock()
					seen = append(seen, r.Value)
					mu.Unlock()
					ctx.Forward(r)
					return nil
				})
			}, "left", "right")
			stream.AddSink(topo, "out", out, serde.Bytes{}, serde.String{}, "merge")
			app, err := stream.New(topo, stream.Brokers(c.Seeds()...), stream.AppID("marker-"+left), stream.Parallelism(1),
				stream.Guarantee(g), stream.StateDir(t.TempDir()), stream.Logger(testLogger(t)), stream.ExitWhenCaughtUp())
			if err != nil {
				t.Fatal(err)
			}
			if err := app.Run(ctx); err != nil {
				mu.Lock()
				defer mu.Unlock()
				t.Fatalf("Run: %v (processed %d of 20: the task waited for the marker)", err, len(seen))
			}
			mu.Lock()
			defer mu.Unlock()
			if ctx.Err() != nil {
				// Run stops cleanly when its context ends.
				t.Fatalf("Run did not exit once caught up (processed %d of 20): the task waited for the marker, or the group's offset stopped before it", len(seen))
			}
			if len(seen) != 20 {
				t.Fatalf("processed %d records, want 20: %v", len(seen), seen)
			}
			for i, v := range seen {
				if v != fmt.Sprint(i) {
					t.Fatalf("record %d is %s: not in timestamp order: %v", i, v, seen)
				}
			}
		})
	}
}

// awaitStable waits until partition 0 of topic is stable (its last stable
// offset, what a read_committed reader sees) up to end.
func awaitStable(t *testing.T, ctx context.Context, c *kafkatest.Cluster, topic string, end int64) {
	t.Helper()
	adm := c.Admin(t)
	for {
		offs, err := adm.ListCommittedOffsets(ctx, topic)
		if err == nil {
			if o, ok := offs.Lookup(topic, 0); ok && o.Err == nil && o.Offset >= end {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s/0 not stable up to %d: %v", topic, end, err)
		case <-time.After(5 * time.Millisecond):
		}
	}
}
