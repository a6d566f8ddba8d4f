package dsl_test

import (
	"context"
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

// A restart of an outer stream–stream join on another instance (fresh state
// directory: the window stores and the pending records are restored from
// their changelogs, the join's stream time from the committed offsets)
// loses no pending record and emits none twice: per key, A is emitted
// without a partner before the restart and never again; B, pending across
// the restart, joins b after it (even keys: then it is not emitted alone) or
// is emitted alone once C closes its window (odd keys); C is emitted alone
// once D closes its window. Under both guarantees (at-least-once with stores
// in memory, exactly-once with stores in Pebble).
func TestStreamJoinSurvivesRestart(t *testing.T) {
	for _, g := range []stream.GuaranteeKind{stream.AtLeastOnce, stream.ExactlyOnce} {
		t.Run(g.String(), func(t *testing.T) { ssJoinAcrossInstances(t, g, false) })
	}
}

// The same while the tasks move between running instances (exactly-once):
// b joins while a runs, then a stops.
func TestStreamJoinAcrossRebalances(t *testing.T) {
	ssJoinAcrossInstances(t, stream.ExactlyOnce, true)
}

// ssJoinAcrossInstances runs the scenario of TestStreamJoinSurvivesRestart,
// the second instance starting after the first stopped or, with rebalance,
// while it runs. Each step writes to one topic and waits for its results,
// so the order the join sees the records in does not depend on fetching.
func ssJoinAcrossInstances(t *testing.T, g stream.GuaranteeKind, rebalance bool) {
	c := kafkatest.New(t)
	left, right, out := c.CreateTopic(t, 4, nil), c.CreateTopic(t, 4, nil), c.CreateTopic(t, 4, nil)
	cl := c.Client(t)
	keys := []string{"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7"}
	even := []string{"k0", "k2", "k4", "k6"}
	produce := func(topic, value string, ms int64, keys ...string) {
		var rs []*kgo.Record
		for _, k := range keys {
			rs = append(rs, &kgo.Record{Topic: topic, Key: []byte(k), Value: []byte(value), Timestamp: time.UnixMilli(ms)})
		}
		if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	s := serde.String{}
	logged := stream.StoreOptions{Changelog: true}
	if g == stream.ExactlyOnce {
		logged.Persistent = pebblestore.Opener(pebblestore.Options{})
	}
	topo := func() *stream.Topology {
		topo := stream.NewTopology()
		stream.AddSource(topo, "l", left, s, s)
		stream.AddSource(topo, "r", right, s, s)
		str := func(p *string) string {
			if p == nil {
				return "null"
			}
			return *p
		}
		dsl.OuterJoinStreams(topo, "join", dsl.JoinWindowsOf(time.Second), s, s, s, dsl.StreamJoinOptions{Store: logged},
			func(_ string, l, r *string) string { return str(l) + "|" + str(r) }, "l", "r")
		stream.AddSink(topo, "out", out, s, s, "join")
		return topo
	}
	appID := "join-" + left
	run := func(name string) func() {
		app, err := stream.New(topo(), stream.Brokers(c.Seeds()...),
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
	// read waits until out has n records and returns them as
	// key=value, failing on a result seen twice.
	read := func(n int) map[string]bool {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			recs := c.ReadToEnd(t, out, kafkatest.ReadCommitted())
			got := map[string]bool{}
			for _, r := range recs {
				id := string(r.Key) + "=" + string(r.Value)
				if got[id] {
					t.Fatalf("%s emitted twice", id)
				}
				got[id] = true
			}
			if len(recs) >= n {
				if len(recs) > n {
					t.Fatalf("%d records, want %d: %v", len(recs), n, got)
				}
				return got
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d records after 60 s, want %d: %v", len(recs), n, got)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	produce(left, "A", 1000, keys...)
	produce(left, "B", 5000, keys...) // closes A (1000+1000 < 5000); B pending
	stopA := run("a")
	read(len(keys))
	if !rebalance {
		stopA()
	}
	stopB := run("b")
	defer stopB()
	produce(right, "b", 5500, even...) // joins B
	read(len(keys) + len(even))
	if rebalance {
		stopA()
	}
	produce(left, "C", 7000, keys...) // closes the odd keys' B
	produce(left, "D", 9000, keys...) // closes C
	got := read(3 * len(keys))
	for i, k := range keys {
		b := "B|null"
		if i%2 == 0 {
			b = "B|b"
		}
		for _, v := range []string{"A|null", b, "C|null"} {
			if !got[k+"="+v] {
				t.Errorf("%s=%s missing: %v", k, v, got)
			}
		}
	}
}
