package stream_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/internal/testlog"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/state/pebblestore"
	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// testLogger keeps the app's log and prints it if the test fails.
func testLogger(t *testing.T) *slog.Logger { return testlog.New(t) }

func produceAll(t *testing.T, cl *kgo.Client, recs []*kgo.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// onDisk keeps a store in Pebble, under the task directory.
var onDisk = pebblestore.Opener(pebblestore.Options{})

// storeKinds are the two ways to keep a store, for tests that run on both:
// persistent nil keeps it in memory.
var storeKinds = []struct {
	name       string
	persistent state.Opener
}{
	{"pebble", onDisk},
	{"memory", nil},
}

// countTopology counts records per key into a store (persistent, or in
// memory when nil) and emits each new count.
func countTopology(in, out string, persistent state.Opener) *stream.Topology {
	return countTopologyOpts(in, out, stream.StoreOptions{Persistent: persistent, Changelog: true})
}

// countTopologyOpts is countTopology with its store's options.
func countTopologyOpts(in, out string, opts stream.StoreOptions) *stream.Topology {
	t := stream.NewTopology()
	stream.AddSource(t, "in", in, serde.String{}, serde.String{})
	stream.AddProcessor(t, "count", func() stream.Processor[string, string, string, int64] { return &keyCounter{} }, "in")
	stream.AddKeyValueStore(t, "counts", serde.String{}, serde.Int64{}, opts, "count")
	stream.AddSink(t, "out", out, serde.String{}, serde.Int64{}, "count")
	return t
}

type keyCounter struct {
	store state.KeyValueStore[string, int64]
}

func (c *keyCounter) Init(ctx *stream.Context[string, int64]) (err error) {
	c.store, err = stream.GetKeyValueStore[string, int64](ctx, "counts")
	return err
}

func (c *keyCounter) Process(ctx *stream.Context[string, int64], r stream.Record[string, string]) error {
	n, _, err := c.store.Get(r.Key)
	if err != nil {
		return err
	}
	n++
	if err := c.store.Put(r.Key, n); err != nil {
		return err
	}
	ctx.Forward(stream.Record[string, int64]{Key: r.Key, Value: n})
	return nil
}

// keyedRecords makes n records over keys key-0..key-(keys-1), keyed so the
// default partitioner spreads them, and the true count per key.
func keyedRecords(topic string, n, keys int, seed uint64) ([]*kgo.Record, map[string]int64) {
	rng := rand.New(rand.NewPCG(seed, seed))
	truth := map[string]int64{}
	recs := make([]*kgo.Record, n)
	for i := range recs {
		k := fmt.Sprintf("key-%d", rng.IntN(keys))
		truth[k]++
		recs[i] = &kgo.Record{Topic: topic, Key: []byte(k), Value: []byte(fmt.Sprint(i))}
	}
	return recs, truth
}

// lastCounts reads the output topic and keeps, per key, the largest count.
func lastCounts(t *testing.T, c *kafkatest.Cluster, topic string) map[string]int64 {
	t.Helper()
	got := map[string]int64{}
	for _, r := range c.ReadToEnd(t, topic) {
		n, err := serde.Int64{}.Deserialize(r.Value)
		if err != nil {
			t.Fatalf("output %s/%d@%d: %v", r.Topic, r.Partition, r.Offset, err)
		}
		got[string(r.Key)] = max(got[string(r.Key)], n)
	}
	return got
}

func runApp(t *testing.T, topo *stream.Topology, opts ...stream.Option) (*stream.App, error) {
	t.Helper()
	app, err := stream.New(topo, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return app, app.Run(ctx)
}

func TestAppCountsExactlyOnCleanRun(t *testing.T) {
	c := kafkatest.New(t)
	in, out := c.CreateTopic(t, 4, nil), c.CreateTopic(t, 4, nil)
	recs, truth := keyedRecords(in, 5000, 50, 1)
	produceAll(t, c.Client(t), recs)
	app, err := runApp(t, countTopology(in, out, onDisk),
		stream.Brokers(c.Seeds()...), stream.AppID("count-"+in), stream.StateDir(t.TempDir()),
		stream.Parallelism(2), stream.Logger(testLogger(t)), stream.ExitWhenCaughtUp())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := lastCounts(t, c, out); !mapsEqual(truth, got) {
		t.Fatalf("counts differ from the truth: %s", mapDiff(truth, got))
	}
	st := app.Stats()
	if st.Processed != 5000 || st.Commits == 0 {
		t.Fatalf("stats: processed %d, commits %d; want 5000 and some", st.Processed, st.Commits)
	}
	if app.State() != stream.Stopped {
		t.Fatalf("state after Run = %v, want stopped", app.State())
	}
}

func TestAppRestoresFromChangelog(t *testing.T) {
	c := kafkatest.New(t)
	in, out := c.CreateTopic(t, 2, nil), c.CreateTopic(t, 2, nil)
	appID := "restore-" + in
	dir := t.TempDir()
	recs, truth := keyedRecords(in, 3000, 30, 2)
	cl := c.Client(t)
	run := func(stateDir string) *stream.App {
		t.Helper()
		app, err := runApp(t, countTopology(in, out, onDisk),
			stream.Brokers(c.Seeds()...), stream.AppID(appID), stream.StateDir(stateDir),
			stream.Parallelism(1), stream.Logger(testLogger(t)), stream.ExitWhenCaughtUp())
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		return app
	}
	// First run builds the state; its changelog has one record per input.
	produceAll(t, cl, recs[:1000])
	if app := run(dir); app.Stats().Restored != 0 {
		t.Fatalf("first run restored %d records from an empty changelog", app.Stats().Restored)
	}
	// Restart with the state directory: the checkpoint is at the changelog's
	// end, so nothing is replayed.
	produceAll(t, cl, recs[1000:2000])
	if app := run(dir); app.Stats().Restored != 0 {
		t.Fatalf("restart with state restored %d records, want 0 (checkpoint at the end)", app.Stats().Restored)
	}
	// Restart without it: the whole changelog is replayed before processing.
	produceAll(t, cl, recs[2000:])
	ends, err := c.Admin(t).ListEndOffsets(context.Background(), appID+"-counts-changelog")
	if err != nil {
		t.Fatal(err)
	}
	var logged int64
	ends.Each(func(o kadm.ListedOffset) { logged += o.Offset })
	app := run(t.TempDir())
	if got := app.Stats().Restored; logged == 0 || got != uint64(logged) {
		t.Fatalf("restart without state restored %d records, want all %d in the changelog", got, logged)
	}
	if got := lastCounts(t, c, out); !mapsEqual(truth, got) {
		t.Fatalf("counts after restores differ from the truth: %s", mapDiff(truth, got))
	}
}

func TestAppRestoresOnlyTheTail(t *testing.T) {
	c := kafkatest.New(t)
	in, out := c.CreateTopic(t, 1, nil), c.CreateTopic(t, 1, nil)
	appID := "tail-" + in
	dir := t.TempDir()
	recs, _ := keyedRecords(in, 1500, 10, 3)
	cl := c.Client(t)
	produceAll(t, cl, recs[:1000])
	if _, err := runApp(t, countTopology(in, out, onDisk), stream.Brokers(c.Seeds()...),
		stream.AppID(appID), stream.StateDir(dir), stream.Parallelism(1), stream.Logger(testLogger(t)), stream.ExitWhenCaughtUp()); err != nil {
		t.Fatal(err)
	}
	// Another writer appends 500 records to the changelog behind the
	// checkpoint's back, as a newer owner would have.
	changelog := appID + "-counts-changelog"
	var tail []*kgo.Record
	for i := range 500 {
		v, _ := serde.Int64{}.Serialize(int64(1000 + i))
		tail = append(tail, &kgo.Record{Topic: changelog, Partition: 0, Key: fmt.Appendf(nil, "tail-key-%d", i), Value: v})
	}
	produceAll(t, c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner())), tail)
	changelogEnd := func() int64 {
		ends, err := c.Admin(t).ListEndOffsets(context.Background(), changelog)
		if err != nil {
			t.Fatal(err)
		}
		o, _ := ends.Lookup(changelog, 0)
		return o.Offset
	}
	before := changelogEnd()
	// A cache smaller than the tail: restored records must not pass through it.
	app, err := runApp(t, countTopology(in, out, onDisk), stream.Brokers(c.Seeds()...),
		stream.AppID(appID), stream.StateDir(dir), stream.Parallelism(1), stream.CacheRecords(50),
		stream.Logger(testLogger(t)), stream.ExitWhenCaughtUp())
	if err != nil {
		t.Fatal(err)
	}
	if got := app.Stats().Restored; got != 500 {
		t.Fatalf("restored %d records, want exactly the 500-record tail past the checkpoint", got)
	}
	if after := changelogEnd(); after != before {
		t.Fatalf("changelog grew from %d to %d records while restoring: restored records were logged again", before, after)
	}
}

