package stream_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/twmb/franz-go/pkg/kgo"
)

// boomCounter counts words into a store and fails on the word "boom" after
// having counted the words before it in the same sentence.
type boomCounter struct {
	store state.KeyValueStore[string, int64]
	fail  bool
}

func (c *boomCounter) Init(ctx *stream.Context[string, int64]) error {
	var err error
	c.store, err = stream.GetKeyValueStore[string, int64](ctx, "counts")
	return err
}

func (c *boomCounter) Process(ctx *stream.Context[string, int64], r stream.Record[string, string]) error {
	for _, w := range strings.Fields(r.Value) {
		if w == "boom" && c.fail {
			return errors.New("boom")
		}
		n, _, err := c.store.Get(w)
		if err != nil {
			return err
		}
		if err := c.store.Put(w, n+1); err != nil {
			return err
		}
		ctx.Forward(stream.Record[string, int64]{Key: w, Value: n + 1})
	}
	return nil
}

func boomTopology(in, out string, persistent state.Opener, fail bool) *stream.Topology {
	t := stream.NewTopology()
	stream.AddSource(t, "in", in, serde.String{}, serde.String{})
	stream.AddProcessor(t, "count", func() stream.Processor[string, string, string, int64] { return &boomCounter{fail: fail} }, "in")
	stream.AddKeyValueStore(t, "counts", serde.String{}, serde.Int64{}, stream.StoreOptions{Persistent: persistent, Changelog: true}, "count")
	stream.AddSink(t, "out", out, serde.String{}, serde.Int64{}, "count")
	return t
}

// A record that fails under Fail must leave the stores exactly as of the
// last commit: before, the clean shutdown flushed the failed record's own
// writes to the store and the changelog while its offset stayed uncommitted,
// so every restart counted the words before "boom" again (1, 2, 3, 4, 5
// instead of 2 for "one").
func TestFailedRecordLeavesStateAsOfLastCommit(t *testing.T) {
	for _, kind := range storeKinds {
		for _, g := range []stream.GuaranteeKind{stream.AtLeastOnce, stream.ExactlyOnce} {
			t.Run(kind.name+"/"+g.String(), func(t *testing.T) {
				c := kafkatest.New(t)
				in, out := c.CreateTopic(t, 2, nil), c.CreateTopic(t, 2, nil)
				// Both sentences on one partition (same key), the other partition idle.
				produceAll(t, c.Client(t), []*kgo.Record{
					{Topic: in, Key: []byte("s"), Value: []byte("one two")},
					{Topic: in, Key: []byte("s"), Value: []byte("one boom")},
				})
				dir := t.TempDir()
				opts := []stream.Option{stream.Brokers(c.Seeds()...), stream.AppID("boom-" + in), stream.StateDir(dir),
					stream.Parallelism(1), stream.Guarantee(g), stream.Logger(testLogger(t))}
				for run := range 4 {
					_, err := runApp(t, boomTopology(in, out, kind.persistent, true), opts...)
					var re *stream.RecordError
					if !errors.As(err, &re) || re.Offset != 1 {
						t.Fatalf("run %d: error %v, want the RecordError of the second sentence", run+1, err)
					}
				}
				// Fixed: "boom" is a word like any other now. The app must see
				// the state of the last commit, i.e. none, and count each
				// word of the input once.
				if _, err := runApp(t, boomTopology(in, out, kind.persistent, false), append(opts, stream.ExitWhenCaughtUp())...); err != nil {
					t.Fatal(err)
				}
				got := map[string]int64{}
				for _, r := range readCommitted(t, c, out, g) {
					v, err := serde.Int64{}.Deserialize(r.Value)
					if err != nil {
						t.Fatal(err)
					}
					got[string(r.Key)] = v // the last count of each word
				}
				want := map[string]int64{"one": 2, "two": 1, "boom": 1}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("last counts = %v, want %v: failed runs left their writes in the store", got, want)
				}
			})
		}
	}
}

// readCommitted reads a topic to its end; read_committed under exactly-once.
func readCommitted(t *testing.T, c *kafkatest.Cluster, topic string, g stream.GuaranteeKind) []*kgo.Record {
	t.Helper()
	if g == stream.ExactlyOnce {
		return c.ReadToEnd(t, topic, kafkatest.ReadCommitted())
	}
	return c.ReadToEnd(t, topic)
}

