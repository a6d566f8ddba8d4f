package stream_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// windowCount counts records per key and minute in the window store
// "win", and emits each new count under key@start.
type windowCount struct {
	store state.WindowStore[string, int64]
}

func (p *windowCount) Init(ctx *stream.Context[string, int64]) error {
	var err error
	p.store, err = stream.GetWindowStore[string, int64](ctx, "win")
	return err
}

func (p *windowCount) Process(ctx *stream.Context[string, int64], r stream.Record[string, string]) error {
	start := r.Timestamp.UnixMilli() / 60_000 * 60_000
	n, _, err := p.store.Fetch(r.Key, start)
	if err != nil {
		return err
	}
	if err := p.store.Put(r.Key, n+1, start); err != nil {
		return err
	}
	ctx.Forward(stream.Record[string, int64]{Key: fmt.Sprintf("%s@%d", r.Key, start), Value: n + 1, Timestamp: r.Timestamp})
	return nil
}

func windowCountTopology(in, out string, persistent state.Opener) *stream.Topology {
	t := stream.NewTopology()
	stream.AddSource(t, "in", in, serde.String{}, serde.String{})
	stream.AddProcessor(t, "count", func() stream.Processor[string, string, string, int64] { return &windowCount{} }, "in")
	stream.AddWindowStore(t, "win", serde.String{}, serde.Int64{}, state.WindowStoreOptions{WindowSize: time.Minute, Retention: time.Hour},
		stream.StoreOptions{Changelog: true, Persistent: persistent}, "count")
	stream.AddSink(t, "out", out, serde.String{}, serde.Int64{}, "count")
	return t
}

// TestWindowStoreStandbyTakesOver runs two instances of a windowed count
// with one standby replica each way, stops one, and checks that the
// survivor took its tasks over from standbys that followed the window
// store's changelog (restoring only a fraction of it), with every
// window's count still right.
func TestWindowStoreStandbyTakesOver(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind.name, func(t *testing.T) {
			c := kafkatest.New(t)
			in, out := c.CreateTopic(t, 4, nil), c.CreateTopic(t, 4, nil)
			appID := "winstandby-" + in
			recs, _ := keyedRecords(in, 20_000, 500, 11)
			base := time.Now().Add(-10 * time.Minute).UnixMilli()
			truth := map[string]int64{}
			for i, r := range recs {
				ts := base + int64(i)*10
				r.Timestamp = time.UnixMilli(ts)
				truth[fmt.Sprintf("%s@%d", r.Key, ts/60_000*60_000)]++
			}
			produceAll(t, c.Client(t), recs[:10_000])
			start := func(name string) (*stream.App, context.CancelFunc, chan error) {
				app, err := stream.New(windowCountTopology(in, out, kind.persistent), stream.Brokers(c.Seeds()...),
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
			stopA()
			if err := <-doneA; err != nil {
				t.Fatal(err)
			}
			produceAll(t, c.Client(t), recs[10_000:])
			waitCaughtUp(t, adm, appID, in)
			changelog := appID + "-win-changelog"
			ends, err := adm.ListEndOffsets(context.Background(), changelog)
			if err != nil {
				t.Fatal(err)
			}
			var full int64
			for _, id := range moving {
				o, _ := ends.Lookup(changelog, id.Partition)
				full += o.Offset
			}
			restored := int64(b.Stats().Restored - restoredBefore)
			t.Logf("took over %d tasks restoring %d of their %d changelog records", len(moving), restored, full)
			if restored*4 > full {
				t.Errorf("survivor restored %d of %d changelog records to take over %v: the standbys did not keep it warm", restored, full, moving)
			}
			// At least once: a window's count may go past the truth (a
			// record processed again), never below it (a store that lost
			// counts).
			got := lastCounts(t, c, out)
			for k, want := range truth {
				if got[k] < want {
					t.Errorf("window %s: count %d below the true %d", k, got[k], want)
				}
			}
		})
	}
}