func TestAppTimestampOrderAcrossTopics(t *testing.T) {
	c := kafkatest.New(t)
	left, right, out := c.CreateTopic(t, 2, nil), c.CreateTopic(t, 2, nil), c.CreateTopic(t, 2, nil)
	// Interleaved timestamps: left has even seconds, right odd, per partition.
	var recs []*kgo.Record
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for p := range int32(2) {
		for i := range 200 {
			topic := left
			if i%2 == 1 {
				topic = right
			}
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprint(i)), Timestamp: base.Add(time.Duration(i) * time.Second)})
		}
	}
	produceAll(t, c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner())), recs)

	var mu sync.Mutex
	seen := map[int32][]int64{}
	topo := stream.NewTopology()
	stream.AddSource(topo, "left", left, serde.Bytes{}, serde.String{})
	stream.AddSource(topo, "right", right, serde.Bytes{}, serde.String{})
	stream.AddProcessor(topo, "merge", func() stream.Processor[[]byte, string, []byte, string] {
		return stream.ProcessorFunc[[]byte, string, []byte, string](func(ctx *stream.Context[[]byte, string], r stream.Record[[]byte, string]) error {
			mu.Lock()
			seen[ctx.Partition()] = append(seen[ctx.Partition()], r.Timestamp.Sub(base).Milliseconds()/1000)
			mu.Unlock()
			ctx.Forward(r)
			return nil
		})
	}, "left", "right")
	stream.AddSink(topo, "out", out, serde.Bytes{}, serde.String{}, "merge")
	if _, err := runApp(t, topo, stream.Brokers(c.Seeds()...), stream.AppID("merge-"+left), stream.Parallelism(1),
		stream.Logger(testLogger(t)), stream.ExitWhenCaughtUp(), stream.BufferRecords(10)); err != nil {
		t.Fatal(err)
	}
	for p := range int32(2) {
		got := seen[p]
		if len(got) != 200 {
			t.Fatalf("partition %d: processed %d records, want 200", p, len(got))
		}
		for i, sec := range got {
			if sec != int64(i) {
				t.Fatalf("partition %d: record %d has second %d; timestamps were not processed in order: %v", p, i, sec, got)
			}
		}
	}
}

