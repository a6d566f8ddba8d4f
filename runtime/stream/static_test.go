package stream_test

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// TestStaticMembershipRestartWithoutRebalance restarts one of two static
// instances with its state: it takes the same tasks back, on Kafka the
// group's generation does not move (no rebalance), and the counts are
// complete.
func TestStaticMembershipRestartWithoutRebalance(t *testing.T) {
	c := kafkatest.New(t)
	in, out := c.CreateTopic(t, 4, nil), c.CreateTopic(t, 4, nil)
	appID := "static-" + in
	recs, truth := keyedRecords(in, 4000, 200, 11)
	produceAll(t, c.Client(t), recs[:2000])
	dirs := map[string]string{"a": t.TempDir(), "b": t.TempDir()}
	start := func(name string) (*stream.App, func()) {
		app, err := stream.New(countTopology(in, out, onDisk), stream.Brokers(c.Seeds()...),
			stream.AppID(appID), stream.StateDir(dirs[name]), stream.InstanceID(name), stream.StaticMembership(),
			stream.CommitInterval(100*time.Millisecond), stream.Logger(testLogger(t)),
			// Room for a restart on a loaded machine.
			stream.ClientOpts(kgo.SessionTimeout(30*time.Second)))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- app.Run(ctx) }()
		return app, func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("instance %s: %v", name, err)
			}
		}
	}
	a, stopA := start("a")
	b, stopB := start("b")
	defer func() { stopB() }()
	adm := c.Admin(t)
	waitCaughtUp(t, adm, appID, in)
	// A static member that rejoins while the group is still rebalancing
	// makes it rebalance again (KAFKA-9801), so wait until the group has
	// settled: every task owned, both instances running, for a while.
	settled := func() bool {
		sa, sb := a.Stats(), b.Stats()
		return a.State() == stream.Running && b.State() == stream.Running &&
			len(sa.Tasks) > 0 && len(sb.Tasks) > 0 && len(sa.Tasks)+len(sb.Tasks) == 4 && sa.Generation == sb.Generation
	}
	for calm := 0; calm < 10; calm++ {
		waitFor(t, "the group to settle", settled)
		time.Sleep(50 * time.Millisecond)
		if !settled() {
			calm = -1
		}
	}
	before := b.Stats().Generation
	ownedA := slices.SortedFunc(maps.Keys(a.Stats().Tasks), compareTaskIDs)

	stopA()
	a, stopA = start("a")
	defer func() { stopA() }()
	produceAll(t, c.Client(t), recs[2000:])
	waitCaughtUp(t, adm, appID, in)
	waitFor(t, "the restarted instance to own its tasks again", func() bool {
		return a.State() == stream.Running && slices.Equal(slices.SortedFunc(maps.Keys(a.Stats().Tasks), compareTaskIDs), ownedA)
	})
	switch after := b.Stats().Generation; {
	case after == before:
	case c.Real():
		t.Errorf("group generation went from %d to %d: the restart caused a rebalance", before, after)
	default:
		// kfake rebalances a static member that rejoins with different
		// join metadata (Kafka 4.4 does not), and kgen's metadata carries
		// the state each member holds.
		t.Logf("kfake: group generation went from %d to %d", before, after)
	}
	got := lastCounts(t, c, out)
	for k, want := range truth {
		if got[k] < want {
			t.Errorf("key %s: count %d below the true %d", k, got[k], want)
		}
	}
}

func compareTaskIDs(x, y stream.TaskID) int {
	return cmp.Or(cmp.Compare(x.Subtopology, y.Subtopology), cmp.Compare(x.Partition, y.Partition))
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
	}
}
