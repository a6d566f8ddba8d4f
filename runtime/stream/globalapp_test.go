package stream_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// customerRows are n rows of the customers table, customer i with limit
// base+i, and the orders naming each customer once.
func customerRows(topic, orders string, from, n int, base int64) (rows, orderRecs []*kgo.Record) {
	for i := from; i < from+n; i++ {
		c := fmt.Sprintf("c%03d", i)
		rows = append(rows, &kgo.Record{Topic: topic, Key: []byte(c), Value: int64Bytes(base + int64(i))})
		orderRecs = append(orderRecs, &kgo.Record{Topic: orders, Key: []byte("order-" + c), Value: []byte(c)})
	}
	return rows, orderRecs
}

// TestGlobalTableOnBroker runs two instances over a 4-partition global topic
// and a 3-partition stream: no co-partitioning, and every order, whichever
// instance and task processes it, is enriched from every partition of the
// table. Each instance loads the whole table before processing; a restart
// reads only what was written after its checkpoint.
func TestGlobalTableOnBroker(t *testing.T) {
	c := kafkatest.New(t)
	customers, orders, out := c.CreateTopic(t, 4, nil), c.CreateTopic(t, 3, nil), c.CreateTopic(t, 3, nil)
	appID := "global-" + orders
	cl := c.Client(t)
	rows, ords := customerRows(customers, orders, 0, 40, 1000)
	// A null key in the global topic is dropped and counted.
	produceAll(t, cl, append(rows, &kgo.Record{Topic: customers, Value: int64Bytes(1)}))
	produceAll(t, cl, ords)
	dirs := []string{t.TempDir(), t.TempDir()}
	start := func(dir string) (*stream.App, chan error) {
		app, err := stream.New(enrichTopics(customers, orders, out, onDisk), stream.Brokers(c.Seeds()...),
			stream.AppID(appID), stream.StateDir(dir), stream.Parallelism(1), stream.CommitInterval(200*time.Millisecond),
			stream.Logger(testLogger(t)), stream.ExitWhenCaughtUp())
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			done <- app.Run(ctx)
		}()
		return app, done
	}
	var apps []*stream.App
	var dones []chan error
	for _, dir := range dirs {
		app, done := start(dir)
		apps, dones = append(apps, app), append(dones, done)
	}
	for _, done := range dones {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	for i, app := range apps {
		st := app.Stats()
		if st.GlobalApplied != 40 || st.Dropped[stream.DropNullKey] != 1 {
			t.Errorf("instance %d: GlobalApplied %d, null keys dropped %d: want 40 and 1", i, st.GlobalApplied, st.Dropped[stream.DropNullKey])
		}
	}
	want := map[string]int64{}
	for i := range 40 {
		want[fmt.Sprintf("order-c%03d", i)] = 1000 + int64(i)
	}
	if diff := cmp.Diff(want, outputs(t, c.ReadToEnd(t, out))); diff != "" {
		t.Fatalf("enriched (-want +got):\n%s", diff)
	}

	// New rows (and a changed one) while stopped: the restart reads only
	// those from its checkpoint, then enriches new orders with them.
	rows, ords = customerRows(customers, orders, 40, 5, 1000)
	rows = append(rows, &kgo.Record{Topic: customers, Key: []byte("c000"), Value: int64Bytes(7)})
	ords = append(ords, &kgo.Record{Topic: orders, Key: []byte("again-c000"), Value: []byte("c000")})
	produceAll(t, cl, rows)
	produceAll(t, cl, ords)
	app, done := start(dirs[0])
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := app.Stats().GlobalApplied; got != 6 {
		t.Errorf("restart applied %d global records, want only the 6 after the checkpoint", got)
	}
	for i := 40; i < 45; i++ {
		want[fmt.Sprintf("order-c%03d", i)] = 1000 + int64(i)
	}
	want["again-c000"] = 7
	if diff := cmp.Diff(want, outputs(t, c.ReadToEnd(t, out))); diff != "" {
		t.Fatalf("enriched after the restart (-want +got):\n%s", diff)
	}

	// The topic recreated (simulated: another id in the first instance's
	// checkpoint): the table is wiped and read from the start.
	cpPath := filepath.Join(dirs[0], appID, "global", ".checkpoint")
	cp, err := state.ReadCheckpoint(cpPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cp.TopicIDs[customers]; !ok {
		t.Fatalf("checkpoint %+v: no id for %s", cp, customers)
	}
	cp.TopicIDs[customers] = state.TopicID{1}
	if err := state.WriteCheckpoint(cpPath, cp); err != nil {
		t.Fatal(err)
	}
	app, done = start(dirs[0])
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := app.Stats().GlobalApplied; got != 46 {
		t.Errorf("after the topic's id changed, applied %d global records, want all 46", got)
	}

	// The other instance lost its table's files but kept the checkpoint:
	// it reads the whole topic again.
	if err := os.RemoveAll(filepath.Join(dirs[1], appID, "global", "customers")); err != nil {
		t.Fatal(err)
	}
	app, done = start(dirs[1])
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := app.Stats().GlobalApplied; got != 46 {
		t.Errorf("after losing its files, applied %d global records, want all 46", got)
	}
}

// A record of the global topic that cannot be decoded meets the app's
// deserialization policy while the table loads.
func TestGlobalTableBadRecordOnBroker(t *testing.T) {
	c := kafkatest.New(t)
	for _, tc := range []struct {
		name   string
		policy func(dlq string) stream.ErrorPolicy
	}{
		{"fail", func(string) stream.ErrorPolicy { return stream.Fail() }},
		{"skip", func(string) stream.ErrorPolicy { return stream.LogAndContinue() }},
		{"dead-letter", stream.DeadLetter},
	} {
		t.Run(tc.name, func(t *testing.T) {
			customers, orders, out, dlq := c.CreateTopic(t, 4, nil), c.CreateTopic(t, 2, nil), c.CreateTopic(t, 2, nil), c.CreateTopic(t, 1, nil)
			cl := c.Client(t)
			rows, ords := customerRows(customers, orders, 0, 3, 0)
			rows = append(rows, &kgo.Record{Topic: customers, Key: []byte("bad"), Value: []byte("junk")})
			produceAll(t, cl, rows)
			produceAll(t, cl, ords)
			app, err := runApp(t, enrichTopics(customers, orders, out, nil), stream.Brokers(c.Seeds()...),
				stream.AppID("global-bad-"+orders), stream.Parallelism(1), stream.Logger(testLogger(t)),
				stream.OnDeserializeError(tc.policy(dlq)), stream.ExitWhenCaughtUp())
			if tc.name == "fail" {
				var rerr *stream.RecordError
				if !errors.As(err, &rerr) || rerr.Topic != customers || !rerr.Deserialize {
					t.Fatalf("Run: %v: want the bad record's deserialization error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := len(c.ReadToEnd(t, out)); got != 3 {
				t.Errorf("%d outputs, want 3", got)
			}
			st := app.Stats()
			if tc.name == "skip" && st.Skipped != 1 {
				t.Errorf("Skipped %d, want 1", st.Skipped)
			}
			if tc.name == "dead-letter" {
				dead := c.ReadToEnd(t, dlq)
				if st.DeadLettered != 1 || len(dead) != 1 || string(dead[0].Value) != "junk" {
					t.Errorf("DeadLettered %d, dead letters %v: want the junk record once", st.DeadLettered, dead)
				}
			}
		})
	}
}

// A global topic written in transactions ends with a commit marker, which
// takes an offset: the load must count it, or it would wait forever for a
// record past the end.
func TestGlobalTableTransactionalTopic(t *testing.T) {
	c := kafkatest.New(t)
	customers, orders, out := c.CreateTopic(t, 2, nil), c.CreateTopic(t, 1, nil), c.CreateTopic(t, 1, nil)
	txn := c.Client(t, kgo.TransactionalID("global-txn-"+customers))
	rows, ords := customerRows(customers, orders, 0, 4, 0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// An aborted row first: never applied.
	for _, commit := range []kgo.TransactionEndTry{kgo.TryAbort, kgo.TryCommit} {
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		recs := rows
		if commit == kgo.TryAbort {
			recs = []*kgo.Record{{Topic: customers, Key: []byte("c000"), Value: int64Bytes(99)}}
		}
		if err := txn.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := txn.EndTransaction(ctx, commit); err != nil {
			t.Fatal(err)
		}
	}
	produceAll(t, c.Client(t), ords)
	app, err := runApp(t, enrichTopics(customers, orders, out, nil), stream.Brokers(c.Seeds()...),
		stream.AppID("global-txn-"+orders), stream.Parallelism(1), stream.Logger(testLogger(t)), stream.ExitWhenCaughtUp())
	if err != nil {
		t.Fatal(err)
	}
	if got := app.Stats().GlobalApplied; got != 4 {
		t.Errorf("GlobalApplied %d, want the 4 committed rows", got)
	}
	want := map[string]int64{"order-c000": 0, "order-c001": 1, "order-c002": 2, "order-c003": 3}
	if diff := cmp.Diff(want, outputs(t, c.ReadToEnd(t, out))); diff != "" {
		t.Errorf("enriched (-want +got):\n%s", diff)
	}
}

func TestGlobalTableMissingTopic(t *testing.T) {
	c := kafkatest.New(t)
	orders, out := c.CreateTopic(t, 1, nil), c.CreateTopic(t, 1, nil)
	missing := "no-such-topic-" + orders
	_, err := runApp(t, enrichTopics(missing, orders, out, nil), stream.Brokers(c.Seeds()...),
		stream.AppID("global-missing-"+orders), stream.Parallelism(1), stream.Logger(testLogger(t)), stream.StartupTimeout(time.Second))
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("topic %q does not exist", missing)) {
		t.Fatalf("Run: %v: want the missing global topic named", err)
	}
}

// While the app runs, the updater follows the global topic: a row written
// after the start is read by an order processed after it was applied.
func TestGlobalTableFollowsUpdatesOnBroker(t *testing.T) {
	c := kafkatest.New(t)
	customers, orders, out := c.CreateTopic(t, 4, nil), c.CreateTopic(t, 2, nil), c.CreateTopic(t, 2, nil)
	app, err := stream.New(enrichTopics(customers, orders, out, nil), stream.Brokers(c.Seeds()...),
		stream.AppID("global-follow-"+orders), stream.Parallelism(2), stream.Logger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx) }()
	poll := func(what string, ok func() bool) {
		t.Helper()
		for !ok() {
			if ctx.Err() != nil {
				t.Fatalf("waiting for %s: %v", what, ctx.Err())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	poll("running", func() bool { return app.State() == stream.Running })
	cl := c.Client(t)
	rows, ords := customerRows(customers, orders, 0, 8, 500)
	produceAll(t, cl, rows)
	poll("the rows applied", func() bool { return app.Stats().GlobalApplied == 8 })
	produceAll(t, cl, ords)
	var got map[string]int64
	poll("the enriched orders", func() bool { got = outputs(t, c.ReadToEnd(t, out)); return len(got) == 8 })
	for i := range 8 {
		if k := fmt.Sprintf("order-c%03d", i); got[k] != 500+int64(i) {
			t.Errorf("%s: %d, want %d", k, got[k], 500+i)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestGlobalTableLoadsInManyFetches loads a global table read one record
// batch per fetch, so that one batch is applied while the next is fetched:
// keys written in no order, rewritten (the last value wins), deleted,
// deleted and written again, and undecodable records skipped. The table
// then holds exactly the topic's last values, and a persistent table's
// checkpoint is at the topic's end.
func TestGlobalTableLoadsInManyFetches(t *testing.T) {
	c := kafkatest.New(t)
	for _, kind := range []struct {
		name       string
		persistent state.Opener
	}{{"memory", nil}, {"pebble", onDisk}} {
		t.Run(kind.name, func(t *testing.T) {
			customers, orders, out := c.CreateTopic(t, 3, nil), c.CreateTopic(t, 1, nil), c.CreateTopic(t, 1, nil)
			cl := c.Client(t)
			const keys = 300
			order := rand.New(rand.NewPCG(1, 2)).Perm(keys)
			want := map[string]int64{}
			var recs []*kgo.Record
			write := func(i int, v int64) {
				k := fmt.Sprintf("c%03d", i)
				recs = append(recs, &kgo.Record{Topic: customers, Key: []byte(k), Value: int64Bytes(v)})
				want[k] = v
			}
			for round := range int64(3) {
				for _, i := range order {
					write(i, round*1000+int64(i))
				}
			}
			for _, i := range order {
				switch {
				case i%7 == 0:
					k := fmt.Sprintf("c%03d", i)
					recs = append(recs, &kgo.Record{Topic: customers, Key: []byte(k)})
					delete(want, k)
				case i%50 == 1:
					recs = append(recs, &kgo.Record{Topic: customers, Key: []byte(fmt.Sprintf("bad%03d", i)), Value: []byte("junk")})
				}
			}
			for _, i := range order {
				if i%14 == 0 {
					write(i, 3000+int64(i))
				}
			}
			// Small produce calls make small record batches.
			for from := 0; from < len(recs); from += 25 {
				produceAll(t, cl, recs[from:min(from+25, len(recs))])
			}
			dir := t.TempDir()
			appID := "global-fetches-" + orders
			app, err := stream.New(enrichTopics(customers, orders, out, kind.persistent), stream.Brokers(c.Seeds()...),
				stream.AppID(appID), stream.StateDir(dir), stream.Parallelism(1), stream.Logger(testLogger(t)),
				stream.OnDeserializeError(stream.LogAndContinue()), stream.ClientOpts(kgo.FetchMaxBytes(1), kgo.FetchMaxPartitionBytes(1)))
			if err != nil {
				t.Fatal(err)
			}
			view, err := stream.QueryKeyValue(app, "customers", serde.String{}, serde.Int64{})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- app.Run(ctx) }()
			waitFor(t, "the instance to run", func() bool { return app.State() == stream.Running })
			all, err := view.All()
			cancel()
			if rerr := <-done; rerr != nil {
				t.Fatal(rerr)
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int64{}
			for _, e := range all.Entries {
				got[e.Key] = e.Value
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("table (-want +got):\n%s", diff)
			}
			bad := 0
			for _, r := range recs {
				if strings.HasPrefix(string(r.Key), "bad") {
					bad++
				}
			}
			if st := app.Stats(); st.GlobalApplied != uint64(len(recs)-bad) || st.Skipped != uint64(bad) {
				t.Errorf("GlobalApplied %d, Skipped %d: want %d and %d", st.GlobalApplied, st.Skipped, len(recs)-bad, bad)
			}
			if kind.persistent == nil {
				return
			}
			cp, err := state.ReadCheckpoint(filepath.Join(dir, appID, "global", ".checkpoint"))
			if err != nil {
				t.Fatal(err)
			}
			var next int64
			for _, o := range cp.Offsets[customers] {
				next += o
			}
			if next != int64(len(recs)) {
				t.Errorf("checkpoint %v: %d records past, want all %d", cp.Offsets, next, len(recs))
			}
		})
	}
}