// Two instances on one state directory would share the instance id kept
// there, so one transactional id and one group.instance.id, and fence each
// other: the second is refused, with the directory and the way out.
func TestSecondInstanceOnOneStateDirIsRefused(t *testing.T) {
	c := kafkatest.New(t)
	in, out := c.CreateTopic(t, 2, nil), c.CreateTopic(t, 2, nil)
	dir := t.TempDir()
	opts := []stream.Option{stream.Brokers(c.Seeds()...), stream.AppID("lock-" + in), stream.StateDir(dir),
		stream.Parallelism(1), stream.Logger(testLogger(t))}
	first, err := stream.New(countTopology(in, out, nil), opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- first.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("first instance: %v", err)
		}
	}()
	waitFor(t, "the first instance to run", func() bool { return first.State() == stream.Running })
	_, err = runApp(t, countTopology(in, out, nil), opts...)
	want := filepath.Join(dir, "lock-"+in)
	if err == nil || !strings.Contains(err.Error(), want+" is in use") || !strings.Contains(err.Error(), "StateDir") {
		t.Fatalf("second instance: error %v, want one naming %s as in use and saying how to give each its own", err, want)
	}

	// A reset on the running instance's directory would wipe it under that
	// instance: the way out is to stop it, not another directory.
	resetter, err := stream.New(countTopology(in, out, nil), opts...)
	if err != nil {
		t.Fatal(err)
	}
	err = resetter.Reset(context.Background(), stream.ResetOptions{})
	wantReset := fmt.Sprintf("reset lock-%s: state directory %s is in use by a running instance of application %q, "+
		"in this process or another: stop it first (a reset wipes this directory and refuses while any instance runs)", in, want, "lock-"+in)
	if err == nil || err.Error() != wantReset {
		t.Fatalf("Reset beside a running instance on its directory:\n got %v\nwant %s", err, wantReset)
	}
}

func TestOptionsAreValidated(t *testing.T) {
	topo := stream.NewTopology()
	stream.AddSource(topo, "in", "in", serde.String{}, serde.String{})
	stream.AddSink(topo, "out", "out", serde.String{}, serde.String{}, "in")
	base := []stream.Option{stream.Brokers("127.0.0.1:1"), stream.AppID("v")}
	for _, tc := range []struct {
		opt  stream.Option
		want string
	}{
		{stream.Logger(nil), "Logger(nil)"},
		{stream.Parallelism(0), "Parallelism(0)"},
		{stream.BufferRecords(-1), "BufferRecords(-1)"},
		{stream.CacheRecords(-5), "CacheRecords(-5)"},
		{stream.StandbyReplicas(-1), "StandbyReplicas(-1)"},
		{stream.CommitInterval(-time.Second), "CommitInterval(-1s)"},
		{stream.FetchGrace(-time.Second), "FetchGrace(-1s)"},
		{stream.Guarantee(7), "Guarantee(7)"},
		{stream.OnProduceError(stream.DeadLetter("")), "dead-letter topic"},
	} {
		_, err := stream.New(topo, append(base, tc.opt)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New with %s: error %v, want one naming it", tc.want, err)
		}
	}
	if _, err := stream.New(topo, base...); err != nil {
		t.Fatalf("New with valid options: %v", err)
	}
}

// A store that lost its files, or whose files are damaged, must be rebuilt
// from its changelog: before, the checkpoint next to it said it was
// complete, and the counts silently started again from zero.
func TestLostOrDamagedStoreIsRestored(t *testing.T) {
	for _, damage := range []struct {
		name string
		do   func(t *testing.T, storeDir string)
	}{
		{"directory deleted", func(t *testing.T, storeDir string) {
			if err := os.RemoveAll(storeDir); err != nil {
				t.Fatal(err)
			}
		}},
		{"files damaged", func(t *testing.T, storeDir string) {
			files, _ := filepath.Glob(filepath.Join(storeDir, "MANIFEST-*"))
			if len(files) == 0 {
				t.Fatalf("no MANIFEST in %s", storeDir)
			}
			for _, f := range files {
				if err := os.WriteFile(f, bytes.Repeat([]byte{0xde, 0xad}, 512), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}},
	} {
		t.Run(damage.name, func(t *testing.T) {
			c := kafkatest.New(t)
			in, out := c.CreateTopic(t, 2, nil), c.CreateTopic(t, 2, nil)
			appID := "lost-" + in
			dir := t.TempDir()
			recs, truth := keyedRecords(in, 2000, 40, 5)
			run := func() *stream.App {
				t.Helper()
				app, err := runApp(t, countTopology(in, out, onDisk), stream.Brokers(c.Seeds()...), stream.AppID(appID),
					stream.StateDir(dir), stream.Parallelism(2), stream.Logger(testLogger(t)), stream.ExitWhenCaughtUp())
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				return app
			}
			produceAll(t, c.Client(t), recs[:1000])
			run()
			stores, _ := filepath.Glob(filepath.Join(dir, appID, "*", "counts"))
			if len(stores) != 2 {
				t.Fatalf("store directories %v, want one per partition", stores)
			}
			for _, s := range stores {
				damage.do(t, s)
			}
			produceAll(t, c.Client(t), recs[1000:])
			if app := run(); app.Stats().Restored == 0 {
				t.Fatal("nothing restored into the lost stores")
			}
			if got := lastCounts(t, c, out); !mapsEqual(truth, got) {
				t.Fatalf("counts after the restart differ from the truth: %s", mapDiff(truth, got))
			}
		})
	}
}
