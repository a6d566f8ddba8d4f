package stream_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/twmb/franz-go/pkg/kgo"
)

// windowRecorder counts each key's records per minute in a window store and
// records each record as a session of its own instant in a session store.
type windowRecorder struct {
	wins state.WindowStore[string, int64]
	sess state.SessionStore[string, string]
}

func (w *windowRecorder) Init(ctx *stream.Context[string, string]) (err error) {
	if w.wins, err = stream.GetWindowStore[string, int64](ctx, "wins"); err != nil {
		return err
	}
	w.sess, err = stream.GetSessionStore[string, string](ctx, "sess")
	return err
}

func (w *windowRecorder) Process(_ *stream.Context[string, string], r stream.Record[string, string]) error {
	ts := r.Timestamp.UnixMilli()
	start := ts - ts%60_000
	n, _, err := w.wins.Fetch(r.Key, start)
	if err != nil {
		return err
	}
	if err := w.wins.Put(r.Key, n+1, start); err != nil {
		return err
	}
	return w.sess.Put(r.Key, ts, ts, r.Value)
}

// TestQueryWindowAndSessionStores: the views of window and session stores
// answer every key's windows and sessions, on Pebble and in memory.
func TestQueryWindowAndSessionStores(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind.name, func(t *testing.T) {
			c := kafkatest.New(t)
			in := c.CreateTopic(t, 2, nil)
			appID := "querywin-" + in
			topo := stream.NewTopology()
			stream.AddSource(topo, "in", in, serde.String{}, serde.String{})
			stream.AddProcessor(topo, "rec", func() stream.Processor[string, string, string, string] { return &windowRecorder{} }, "in")
			// Pebble's stores queryable (read while the unit works),
			// memory's not: both ways of reading.
			opts := stream.StoreOptions{Persistent: kind.persistent, Changelog: true, Queryable: kind.persistent != nil}
			stream.AddWindowStore(topo, "wins", serde.String{}, serde.Int64{}, state.WindowStoreOptions{WindowSize: time.Minute, Retention: time.Hour}, opts, "rec")
			stream.AddSessionStore(topo, "sess", serde.String{}, serde.String{}, time.Hour, opts, "rec")

			base := time.Now().Add(-30 * time.Minute).Truncate(time.Minute)
			wantWins := map[string][]stream.Window[int64]{}
			wantSess := map[string][]stream.Session[string]{}
			var recs []*kgo.Record
			for i := range 300 {
				k := fmt.Sprintf("k%d", i%7)
				ts := base.Add(time.Duration(i) * 3 * time.Second)
				recs = append(recs, &kgo.Record{Topic: in, Key: []byte(k), Value: []byte(fmt.Sprint(i)), Timestamp: ts})
				ms := ts.UnixMilli()
				start := ms - ms%60_000
				ws := wantWins[k]
				if len(ws) == 0 || ws[len(ws)-1].Start != start {
					ws = append(ws, stream.Window[int64]{Start: start})
				}
				ws[len(ws)-1].Value++
				wantWins[k] = ws
				wantSess[k] = append(wantSess[k], stream.Session[string]{Start: ms, End: ms, Value: fmt.Sprint(i)})
			}
			produceAll(t, c.Client(t), recs)
			app, err := stream.New(topo, stream.Brokers(c.Seeds()...), stream.AppID(appID), stream.StateDir(t.TempDir()),
				stream.Parallelism(1), stream.CommitInterval(100*time.Millisecond), stream.Logger(testLogger(t)))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := stream.QueryWindow[string, int64](app, "sess", serde.String{}); err == nil {
				t.Fatal("a window view of a session store was made")
			}
			if _, err := stream.QueryKeyValue(app, "wins", serde.String{}, serde.Int64{}); err == nil {
				t.Fatal("a key-value view of a window store was made")
			}
			wins, err := stream.QueryWindow[string, int64](app, "wins", serde.String{})
			if err != nil {
				t.Fatal(err)
			}
			sess, err := stream.QuerySession[string, string](app, "sess", serde.String{})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- app.Run(ctx) }()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Error(err)
				}
			}()
			waitCaughtUp(t, c.Admin(t), appID, in)
			for k, want := range wantWins {
				for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
					got, served, err := wins.Fetch(k, 0, base.Add(time.Hour).UnixMilli())
					if err != nil && time.Now().Before(deadline) {
						continue // restoring or not yet assigned
					}
					if err != nil {
						t.Fatalf("Fetch(%s): %v", k, err)
					}
					if diff := cmp.Diff(want, got); diff != "" {
						t.Fatalf("Fetch(%s) served by %+v (-want +got):\n%s", k, served, diff)
					}
					// A part of the range: the windows starting in it.
					from, to := want[1].Start, want[2].Start
					if part, _, err := wins.Fetch(k, from, to); err != nil || !cmp.Equal(want[1:3], part) {
						t.Fatalf("Fetch(%s, %d, %d) = %v, %v; want %v", k, from, to, part, err, want[1:3])
					}
					gotSess, _, err := sess.Sessions(k)
					if err != nil {
						t.Fatalf("Sessions(%s): %v", k, err)
					}
					if diff := cmp.Diff(wantSess[k], gotSess); diff != "" {
						t.Fatalf("Sessions(%s) (-want +got):\n%s", k, diff)
					}
					break
				}
			}
		})
	}
}
