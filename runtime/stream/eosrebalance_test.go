package stream_test

import (
	"context"
	"sync"
	"testing"

	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// Under exactly-once, a rebalance aborts the open transaction; the tasks an
// instance keeps must then go on from their stores, which hold exactly the
// committed state, instead of being rebuilt from their changelogs (before,
// a second instance joining made the first restore all its stores, in
// memory from offset 0). The counts stay exact.
func TestExactlyOnceRebalanceKeepsTasksWarm(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind.name, func(t *testing.T) {
			c := kafkatest.New(t)
			in, out := c.CreateTopic(t, 4, nil), c.CreateTopic(t, 4, nil)
			appID := "eos-warm-" + in
			recs, truth := keyedRecords(in, 8000, 400, 11)
			produceAll(t, c.Client(t), recs[:4000])
			start := func(name string) (*stream.App, func()) {
				app, err := stream.New(countTopology(in, out, kind.persistent), stream.Brokers(c.Seeds()...),
					stream.AppID(appID), stream.StateDir(t.TempDir()), stream.InstanceID(name),
					stream.Parallelism(1), stream.Guarantee(stream.ExactlyOnce), stream.Logger(testLogger(t)))
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- app.Run(ctx) }()
				var once sync.Once
				return app, func() {
					once.Do(func() {
						cancel()
						if err := <-done; err != nil {
							t.Errorf("instance %s: %v", name, err)
						}
					})
				}
			}
			a, stopA := start("a")
			defer stopA()
			adm := c.Admin(t)
			waitCaughtUp(t, adm, appID, in)
			restoredBefore := a.Stats().Restored
			b, stopB := start("b")
			defer stopB()
			waitFor(t, "both instances to own tasks", func() bool {
				sa, sb := a.Stats(), b.Stats()
				return len(sa.Tasks) > 0 && len(sb.Tasks) > 0 && len(sa.Tasks)+len(sb.Tasks) == 4 &&
					a.State() == stream.Running && b.State() == stream.Running
			})
			kept := keys(a.Stats().Tasks)
			produceAll(t, c.Client(t), recs[4000:])
			waitCaughtUp(t, adm, appID, in)
			if got := a.Stats().Restored; got != restoredBefore {
				t.Errorf("instance a restored %d changelog records while keeping tasks %v through the rebalance, want 0", got-restoredBefore, kept)
			}
			if a.Stats().Aborts == 0 {
				t.Logf("no transaction was aborted by the rebalance: nothing to rebuild this time")
			}
			if len(kept) == 0 {
				t.Fatal("instance a kept no task")
			}
			stopB()
			stopA()
			checkExactlyOnce(t, c, out, truth)
		})
	}
}
