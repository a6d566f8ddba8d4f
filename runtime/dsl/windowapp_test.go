package dsl_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/internal/testlog"
	"github.com/kgen-dev/kgen/runtime/dsl"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state/pebblestore"
	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/twmb/franz-go/pkg/kgo"
)

// finalApp counts "in" in 10 s tumbling windows twice, with emit final to
// final and with every update suppressed until the window closes to
// suppressed; the stores keep windows an hour, so a window emitted before a
// restart is still there to be emitted again if the restart forgot it was.
// With sessions (and sliding), it also counts "in" in sessions of a 3 s gap
// (sliding windows of 10 s) with emit final, to sessions (sliding). The
// stores are in memory, or in Pebble with onDisk.
func finalApp(in, final, suppressed, sessions, sliding string, onDisk bool) *stream.Topology {
	s := serde.String{}
	w := dsl.TumblingWindows(10 * time.Second)
	keys := dsl.WindowedKey(s, w)
	logged := stream.StoreOptions{Changelog: true}
	if onDisk {
		logged.Persistent = pebblestore.Opener(pebblestore.Options{})
	}
	sink := func(t *stream.Topology, name, topic, parent string) {
		dsl.ToStream[dsl.Windowed[string], int64](t, name+"-stream", parent)
		stream.AddSinkWith(t, name, topic, keys, dsl.Nullable[int64](serde.Int64{}), stream.SinkConfig[dsl.Windowed[string], *int64]{
			Partitioner: dsl.WindowedPartitioner[string, *int64](s),
		}, name+"-stream")
	}
	t := stream.NewTopology()
	stream.AddSource(t, "in", in, s, s)
	dsl.WindowedCount[string, string](t, "final", "final-counts", w, s, dsl.WindowOptions{Store: logged, Emit: dsl.EmitFinal, Retention: time.Hour}, "in")
	sink(t, "final-sink", final, "final")
	dsl.WindowedCount[string, string](t, "count", "counts", w, s, dsl.WindowOptions{Store: logged, Retention: time.Hour}, "in")
	dsl.SuppressUntilWindowCloses(t, "suppress", "suppress-buffer", w, keys, serde.Int64{}, dsl.SuppressOptions{Store: logged}, "count")
	sink(t, "suppress-sink", suppressed, "suppress")
	if sessions != "" {
		dsl.SessionCount[string, string](t, "sessions", "session-counts", dsl.SessionWindows(3*time.Second), s, dsl.WindowOptions{Store: logged, Emit: dsl.EmitFinal}, "in")
		dsl.ToStream[dsl.Windowed[string], int64](t, "sessions-stream", "sessions")
		stream.AddSinkWith(t, "sessions-sink", sessions, dsl.SessionKey(s), dsl.Nullable[int64](serde.Int64{}), stream.SinkConfig[dsl.Windowed[string], *int64]{
			Partitioner: dsl.WindowedPartitioner[string, *int64](s),
		}, "sessions-stream")
		sw := dsl.SlidingWindows(10*time.Second, 0)
		dsl.WindowedCount[string, string](t, "sliding", "sliding-counts", sw, s, dsl.WindowOptions{Store: logged, Emit: dsl.EmitFinal}, "in")
		dsl.ToStream[dsl.Windowed[string], int64](t, "sliding-stream", "sliding")
		stream.AddSinkWith(t, "sliding-sink", sliding, dsl.WindowedKey(s, sw), dsl.Nullable[int64](serde.Int64{}), stream.SinkConfig[dsl.Windowed[string], *int64]{
			Partitioner: dsl.WindowedPartitioner[string, *int64](s),
		}, "sliding-stream")
	}
	return t
}

