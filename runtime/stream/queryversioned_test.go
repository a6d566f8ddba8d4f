package stream_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/runtime/dsl"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/twmb/franz-go/pkg/kgo"
)

// versionedHistory is what a versioned table of keys holds: each key's
// versions by time, a nil value a tombstone (the last record of a time
// wins, as the store keeps it).
type versionedHistory map[string]map[int64]*string

// asOf is the version of key valid at t, as the store must answer it: the
// version of the largest time not after t, valid up to the next one's
// time (state.PutValidToUndefined for the latest); ok false for a
// tombstone or a time before the key's first version.
func (h versionedHistory) asOf(key string, t int64) (rec state.VersionedRecord[*string], ok bool) {
	times := slices.Sorted(func(yield func(int64) bool) {
		for ts := range h[key] {
			if !yield(ts) {
				return
			}
		}
	})
	i, found := slices.BinarySearch(times, t)
	if !found {
		i--
	}
	if i < 0 || h[key][times[i]] == nil {
		return rec, false
	}
	rec = state.VersionedRecord[*string]{Value: h[key][times[i]], Timestamp: times[i], ValidTo: state.PutValidToUndefined}
	if i+1 < len(times) {
		rec.ValidTo = times[i+1]
	}
	return rec, true
}

// versionedRecords makes the versions of keys: for key i, versions a
// second apart from base, the third put out of time order (it lands in the
// history), a tombstone as the fifth for every third key (so a time after
// it reads nothing until the sixth), and the key's last record a
// tombstone for every fourth key (so its latest is none).
func versionedRecords(topic string, keys int, base int64) ([]*kgo.Record, versionedHistory) {
	h := versionedHistory{}
	var recs []*kgo.Record
	for v := range 7 {
		for k := range keys {
			key := fmt.Sprintf("k%02d", k)
			ts := base + int64(v)*1000
			if v == 2 {
				ts = base + 500 // between the first two
			}
			val := fmt.Sprintf("%s-v%d", key, v)
			var vp *string = &val
			if (v == 4 && k%3 == 0) || (v == 6 && k%4 == 0) {
				vp = nil
			}
			if h[key] == nil {
				h[key] = map[int64]*string{}
			}
			h[key][ts] = vp
			rec := &kgo.Record{Topic: topic, Key: []byte(key), Timestamp: time.UnixMilli(ts)}
			if vp != nil {
				rec.Value = []byte(*vp)
			}
			recs = append(recs, rec)
		}
	}
	return recs, h
}

// versionedInstance is one running instance of the versioned query test.
type versionedInstance struct {
	app  *stream.App
	view *stream.VersionedView[string, *string]
	stop func()
}