func TestAppFailsOnUndecodableRecord(t *testing.T) {
	c := kafkatest.New(t)
	in, out := c.CreateTopic(t, 1, nil), c.CreateTopic(t, 1, nil)
	good, _ := serde.Int64{}.Serialize(7)
	produceAll(t, c.Client(t), []*kgo.Record{
		{Topic: in, Key: []byte("a"), Value: good},
		{Topic: in, Key: []byte("a"), Value: []byte("not eight bytes")},
	})
	topo := stream.NewTopology()
	stream.AddSource(topo, "in", in, serde.String{}, serde.Int64{})
	stream.AddSink(topo, "out", out, serde.String{}, serde.Int64{}, "in")
	_, err := runApp(t, topo, stream.Brokers(c.Seeds()...), stream.AppID("bad-"+in), stream.Parallelism(1), stream.Logger(testLogger(t)))
	var re *stream.RecordError
	if !errors.As(err, &re) || re.Topic != in || re.Partition != 0 || re.Offset != 1 || !re.Deserialize {
		t.Fatalf("Run error = %v, want a deserialize RecordError at %s/0@1", err, in)
	}
	// The good record before it was produced: outputs handed to the
	// producer are delivered even though the unit closes dirty.
	if got := c.ReadToEnd(t, out); len(got) != 1 {
		t.Fatalf("outputs = %d, want the 1 good record", len(got))
	}
}