// Final results survive a restart on another instance (fresh state
// directory: the stores are restored from their changelogs, the operators'
// stream times and the close time emitted up to from the committed offsets):
// each window of each key is emitted exactly once, by emit final and by
// suppress, with its full count, under both guarantees (at-least-once with
// stores in memory, exactly-once with stores in Pebble).
func TestFinalResultsSurviveRestart(t *testing.T) {
	for _, g := range []stream.GuaranteeKind{stream.AtLeastOnce, stream.ExactlyOnce} {
		t.Run(g.String(), func(t *testing.T) {
			c := kafkatest.New(t)
			in, final, suppressed := c.CreateTopic(t, 4, nil), c.CreateTopic(t, 4, nil), c.CreateTopic(t, 4, nil)
			sessions, sliding := c.CreateTopic(t, 4, nil), c.CreateTopic(t, 4, nil)
			cl := c.Client(t)
			keys := []string{"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7"}
			produce := func(at ...int64) {
				var rs []*kgo.Record
				for _, ms := range at {
					for _, k := range keys {
						rs = append(rs, &kgo.Record{Topic: in, Key: []byte(k), Value: []byte("x"), Timestamp: time.UnixMilli(ms)})
					}
				}
				if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			appID := "final-" + in
			run := func(name string) func() {
				app, err := stream.New(finalApp(in, final, suppressed, sessions, sliding, g == stream.ExactlyOnce), stream.Brokers(c.Seeds()...),
					stream.AppID(appID), stream.StateDir(t.TempDir()), stream.InstanceID(name), stream.Parallelism(1),
					stream.Guarantee(g), stream.CommitInterval(200*time.Millisecond),
					stream.Logger(testlog.New(t)))
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- app.Run(ctx) }()
				return func() {
					cancel()
					if err := <-done; err != nil {
						t.Errorf("instance %s: %v", name, err)
					}
				}
			}
			timeKeys := dsl.WindowedKey(serde.String{}, dsl.TumblingWindows(10*time.Second))
			// read waits until topic has n records and returns them as
			// key@start=count, failing on a window seen twice.
			read := func(topic string, n int) map[string]int64 {
				keySerde := timeKeys
				if topic == sessions {
					keySerde = dsl.SessionKey(serde.String{})
				}
				t.Helper()
				deadline := time.Now().Add(60 * time.Second)
				for {
					recs := c.ReadToEnd(t, topic, kafkatest.ReadCommitted())
					got := map[string]int64{}
					for _, r := range recs {
						k, err := keySerde.Deserialize(r.Key)
						if err != nil {
							t.Fatal(err)
						}
						id := fmt.Sprintf("%s@%d", k.Key, k.Start)
						if _, dup := got[id]; dup {
							t.Fatalf("%s: window %s emitted twice", topic, id)
						}
						got[id], _ = serde.Int64{}.Deserialize(r.Value)
					}
					if len(recs) >= n {
						if len(recs) > n {
							t.Fatalf("%s: %d records, want %d", topic, len(recs), n)
						}
						return got
					}
					if time.Now().After(deadline) {
						t.Fatalf("%s: %d records after 60 s, want %d", topic, len(recs), n)
					}
					time.Sleep(200 * time.Millisecond)
				}
			}
			// [0,10 s) gets two records per key and closes at 12 s; [10,20 s)
			// gets 12 s before the restart and closes at 20 s after it;
			// [20,30 s) gets 20 and 25 s and closes at 31 s. Sessions (3 s
			// gap): 1 s and 5 s close before the restart, 12 s is pending at
			// the restart and closes after it without another record, and so
			// do 20 s and 25 s. Sliding windows: [0,10 s] and [1.001,11.001 s]
			// close before the restart; [2,12 s] and [5.001,15.001 s], made
			// before it, close after it, with those made after it.
			produce(1000, 5000, 12000)
			stop := run("a")
			read(final, len(keys))
			read(suppressed, len(keys))
			read(sessions, 2*len(keys))
			read(sliding, 2*len(keys))
			stop()
			produce(20000, 25000, 31000)
			stop = run("b")
			defer stop()
			for topic, want := range map[string]map[int64]int64{
				final:      {0: 2, 10000: 1, 20000: 2},
				suppressed: {0: 2, 10000: 1, 20000: 2},
				sessions:   {1000: 1, 5000: 1, 12000: 1, 20000: 1, 25000: 1},
				sliding:    {0: 2, 1001: 1, 2000: 2, 5001: 1, 10000: 2, 12001: 1, 15000: 2, 20001: 1},
			} {
				got := read(topic, len(want)*len(keys))
				for _, k := range keys {
					for start, n := range want {
						if id := fmt.Sprintf("%s@%d", k, start); got[id] != n {
							t.Errorf("%s: window %s counted %d, want %d", topic, id, got[id], n)
						}
					}
				}
			}
		})
	}
}

