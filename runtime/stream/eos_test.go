package stream_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// checkExactlyOnce reads the committed output and checks that each key's
// counts are exactly 1..truth[key], in order: no duplicate, no loss.
func checkExactlyOnce(t *testing.T, c *kafkatest.Cluster, out string, truth map[string]int64) {
	t.Helper()
	seen := map[string][]int64{}
	for _, r := range c.ReadToEnd(t, out, kafkatest.ReadCommitted()) {
		n, err := serde.Int64{}.Deserialize(r.Value)
		if err != nil {
			t.Fatalf("output %s/%d@%d: %v", r.Topic, r.Partition, r.Offset, err)
		}
		seen[string(r.Key)] = append(seen[string(r.Key)], n)
	}
	bad := 0
	for k, want := range truth {
		got := seen[k]
		ok := int64(len(got)) == want
		for i := 0; ok && i < len(got); i++ {
			ok = got[i] == int64(i+1)
		}
		if !ok && bad < 5 {
			bad++
			t.Errorf("key %s: counts %v, want 1..%d exactly once", k, abbreviate(got), want)
		}
	}
	if len(seen) != len(truth) {
		t.Errorf("output has %d keys, want %d", len(seen), len(truth))
	}
}

func abbreviate(xs []int64) string {
	if len(xs) <= 12 {
		return fmt.Sprint(xs)
	}
	return fmt.Sprintf("%v ... %v (%d values)", xs[:6], xs[len(xs)-6:], len(xs))
}

func TestExactlyOnceCleanRun(t *testing.T) {
	c := kafkatest.New(t)
	in, out := c.CreateTopic(t, 4, nil), c.CreateTopic(t, 4, nil)
	recs, truth := keyedRecords(in, 4000, 40, 5)
	produceAll(t, c.Client(t), recs)
	app, err := runApp(t, countTopology(in, out, onDisk),
		stream.Brokers(c.Seeds()...), stream.AppID("eos-"+in), stream.StateDir(t.TempDir()),
		stream.Parallelism(2), stream.Guarantee(stream.ExactlyOnce), stream.Logger(testLogger(t)), stream.ExitWhenCaughtUp())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	checkExactlyOnce(t, c, out, truth)
	if app.Stats().Commits == 0 {
		t.Fatal("no transaction committed")
	}
}

// crashingCounter counts like keyCounter but panics on the record that
// brings a shared countdown to zero, standing in for a crash mid-transaction.
type crashingCounter struct {
	keyCounter
	countdown *atomic.Int64
}

func (c *crashingCounter) Process(ctx *stream.Context[string, int64], r stream.Record[string, string]) error {
	if c.countdown.Add(-1) == 0 {
		panic("simulated crash")
	}
	return c.keyCounter.Process(ctx, r)
}

func crashingTopology(in, out string, persistent state.Opener, countdown *atomic.Int64) *stream.Topology {
	t := stream.NewTopology()
	stream.AddSource(t, "in", in, serde.String{}, serde.String{})
	stream.AddProcessor(t, "count", func() stream.Processor[string, string, string, int64] {
		return &crashingCounter{countdown: countdown}
	}, "in")
	stream.AddKeyValueStore(t, "counts", serde.String{}, serde.Int64{}, stream.StoreOptions{Persistent: persistent, Changelog: true}, "count")
	stream.AddSink(t, "out", out, serde.String{}, serde.Int64{}, "count")
	return t
}

// TestExactlyOnceAcrossFailures stops the app mid-transaction several times
// (a panic with the Fail policy aborts the open transaction) and restarts
// it, with and without its state directory. The committed output must
// still hold every count exactly once.
func TestExactlyOnceAcrossFailures(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind.name, func(t *testing.T) {
			c := kafkatest.New(t)
			in, out := c.CreateTopic(t, 2, nil), c.CreateTopic(t, 2, nil)
			appID := "eos-crash-" + in
			recs, truth := keyedRecords(in, 6000, 30, 6)
			produceAll(t, c.Client(t), recs)
			dir := t.TempDir()
			for i, crashAfter := range []int64{700, 1500, 900, 0} {
				stateDir := dir
				if i == 2 {
					stateDir = t.TempDir() // lose the local state once
				}
				var countdown atomic.Int64
				countdown.Store(crashAfter)
				app, err := stream.New(crashingTopology(in, out, kind.persistent, &countdown), stream.Brokers(c.Seeds()...),
					stream.AppID(appID), stream.StateDir(stateDir), stream.InstanceID("only"), stream.Parallelism(1),
					stream.Guarantee(stream.ExactlyOnce), stream.CommitInterval(50*time.Millisecond),
					stream.Logger(testLogger(t)), stream.ExitWhenCaughtUp())
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				err = app.Run(ctx)
				cancel()
				var re *stream.RecordError
				switch {
				case crashAfter > 0 && !errors.As(err, &re):
					t.Fatalf("run %d: error %v, want the simulated crash", i, err)
				case crashAfter == 0 && err != nil:
					t.Fatalf("final run: %v", err)
				}
			}
			checkExactlyOnce(t, c, out, truth)
		})
	}
}