func TestAppDeadLettersOnBroker(t *testing.T) {
	c := kafkatest.New(t)
	in, out, dlq := c.CreateTopic(t, 1, nil), c.CreateTopic(t, 1, nil), c.CreateTopic(t, 1, nil)
	good, _ := serde.Int64{}.Serialize(7)
	produceAll(t, c.Client(t), []*kgo.Record{
		{Topic: in, Key: []byte("a"), Value: []byte("junk")},
		{Topic: in, Key: []byte("b"), Value: good},
	})
	topo := stream.NewTopology()
	stream.AddSource(topo, "in", in, serde.String{}, serde.Int64{})
	stream.AddSink(topo, "out", out, serde.String{}, serde.Int64{}, "in")
	app, err := runApp(t, topo, stream.Brokers(c.Seeds()...), stream.AppID("dlq-"+in), stream.Parallelism(1),
		stream.Logger(testLogger(t)), stream.OnDeserializeError(stream.DeadLetter(dlq)), stream.ExitWhenCaughtUp())
	if err != nil {
		t.Fatal(err)
	}
	dead := c.ReadToEnd(t, dlq)
	if len(dead) != 1 || string(dead[0].Value) != "junk" {
		t.Fatalf("dead letters = %v, want the junk record", dead)
	}
	if got := c.ReadToEnd(t, out); len(got) != 1 {
		t.Fatalf("outputs = %d, want 1", len(got))
	}
	if app.Stats().DeadLettered != 1 {
		t.Fatalf("DeadLettered = %d, want 1", app.Stats().DeadLettered)
	}
}

func TestAppRejectsMismatchedCoPartitioning(t *testing.T) {
	c := kafkatest.New(t)
	a, b, out := c.CreateTopic(t, 2, nil), c.CreateTopic(t, 3, nil), c.CreateTopic(t, 1, nil)
	topo := stream.NewTopology()
	stream.AddSource(topo, "a", a, serde.Bytes{}, serde.Bytes{})
	stream.AddSource(topo, "b", b, serde.Bytes{}, serde.Bytes{})
	stream.AddSink(topo, "out", out, serde.Bytes{}, serde.Bytes{}, "a", "b")
	_, err := runApp(t, topo, stream.Brokers(c.Seeds()...), stream.AppID("copart-"+a), stream.Logger(testLogger(t)))
	want := fmt.Sprintf("co-partitioned topics with different partition counts: %s=2, %s=3", a, b)
	if a > b {
		want = fmt.Sprintf("co-partitioned topics with different partition counts: %s=3, %s=2", b, a)
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Run error = %v, want it to contain %q", err, want)
	}
}

// TestAppScaling runs three instances of a counting app over 8 partitions,
// stops one in the middle and starts it again. Under at-least-once the final
// counts may exceed the truth but never fall below it, every partition is
// consumed to its end, and each task ends up owned by exactly one instance.
func TestAppScaling(t *testing.T) {
	if testing.Short() {
		t.Skip("scaling test is long")
	}
	c := kafkatest.New(t)
	in, out := c.CreateTopic(t, 8, nil), c.CreateTopic(t, 8, nil)
	appID := "scale-" + in
	recs, truth := keyedRecords(in, 100_000, 500, 4)
	cl := c.Client(t)
	produceAll(t, cl, recs[:50_000])

	type instance struct {
		app    *stream.App
		cancel context.CancelFunc
		done   chan error
	}
	start := func(dir string) *instance {
		app, err := stream.New(countTopology(in, out, onDisk), stream.Brokers(c.Seeds()...),
			stream.AppID(appID), stream.StateDir(dir), stream.Parallelism(1), stream.CommitInterval(200*time.Millisecond),
			stream.Logger(testLogger(t)))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		in := &instance{app: app, cancel: cancel, done: make(chan error, 1)}
		go func() { in.done <- app.Run(ctx) }()
		return in
	}
	stop := func(i *instance) {
		i.cancel()
		select {
		case err := <-i.done:
			if err != nil {
				t.Errorf("instance stopped with %v", err)
			}
		case <-time.After(time.Minute):
			t.Fatal("instance did not stop within a minute")
		}
	}
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	insts := []*instance{start(dirs[0]), start(dirs[1]), start(dirs[2])}
	defer func() {
		for _, i := range insts {
			if i != nil {
				stop(i)
			}
		}
	}()
	adm := c.Admin(t)
	waitProcessed(t, adm, appID, in, 20_000)
	stop(insts[1])
	insts[1] = nil
	produceAll(t, cl, recs[50_000:])
	waitProcessed(t, adm, appID, in, 70_000)
	insts[1] = start(dirs[1])
	waitCaughtUp(t, adm, appID, in)

	// Ownership: every task by exactly one instance.
	deadline := time.Now().Add(30 * time.Second)
	for {
		owners := map[stream.TaskID]int{}
		for _, i := range insts {
			for id := range i.app.Stats().Tasks {
				owners[id]++
			}
		}
		ok := len(owners) == 8
		for _, n := range owners {
			ok = ok && n == 1
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("task owners = %v, want each of 8 tasks owned once", owners)
		}
		time.Sleep(100 * time.Millisecond)
	}
	got := lastCounts(t, c, out)
	for k, want := range truth {
		if got[k] < want {
			t.Errorf("key %s: count %d is below the true %d: a record was lost", k, got[k], want)
		}
	}
}