// Final results while tasks move between running instances: a second
// instance joins, then the first stops, with records flowing in between;
// every window of every key is emitted exactly once, with its full count.
func TestFinalResultsAcrossRebalances(t *testing.T) {
	c := kafkatest.New(t)
	in, final, suppressed := c.CreateTopic(t, 8, nil), c.CreateTopic(t, 8, nil), c.CreateTopic(t, 8, nil)
	cl := c.Client(t)
	var keys []string
	for i := range 16 {
		keys = append(keys, fmt.Sprintf("k%02d", i))
	}
	produce := func(at ...int64) {
		var rs []*kgo.Record
		for _, ms := range at {
			for _, k := range keys {
				rs = append(rs, &kgo.Record{Topic: in, Key: []byte(k), Value: []byte("x"), Timestamp: time.UnixMilli(ms)})
			}
		}
		if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	appID := "rebalance-" + in
	run := func(name string) func() {
		app, err := stream.New(finalApp(in, final, suppressed, "", "", false), stream.Brokers(c.Seeds()...),
			stream.AppID(appID), stream.StateDir(t.TempDir()), stream.InstanceID(name), stream.Parallelism(1),
			stream.Guarantee(stream.ExactlyOnce), stream.CommitInterval(100*time.Millisecond),
			stream.Logger(testlog.New(t)))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- app.Run(ctx) }()
		return func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("instance %s: %v", name, err)
			}
		}
	}
	keySerde := dsl.WindowedKey(serde.String{}, dsl.TumblingWindows(10*time.Second))
	// wait polls topic until it has n records, failing on a window seen twice.
	wait := func(topic string, n int) map[string]int64 {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for {
			got := map[string]int64{}
			recs := c.ReadToEnd(t, topic, kafkatest.ReadCommitted())
			for _, r := range recs {
				k, err := keySerde.Deserialize(r.Key)
				if err != nil {
					t.Fatal(err)
				}
				id := fmt.Sprintf("%s@%d", k.Key, k.Start)
				if _, dup := got[id]; dup {
					t.Fatalf("%s: window %s emitted twice", topic, id)
				}
				got[id], _ = serde.Int64{}.Deserialize(r.Value)
			}
			if len(recs) > n {
				t.Fatalf("%s: %d records, want %d", topic, len(recs), n)
			}
			if len(recs) == n {
				return got
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d records after 90 s, want %d", topic, len(recs), n)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	stopA := run("a")
	produce(1000, 2000, 12000) // closes [0,10 s)
	for _, topic := range []string{final, suppressed} {
		wait(topic, len(keys))
	}
	stopB := run("b")
	defer stopB()
	produce(13000, 14000, 25000) // closes [10,20 s) while the tasks move to b
	for _, topic := range []string{final, suppressed} {
		wait(topic, 2*len(keys))
	}
	stopA()
	produce(26000, 41000) // closes [20,30 s) on b alone
	for _, topic := range []string{final, suppressed} {
		got := wait(topic, 3*len(keys))
		for _, k := range keys {
			for start, n := range map[int64]int64{0: 2, 10000: 3, 20000: 2} {
				if id := fmt.Sprintf("%s@%d", k, start); got[id] != n {
					t.Errorf("%s: window %s counted %d, want %d", topic, id, got[id], n)
				}
			}
		}
	}
}