// TestExactlyOnceRestoreSkipsOpenTransaction restores a store whose
// changelog ends in a transaction that stays open (a crashed owner's): the
// restore must take the committed writes, leave out the open ones, and not
// wait for the open transaction to time out.
func TestExactlyOnceRestoreSkipsOpenTransaction(t *testing.T) {
	c := kafkatest.New(t)
	in, out := c.CreateTopic(t, 1, nil), c.CreateTopic(t, 1, nil)
	appID := "eos-open-" + in
	changelog := appID + "-counts-changelog"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	compact := "compact"
	if _, err := c.Admin(t).CreateTopic(ctx, 1, -1, map[string]*string{"cleanup.policy": &compact}, changelog); err != nil {
		t.Fatalf("create changelog: %v", err)
	}
	t.Cleanup(func() { c.Admin(t).DeleteTopics(context.Background(), changelog) })

	write := func(txnID string, n int64, commit bool) *kgo.Client {
		cl := c.Client(t, kgo.TransactionalID(txnID), kgo.TransactionTimeout(time.Minute))
		if err := cl.BeginTransaction(); err != nil {
			t.Fatalf("begin: %v", err)
		}
		v, _ := serde.Int64{}.Serialize(n)
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: changelog, Key: []byte("k"), Value: v}).FirstErr(); err != nil {
			t.Fatalf("produce to changelog: %v", err)
		}
		if commit {
			if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
				t.Fatalf("commit: %v", err)
			}
		}
		return cl
	}
	write(appID+"-earlier-owner", 5, true)
	zombie := write(appID+"-crashed-owner", 100, false)
	t.Cleanup(func() { zombie.EndTransaction(context.Background(), kgo.TryAbort) })

	produceAll(t, c.Client(t), []*kgo.Record{
		{Topic: in, Key: []byte("k"), Value: []byte("a")},
		{Topic: in, Key: []byte("k"), Value: []byte("b")},
	})
	if _, err := runApp(t, countTopology(in, out, onDisk), stream.Brokers(c.Seeds()...), stream.AppID(appID),
		stream.StateDir(t.TempDir()), stream.Guarantee(stream.ExactlyOnce), stream.Logger(testLogger(t)),
		stream.ExitWhenCaughtUp()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	var got []int64
	for _, r := range c.ReadToEnd(t, out, kafkatest.ReadCommitted()) {
		n, err := serde.Int64{}.Deserialize(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, n)
	}
	if fmt.Sprint(got) != "[6 7]" {
		t.Errorf("counts %v, want [6 7]: the committed 5 restored, the open 100 left out", got)
	}
}

// A commit period that produced nothing (every record filtered out) still
// commits its offsets under exactly-once. franz-go ends a transaction with no
// record in it without an EndTxn, so offsets added to it would hang in an
// open transaction until it timed out; kgen commits them as a consumer does.
// ExitWhenCaughtUp returns only once the committed offsets reach the ends.
func TestExactlyOnceCommitsOffsetsWithoutOutput(t *testing.T) {
	c := kafkatest.New(t)
	in, out := c.CreateTopic(t, 4, nil), c.CreateTopic(t, 4, nil)
	recs, _ := keyedRecords(in, 2000, 40, 9)
	produceAll(t, c.Client(t), recs)
	topo := stream.NewTopology()
	stream.AddSource(topo, "in", in, serde.String{}, serde.String{})
	stream.AddProcessor(topo, "drop", func() stream.Processor[string, string, string, string] {
		return stream.ProcessorFunc[string, string, string, string](func(*stream.Context[string, string], stream.Record[string, string]) error {
			return nil
		})
	}, "in")
	stream.AddSink(topo, "out", out, serde.String{}, serde.String{}, "drop")
	appID := "eos-no-output-" + in
	app, err := runApp(t, topo, stream.Brokers(c.Seeds()...), stream.AppID(appID), stream.StateDir(t.TempDir()),
		stream.Parallelism(2), stream.Guarantee(stream.ExactlyOnce), stream.Logger(testLogger(t)), stream.ExitWhenCaughtUp())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if st := app.Stats(); st.Commits == 0 || st.Aborts != 0 {
		t.Errorf("%d commits, %d aborts; want some commits and no abort", st.Commits, st.Aborts)
	}
	waitCaughtUp(t, c.Admin(t), appID, in)
	if got := c.ReadToEnd(t, out); len(got) != 0 {
		t.Errorf("%d records in the output, want none", len(got))
	}
}
