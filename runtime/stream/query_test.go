package stream_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// queryInstance is one running instance of a query test's app.
type queryInstance struct {
	name string
	app  *stream.App
	view *stream.KeyValueView[string, int64]
	stop context.CancelFunc
	done chan error
	// waited: the test read done itself.
	waited bool
}

// startQueryInstance starts an instance of a count whose store is queryable
// (StoreOptions.Queryable: read while the unit processes) or not (read
// when the unit lets queries in).
func startQueryInstance(t *testing.T, c *kafkatest.Cluster, appID, in, out, name string, parallelism int, persistent state.Opener, queryable bool, g stream.GuaranteeKind, more ...stream.Option) *queryInstance {
	t.Helper()
	topo := countTopologyOpts(in, out, stream.StoreOptions{Persistent: persistent, Changelog: true, Queryable: queryable})
	app, err := stream.New(topo, append([]stream.Option{stream.Brokers(c.Seeds()...), stream.Guarantee(g),
		stream.AppID(appID), stream.StateDir(t.TempDir()), stream.InstanceID(name),
		stream.AdvertisedAddress(name + ".example:8080"),
		stream.Parallelism(parallelism), stream.StandbyReplicas(1), stream.CommitInterval(100 * time.Millisecond),
		stream.Logger(testLogger(t))}, more...)...)
	if err != nil {
		t.Fatal(err)
	}
	view, err := stream.QueryKeyValue(app, "counts", serde.String{}, serde.Int64{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	qi := &queryInstance{name: name, app: app, view: view, stop: cancel, done: make(chan error, 1)}
	go func() { qi.done <- app.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if !qi.waited {
			<-qi.done
		}
	})
	return qi
}

// queryOutcomes counts what the queries of a test got.
type queryOutcomes struct{ fresh, stale, notAvailable, notLocal int }

// queryAnswer asks every instance where key lives, checks that they agree
// and that the owner's answer is count or "not available", never another
// value. It returns whether the owner answered, and so whether the key is
// settled.
func queryAnswer(t *testing.T, insts map[string]*queryInstance, stopped map[string]bool, key string, want int64, seen *queryOutcomes) bool {
	t.Helper()
	var owner string
	for name, qi := range insts {
		if stopped[name] {
			continue
		}
		loc, err := qi.app.KeyOwner("counts", []byte(key))
		var na *stream.NotAvailableError
		if errors.As(err, &na) {
			return false // between assignments
		}
		if err != nil {
			t.Fatalf("instance %s: KeyOwner(%s): %v", name, key, err)
		}
		if owner == "" {
			owner = loc.Active.ID
		} else if loc.Active.ID != owner {
			return false // the instances have not all heard of the same assignment
		}
		if loc.Active.ID != "" && loc.Active.Address != loc.Active.ID+".example:8080" {
			t.Fatalf("instance %s: KeyOwner(%s) = %+v: address of another instance", name, key, loc.Active)
		}
		if loc.LocalActive != (loc.Active.ID == name) {
			t.Fatalf("instance %s: KeyOwner(%s) = %+v: LocalActive wrong", name, key, loc)
		}
	}
	settled := false
	for name, qi := range insts {
		got, ok, served, err := qi.view.Get(key)
		var na *stream.NotAvailableError
		var nl *stream.NotLocalError
		switch {
		case errors.As(err, &na):
			seen.notAvailable++
			if !na.Retry && !stopped[name] {
				t.Fatalf("instance %s: Get(%s): %v, not to be retried, on a running instance", name, key, err)
			}
		case errors.As(err, &nl):
			seen.notLocal++
			if nl.Owner.ID == name || nl.Owner.ID == "" {
				t.Fatalf("instance %s: Get(%s): %v names this instance or none", name, key, err)
			}
		case err != nil:
			t.Fatalf("instance %s: Get(%s): %v", name, key, err)
		case !ok || got != want:
			t.Fatalf("instance %s: Get(%s) = %d, %v (served by %+v), want %d", name, key, got, ok, served, want)
		default:
			seen.fresh++
			if served.Instance.ID != name || served.Stale || served.Lag != 0 {
				t.Fatalf("instance %s: Get(%s) served by %+v, want this instance, fresh", name, key, served)
			}
			settled = settled || name == owner
		}
		// A stale read may lag, never lead or invent.
		got, ok, served, err = qi.view.AllowStale().Get(key)
		if err == nil && served.Stale {
			seen.stale++
		}
		if err == nil && (!ok && !served.Stale || got > want || !served.Stale && got != want) {
			t.Fatalf("instance %s: stale Get(%s) = %d, %v (served by %+v), want at most %d", name, key, got, ok, served, want)
		}
	}
	return settled
}

// TestQueryThreeInstances runs a count on three instances (one of two
// units), queries every key through every instance's metadata and local
// view, then stops one instance and keeps querying while its tasks move:
// every answer is the true count or "not available", never another value.
func TestQueryThreeInstances(t *testing.T) {
	// Pebble's store queryable, memory's not: both ways of reading.
	for _, kind := range storeKinds {
		t.Run(kind.name, func(t *testing.T) {
			testQueryThreeInstances(t, kind.persistent, kind.persistent != nil, stream.AtLeastOnce)
		})
	}
	t.Run("pebble-exactly-once", func(t *testing.T) { testQueryThreeInstances(t, onDisk, true, stream.ExactlyOnce) })
}

func testQueryThreeInstances(t *testing.T, persistent state.Opener, queryable bool, g stream.GuaranteeKind) {
	c := kafkatest.New(t)
	in, out := c.CreateTopic(t, 6, nil), c.CreateTopic(t, 6, nil)
	appID := "query-" + in
	recs, truth := keyedRecords(in, 6_000, 300, 11)
	produceAll(t, c.Client(t), recs)
	insts := map[string]*queryInstance{}
	for i, name := range []string{"a", "b", "c"} {
		insts[name] = startQueryInstance(t, c, appID, in, out, name, 1+i%2, persistent, queryable, g)
	}
	waitCaughtUp(t, c.Admin(t), appID, in)
	keys := make([]string, 0, len(truth))
	for k := range truth {
		keys = append(keys, k)
	}
	slices.Sort(keys)

	// Every key settles: its owner answers the true count, the others
	// name the owner.
	var seen queryOutcomes
	settle := func(stopped map[string]bool) {
		t.Helper()
		pending := keys
		for deadline := time.Now().Add(time.Minute); len(pending) > 0; {
			var next []string
			for _, k := range pending {
				if !queryAnswer(t, insts, stopped, k, truth[k], &seen) {
					next = append(next, k)
				}
			}
			pending = next
			if len(pending) > 0 && time.Now().After(deadline) {
				t.Fatalf("%d keys never answered by their owner, %s first", len(pending), pending[0])
			}
			time.Sleep(time.Millisecond) // pacing, as above
		}
	}
	settle(nil)

	// Ranges: the instances' local reads together are the whole store.
	all := map[string]int64{}
	missing := 0
	for name, qi := range insts {
		res, err := qi.view.All()
		if err != nil {
			t.Fatalf("instance %s: All: %v", name, err)
		}
		for _, e := range res.Entries {
			if _, dup := all[e.Key]; dup {
				t.Fatalf("key %s read from two instances", e.Key)
			}
			all[e.Key] = e.Value
		}
		missing += len(res.Missing)
		for p, err := range res.Missing {
			var nl *stream.NotLocalError
			if !errors.As(err, &nl) {
				t.Fatalf("instance %s: All: partition %d: %v, want another instance's", name, p, err)
			}
		}
		pre, err := qi.view.Prefix("key-1")
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range pre.Entries {
			if e.Key[:5] != "key-1" || e.Value != truth[e.Key] {
				t.Fatalf("instance %s: Prefix(key-1) gave %s=%d", name, e.Key, e.Value)
			}
		}
	}
	if !mapsEqual(truth, all) {
		t.Fatalf("All over the instances: %s", mapDiff(truth, all))
	}
	if missing != 6*2 {
		t.Fatalf("%d partitions missing over the instances, want each of 6 missing on 2 instances", missing)
	}

	// Stop the instance with the most tasks; query all the while.
	victim := ""
	for name, qi := range insts {
		if victim == "" || len(qi.app.Stats().Tasks) > len(insts[victim].app.Stats().Tasks) {
			victim = name
		}
	}
	insts[victim].stop()
	// The victim answers while it closes, and "not available" after.
	stopped := map[string]bool{victim: true}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		for _, k := range keys[:50] {
			queryAnswer(t, insts, stopped, k, truth[k], &seen)
		}
		time.Sleep(time.Millisecond) // pacing the queries on a shared machine, not waiting for anything
	}
	insts[victim].waited = true
	if err := <-insts[victim].done; err != nil {
		t.Fatalf("instance %s: %v", victim, err)
	}
	settle(stopped)
	t.Logf("stopped %s; every key answered by a survivor; answers over the test: %+v", victim, seen)
}

// TestQueryNotStarted: before Run, queries say to retry, and a view of the
// wrong types or of a store not there is refused.
func TestQueryNotStarted(t *testing.T) {
	app, err := stream.New(countTopology("in", "out", nil), stream.Brokers("127.0.0.1:1"), stream.AppID("q"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.QueryKeyValue(app, "counts", serde.String{}, serde.String{}); err == nil {
		t.Fatal("a view of string values over an int64 store was made")
	}
	if _, err := stream.QueryKeyValue(app, "nope", serde.String{}, serde.Int64{}); err == nil {
		t.Fatal("a view of a missing store was made")
	}
	view, err := stream.QueryKeyValue(app, "counts", serde.String{}, serde.Int64{})
	if err != nil {
		t.Fatal(err)
	}
	_, _, _, err = view.Get("x")
	var na *stream.NotAvailableError
	if !errors.As(err, &na) || !na.Retry {
		t.Fatalf("Get before Run: %v, want not available, retry", err)
	}
	if _, err := app.KeyOwner("counts", []byte("x")); !errors.As(err, &na) {
		t.Fatalf("KeyOwner before Run: %v, want not available", err)
	}
}