func startVersionedInstance(t *testing.T, c *kafkatest.Cluster, appID, in, name string) *versionedInstance {
	t.Helper()
	topo := stream.NewTopology()
	dsl.VersionedTable(topo, "prices", in, serde.Serde[string](serde.String{}), serde.Serde[string](serde.String{}), "prices-store", time.Hour,
		stream.StoreOptions{Changelog: true, Persistent: onDisk})
	app, err := stream.New(topo, stream.Brokers(c.Seeds()...), stream.AppID(appID), stream.StateDir(t.TempDir()),
		stream.InstanceID(name), stream.AdvertisedAddress(name+".example:8080"), stream.StandbyReplicas(1),
		stream.CommitInterval(100*time.Millisecond), stream.Logger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	// The view checks the store's kind and types.
	if _, err := stream.QueryVersioned[string, string](app, "prices-store", serde.String{}); err == nil {
		t.Fatal("a versioned view of string values was made of a store of *string")
	}
	if _, err := stream.QueryKeyValue(app, "prices-store", serde.String{}, dsl.Nullable[string](serde.String{})); err == nil {
		t.Fatal("a key-value view of a versioned store was made")
	}
	view, err := stream.QueryVersioned[string, *string](app, "prices-store", serde.String{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			if err := <-done; err != nil {
				t.Errorf("instance %s: %v", name, err)
			}
		}
	}
	t.Cleanup(stop)
	return &versionedInstance{app: app, view: view, stop: stop}
}

// TestQueryVersioned runs two instances of a versioned table and asks each
// for every key, latest and as of times before, at, between and after its
// versions and tombstones: the instance running the key's task answers as
// the history says, the other names it (NotLocalError), or answers from
// its standby copy when stale answers are allowed. Then one instance stops
// and the other, after the rebalance, answers every key from the store it
// restored.
func TestQueryVersioned(t *testing.T) {
	c := kafkatest.New(t)
	in := c.CreateTopic(t, 4, nil)
	appID := "queryver-" + in
	base := time.Now().Add(-10 * time.Minute).Truncate(time.Second).UnixMilli()
	recs, hist := versionedRecords(in, 12, base)
	produceAll(t, c.Client(t), recs)
	// The times asked: before every version, at and between each.
	times := []int64{math.MinInt64, base - 1, base + 499, base + 500}
	for v := range 7 {
		times = append(times, base+int64(v)*1000, base+int64(v)*1000+1)
	}
	times = append(times, base+time.Hour.Milliseconds())

	insts := map[string]*versionedInstance{
		"a": startVersionedInstance(t, c, appID, in, "a"),
		"b": startVersionedInstance(t, c, appID, in, "b"),
	}
	waitCaughtUp(t, c.Admin(t), appID, in)

	// sweep asks every running instance for every key; it returns what is
	// not yet as it must be once the group settles (a task restoring,
	// moving), and fails the test for an answer that is wrong whatever
	// the group does.
	sweep := func(running []string) (problems []string, byOwner map[string]int) {
		byOwner = map[string]int{}
		for key := range hist {
			owner := ""
			for _, name := range running {
				loc, err := insts[name].app.KeyOwner("prices-store", []byte(key))
				if err != nil || (owner != "" && loc.Active.ID != owner) {
					return append(problems, fmt.Sprintf("%s: owner of %s: %+v, %v", name, key, loc.Active, err)), nil
				}
				owner = loc.Active.ID
			}
			if !slices.Contains(running, owner) {
				return append(problems, fmt.Sprintf("%s is owned by %q, not a running instance", key, owner)), nil
			}
			byOwner[owner]++
			for _, name := range running {
				view := insts[name].view
				for _, at := range append([]int64{math.MaxInt64}, times...) {
					var got state.VersionedRecord[*string]
					var ok bool
					var served stream.Served
					var err error
					if at == math.MaxInt64 {
						got, ok, served, err = view.Get(key)
					} else {
						got, ok, served, err = view.GetAsOf(key, at)
					}
					var nl *stream.NotLocalError
					var na *stream.NotAvailableError
					switch {
					case errors.As(err, &na):
						problems = append(problems, fmt.Sprintf("%s: %s@%d: %v", name, key, at, err))
						continue
					case errors.As(err, &nl):
						if name == owner || nl.Owner.ID != owner || nl.Owner.Address != owner+".example:8080" {
							problems = append(problems, fmt.Sprintf("%s: %s@%d: %v; owner %s", name, key, at, err, owner))
						}
						continue
					case err != nil:
						t.Fatalf("%s: %s@%d: %v", name, key, at, err)
					}
					if name != owner || served.Instance.ID != name || served.Stale {
						problems = append(problems, fmt.Sprintf("%s: %s@%d served by %+v; owner %s", name, key, at, served, owner))
						continue
					}
					want, wantOK := hist.asOf(key, at)
					if at == math.MaxInt64 {
						want, wantOK = hist.asOf(key, math.MaxInt64-1)
					}
					if ok != wantOK || ok && (*got.Value != *want.Value || got.Timestamp != want.Timestamp || got.ValidTo != want.ValidTo) {
						problems = append(problems, fmt.Sprintf("%s: %s@%d = %s, %v; want %s, %v", name, key, at, fmtVersion(got), ok, fmtVersion(want), wantOK))
					}
				}
			}
		}
		return problems, byOwner
	}
	settle := func(running ...string) map[string]int {
		t.Helper()
		var problems []string
		var byOwner map[string]int
		for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if problems, byOwner = sweep(running); len(problems) == 0 {
				return byOwner
			}
		}
		t.Fatalf("running %v: %d problems, first: %s", running, len(problems), strings.Join(problems[:min(len(problems), 10)], "\n"))
		return nil
	}
	if byOwner := settle("a", "b"); byOwner["a"] == 0 || byOwner["b"] == 0 {
		t.Fatalf("keys by owner %v: want keys on both instances", byOwner)
	}
	// The test's model is not vacuous: some asks find nothing, some find
	// a version with an end, some the latest.
	var none, ended, latest int
	for key := range hist {
		for _, at := range times {
			switch rec, ok := hist.asOf(key, at); {
			case !ok:
				none++
			case rec.ValidTo == state.PutValidToUndefined:
				latest++
			default:
				ended++
			}
		}
	}
	if none == 0 || ended == 0 || latest == 0 {
		t.Fatalf("the model answers none %d, ended %d, latest %d: want some of each", none, ended, latest)
	}

	// With stale answers allowed, the instance that does not run a key's
	// task answers from its standby copy, restored from the changelog,
	// which catches up with the history.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var problems []string
		for key := range hist {
			loc, err := insts["a"].app.KeyOwner("prices-store", []byte(key))
			if err != nil {
				problems = append(problems, err.Error())
				continue
			}
			other := "a"
			if loc.Active.ID == "a" {
				other = "b"
			}
			for _, at := range times {
				got, ok, served, err := insts[other].view.AllowStale().GetAsOf(key, at)
				want, wantOK := hist.asOf(key, at)
				switch {
				case err != nil:
					problems = append(problems, fmt.Sprintf("%s: stale %s@%d: %v", other, key, at, err))
				case !served.Stale || served.Instance.ID != other:
					problems = append(problems, fmt.Sprintf("%s: stale %s@%d served by %+v", other, key, at, served))
				case ok != wantOK || ok && (*got.Value != *want.Value || got.Timestamp != want.Timestamp || got.ValidTo != want.ValidTo):
					problems = append(problems, fmt.Sprintf("%s: stale %s@%d = %s, %v; want %s, %v", other, key, at, fmtVersion(got), ok, fmtVersion(want), wantOK))
				}
			}
		}
		if len(problems) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stale reads: %d problems, first: %s", len(problems), strings.Join(problems[:min(len(problems), 10)], "\n"))
		}
	}

	insts["b"].stop()
	if byOwner := settle("a"); byOwner["a"] != len(hist) {
		t.Fatalf("after b stopped, keys by owner %v: want all on a", byOwner)
	}
}

