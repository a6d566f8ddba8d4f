package stream_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// Under exactly-once, a rebalance that revokes tasks commits the open
// transaction, as Kafka Streams does, instead of aborting it: the tasks an
// instance keeps go on running (never closed, never rebuilt) and replay
// nothing from their changelogs. Before, franz-go's transaction session
// aborted every transaction a revocation ran into, and each instance
// rebuilt all its tasks. Here a third instance joins a group of two while
// records flow and transactions stay open for seconds; the counts stay
// exact.
func TestExactlyOnceRebalanceCommitsAndKeepsTasks(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind.name, func(t *testing.T) {
			c := kafkatest.New(t)
			in, out := c.CreateTopic(t, 6, nil), c.CreateTopic(t, 6, nil)
			appID := "eos-keep-" + in
			recs, truth := keyedRecords(in, 9000, 600, 11)
			produceAll(t, c.Client(t), recs[:3000])
			start := func(name string) (*stream.App, func()) {
				app, err := stream.New(countTopology(in, out, kind.persistent), stream.Brokers(c.Seeds()...),
					stream.AppID(appID), stream.StateDir(t.TempDir()), stream.InstanceID(name),
					stream.Parallelism(1), stream.Guarantee(stream.ExactlyOnce),
					// Long transactions: the join below lands inside one.
					stream.CommitInterval(5*time.Second), stream.Logger(testLogger(t)))
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
			b, stopB := start("b")
			defer stopB()
			waitFor(t, "a and b to own three restored tasks each", func() bool {
				return settled(a, 3) && settled(b, 3)
			})
			adm := c.Admin(t)
			waitCaughtUp(t, adm, appID, in)
			before := map[string]stream.Stats{"a": a.Stats(), "b": b.Stats()}

			// Records keep flowing while c joins, so both transactions are
			// open when their tasks are revoked.
			cl := c.Client(t)
			flowing := make(chan struct{})
			go func() {
				defer close(flowing)
				for i := 3000; i < 6000; i += 100 {
					produceAll(t, cl, recs[i:i+100])
					time.Sleep(20 * time.Millisecond)
				}
			}()
			time.Sleep(300 * time.Millisecond)
			cApp, stopC := start("c")
			defer stopC()
			waitFor(t, "every instance to own two restored tasks", func() bool {
				return settled(a, 2) && settled(b, 2) && settled(cApp, 2)
			})
			<-flowing
			produceAll(t, cl, recs[6000:])
			waitCaughtUp(t, adm, appID, in)

			for name, app := range map[string]*stream.App{"a": a, "b": b} {
				was, now := before[name], app.Stats()
				if now.Aborts != was.Aborts {
					t.Errorf("instance %s aborted %d transactions in the rebalance, want 0", name, now.Aborts-was.Aborts)
				}
				if now.Restored != was.Restored {
					t.Errorf("instance %s restored %d changelog records, want 0: its tasks stayed put", name, now.Restored-was.Restored)
				}
				if now.TasksCreated != was.TasksCreated {
					t.Errorf("instance %s created %d tasks, want 0: the ones it kept must go on", name, now.TasksCreated-was.TasksCreated)
				}
				if got := now.TasksClosed - was.TasksClosed; got != 1 {
					t.Errorf("instance %s closed %d tasks, want 1 (the one c took)", name, got)
				}
				if now.Commits <= was.Commits {
					t.Errorf("instance %s committed nothing after the rebalance", name)
				}
			}
			stopC()
			stopB()
			stopA()
			checkExactlyOnce(t, c, out, truth)
		})
	}
}

// settled says whether app runs with n tasks, none restoring, as its
// published Stats say: a Stats showing them restored counts what they
// restored.
func settled(app *stream.App, n int) bool {
	st := app.Stats()
	if app.State() != stream.Running || len(st.Tasks) != n {
		return false
	}
	for _, ts := range st.Tasks {
		if ts.Restoring {
			return false
		}
	}
	return true
}