// waitProcessed polls until the group has committed at least n offsets on topic.
func waitProcessed(t *testing.T, adm *kadm.Client, group, topic string, n int64) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		offs, err := adm.FetchOffsets(context.Background(), group)
		if err == nil {
			var sum int64
			offs.Each(func(o kadm.OffsetResponse) {
				if o.Topic == topic && o.Err == nil {
					sum += o.At
				}
			})
			if sum >= n {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("group %s did not commit %d offsets on %s within 2 minutes", group, n, topic)
}

// waitCaughtUp polls until the group's commits reach every partition's end.
func waitCaughtUp(t *testing.T, adm *kadm.Client, group, topic string) {
	t.Helper()
	ends, err := adm.ListEndOffsets(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	waitProcessed(t, adm, group, topic, total)
}

func mapsEqual(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func mapDiff(want, got map[string]int64) string {
	var b strings.Builder
	n := 0
	for k, v := range want {
		if got[k] != v && n < 10 {
			fmt.Fprintf(&b, "%s: want %d got %d; ", k, v, got[k])
			n++
		}
	}
	fmt.Fprintf(&b, "(%d keys wanted, %d got)", len(want), len(got))
	return b.String()
}

// TestChangelogWithWrongPartitionCount checks that an existing changelog
// whose partition count differs from its sources' stops Run with an error
// that names it: the store's partitions would not line up with the tasks.
func TestChangelogWithWrongPartitionCount(t *testing.T) {
	c := kafkatest.New(t)
	in, out := c.CreateTopic(t, 4, nil), c.CreateTopic(t, 4, nil)
	appID := "wrong-changelog-" + in
	changelog := appID + "-counts-changelog"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.Admin(t).CreateTopic(ctx, 2, -1, nil, changelog); err != nil {
		t.Fatalf("create changelog: %v", err)
	}
	t.Cleanup(func() { c.Admin(t).DeleteTopics(context.Background(), changelog) })
	produceAll(t, c.Client(t), []*kgo.Record{{Topic: in, Key: []byte("k"), Value: []byte("v")}})
	_, err := runApp(t, countTopology(in, out, nil), stream.Brokers(c.Seeds()...), stream.AppID(appID),
		stream.StateDir(t.TempDir()), stream.Logger(testLogger(t)))
	want := fmt.Sprintf("changelog topic %q has 2 partitions, it needs 4", changelog)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Run: %v, want an error containing %q", err, want)
	}
}

// An existing internal topic with the wrong cleanup policy is refused, with
// what it has and what it needs: a deleting changelog would lose state.
func TestChangelogWithWrongCleanupPolicy(t *testing.T) {
	c := kafkatest.New(t)
	in, out := c.CreateTopic(t, 2, nil), c.CreateTopic(t, 2, nil)
	appID := "wrong-policy-" + in
	changelog := appID + "-counts-changelog"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	del := "delete"
	if _, err := c.Admin(t).CreateTopic(ctx, 2, -1, map[string]*string{"cleanup.policy": &del}, changelog); err != nil {
		t.Fatalf("create changelog: %v", err)
	}
	t.Cleanup(func() { c.Admin(t).DeleteTopics(context.Background(), changelog) })
	_, err := runApp(t, countTopology(in, out, nil), stream.Brokers(c.Seeds()...), stream.AppID(appID),
		stream.StateDir(t.TempDir()), stream.Logger(testLogger(t)))
	want := fmt.Sprintf("changelog topic %q has cleanup.policy=delete, it needs compact", changelog)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Run: %v, want an error containing %q", err, want)
	}
}