func fmtVersion(r state.VersionedRecord[*string]) string {
	v := "<nil>"
	if r.Value != nil {
		v = *r.Value
	}
	return fmt.Sprintf("%s@[%d,%d)", v, r.Timestamp, r.ValidTo)
}

// latestStamper keeps each key's last value with its record's time in a
// timestamped key-value store.
type latestStamper struct {
	s state.KeyValueStore[string, state.ValueAndTimestamp[string]]
}

func (p *latestStamper) Init(ctx *stream.Context[string, string]) (err error) {
	p.s, err = stream.GetKeyValueStore[string, state.ValueAndTimestamp[string]](ctx, "latest")
	return err
}

func (p *latestStamper) Process(_ *stream.Context[string, string], r stream.Record[string, string]) error {
	return p.s.Put(r.Key, state.ValueAndTimestamp[string]{Value: r.Value, Timestamp: r.Timestamp.UnixMilli()})
}

// TestQueryTimestampedKeyValue: a timestamped key-value store answers
// through a key-value view with each value's timestamp, for one key and
// for all; QueryKeyValue refuses it.
func TestQueryTimestampedKeyValue(t *testing.T) {
	c := kafkatest.New(t)
	in := c.CreateTopic(t, 2, nil)
	appID := "querytskv-" + in
	topo := stream.NewTopology()
	stream.AddSource(topo, "in", in, serde.String{}, serde.String{})
	stream.AddProcessor(topo, "stamp", func() stream.Processor[string, string, string, string] { return &latestStamper{} }, "in")
	stream.AddTimestampedKeyValueStore(topo, "latest", serde.String{}, serde.String{}, stream.StoreOptions{Changelog: true}, "stamp")
	base := time.Now().Add(-time.Hour).UnixMilli()
	want := map[string]state.ValueAndTimestamp[string]{}
	var recs []*kgo.Record
	for i := range 40 {
		k, v, ts := fmt.Sprintf("k%d", i%8), fmt.Sprintf("v%d", i), base+int64(i)*1000
		want[k] = state.ValueAndTimestamp[string]{Value: v, Timestamp: ts}
		recs = append(recs, &kgo.Record{Topic: in, Key: []byte(k), Value: []byte(v), Timestamp: time.UnixMilli(ts)})
	}
	produceAll(t, c.Client(t), recs)
	app, err := stream.New(topo, stream.Brokers(c.Seeds()...), stream.AppID(appID), stream.StateDir(t.TempDir()),
		stream.CommitInterval(100*time.Millisecond), stream.Logger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.QueryKeyValue(app, "latest", serde.String{}, serde.String{}); err == nil {
		t.Fatal("a plain key-value view of a timestamped store was made")
	}
	if _, err := stream.QueryTimestampedKeyValue(app, "latest", serde.String{}, serde.Int64{}); err == nil {
		t.Fatal("a view of int64 values was made of a store of strings")
	}
	view, err := stream.QueryTimestampedKeyValue(app, "latest", serde.String{}, serde.String{})
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
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		all, err := view.All()
		got := map[string]state.ValueAndTimestamp[string]{}
		for _, e := range all.Entries {
			got[e.Key] = e.Value
		}
		if err == nil && len(all.Missing) == 0 && len(got) == len(want) {
			for k, w := range want {
				if got[k] != w {
					t.Errorf("All: %s = %+v, want %+v", k, got[k], w)
				}
				if v, ok, _, err := view.Get(k); err != nil || !ok || v != w {
					t.Errorf("Get(%s) = %+v, %v, %v; want %+v", k, v, ok, err, w)
				}
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("All: %d entries, missing %v, %v; want %d", len(got), all.Missing, err, len(want))
		}
	}
}
