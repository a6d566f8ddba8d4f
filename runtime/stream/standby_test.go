package stream_test

import (
	"context"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// TestStandbyTakesOverWithOnlyTheTail runs two instances with one standby
// replica each way, stops one, and checks that the survivor's promoted
// tasks restored only what their standbys had not applied yet, and that
// the counts stay right.
func TestStandbyTakesOverWithOnlyTheTail(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind.name, func(t *testing.T) {
			c := kafkatest.New(t)
			in, out := c.CreateTopic(t, 4, nil), c.CreateTopic(t, 4, nil)
			appID := "standby-" + in
			recs, truth := keyedRecords(in, 20_000, 2_000, 7)
			produceAll(t, c.Client(t), recs[:10_000])
			start := func(name string) (*stream.App, context.CancelFunc, chan error) {
				app, err := stream.New(countTopology(in, out, kind.persistent), stream.Brokers(c.Seeds()...),
					stream.AppID(appID), stream.StateDir(t.TempDir()), stream.InstanceID(name),
					stream.Parallelism(1), stream.StandbyReplicas(1), stream.CommitInterval(100*time.Millisecond),
					stream.Logger(testLogger(t)))
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- app.Run(ctx) }()
				return app, cancel, done
			}
			a, stopA, doneA := start("a")
			b, stopB, doneB := start("b")
			defer func() { stopB(); <-doneB }()
			adm := c.Admin(t)
			waitCaughtUp(t, adm, appID, in)

			// Wait until each instance keeps standbys of the other's tasks
			// and they have caught up with the changelog.
			deadline := time.Now().Add(time.Minute)
			for {
				sa, sb := a.Stats(), b.Stats()
				if len(sa.Tasks) > 0 && len(sb.Tasks) > 0 && len(sa.Standbys) == len(sb.Tasks) && len(sb.Standbys) == len(sa.Tasks) &&
					sa.StandbyLag == 0 && sb.StandbyLag == 0 && !restoring(sa) && !restoring(sb) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("standbys not in place: a has tasks %v standbys %v (lag %d), b has tasks %v standbys %v (lag %d)",
						keys(sa.Tasks), sa.Standbys, sa.StandbyLag, keys(sb.Tasks), sb.Standbys, sb.StandbyLag)
				}
				time.Sleep(50 * time.Millisecond)
			}
			moving := keys(a.Stats().Tasks)
			restoredBefore := b.Stats().Restored
			stopped := time.Now()
			stopA()
			if err := <-doneA; err != nil {
				t.Fatal(err)
			}
			t.Logf("instance a closed in %v", time.Since(stopped))
			produceAll(t, c.Client(t), recs[10_000:])
			waitCaughtUp(t, adm, appID, in)
			t.Logf("survivor caught up %v after a was told to stop", time.Since(stopped))
			for deadline := time.Now().Add(10 * time.Second); len(b.Stats().Tasks) != 4; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("survivor owns %d tasks, want all 4", len(b.Stats().Tasks))
				}
			}
			// The promoted tasks restored only what their standbys had not
			// read yet (the old owner's last commit): a fraction of what a
			// restore from scratch replays.
			ends, err := adm.ListEndOffsets(context.Background(), appID+"-counts-changelog")
			if err != nil {
				t.Fatal(err)
			}
			var full int64
			for _, id := range moving {
				o, _ := ends.Lookup(appID+"-counts-changelog", id.Partition)
				full += o.Offset
			}
			restored := int64(b.Stats().Restored - restoredBefore)
			t.Logf("took over %d tasks restoring %d of their %d changelog records", len(moving), restored, full)
			if restored*4 > full {
				t.Fatalf("survivor restored %d of %d changelog records to take over %v: the standbys did not keep it warm", restored, full, moving)
			}
			got := lastCounts(t, c, out)
			for k, want := range truth {
				if got[k] < want {
					t.Errorf("key %s: count %d below the true %d", k, got[k], want)
				}
			}
		})
	}
}

func keys[V any](m map[stream.TaskID]V) []stream.TaskID {
	var out []stream.TaskID
	for k := range m {
		out = append(out, k)
	}
	return out
}

func restoring(s stream.Stats) bool {
	for _, ts := range s.Tasks {
		if ts.Restoring {
			return true
		}
	}
	return false
}
