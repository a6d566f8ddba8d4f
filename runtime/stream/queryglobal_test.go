package stream_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// globalQueryInstance is one running instance of the global query tests.
type globalQueryInstance struct {
	app  *stream.App
	view *stream.KeyValueView[string, int64]
	stop func()
}

func startGlobalQueryInstance(t *testing.T, c *kafkatest.Cluster, appID, customers, orders, out, name string, persistent state.Opener) *globalQueryInstance {
	t.Helper()
	app, err := stream.New(enrichTopics(customers, orders, out, persistent), stream.Brokers(c.Seeds()...),
		stream.AppID(appID), stream.StateDir(t.TempDir()), stream.InstanceID(name), stream.AdvertisedAddress(name+".example:8080"),
		stream.CommitInterval(100*time.Millisecond), stream.Logger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	// The view checks the table's types.
	if _, err := stream.QueryKeyValue(app, "customers", serde.String{}, serde.String{}); err == nil {
		t.Fatal("a view of string values was made of a global table of int64")
	}
	view, err := stream.QueryKeyValue(app, "customers", serde.String{}, serde.Int64{})
	if err != nil {
		t.Fatal(err)
	}
	// Before Run has loaded the table: not available, retry.
	var na *stream.NotAvailableError
	if _, _, _, err := view.Get("c000"); !errors.As(err, &na) || !na.Retry {
		t.Fatalf("get before run: %v, want a NotAvailableError to retry", err)
	}
	if _, err := view.All(); !errors.As(err, &na) || !na.Retry {
		t.Fatalf("all before run: %v, want a NotAvailableError to retry", err)
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
	return &globalQueryInstance{app: app, view: view, stop: stop}
}

// TestQueryGlobalTable runs two instances reading a global table of a
// 4-partition topic and asks both for every key, by Get, Prefix and All:
// each answers every key itself (never a NotLocalError, nothing missing),
// served by itself as global. Then the table changes (new values, a
// tombstone) and both follow; a stopped instance answers "not available"
// for good.
func TestQueryGlobalTable(t *testing.T) {
	for _, kind := range []struct {
		name       string
		persistent state.Opener
	}{{"memory", nil}, {"pebble", onDisk}} {
		t.Run(kind.name, func(t *testing.T) {
			c := kafkatest.New(t)
			customers, orders, out := c.CreateTopic(t, 4, nil), c.CreateTopic(t, 3, nil), c.CreateTopic(t, 3, nil)
			appID := "queryglobal-" + orders
			cl := c.Client(t)
			rows, _ := customerRows(customers, orders, 0, 40, 1000)
			produceAll(t, cl, rows)
			want := map[string]int64{}
			for i := range 40 {
				want[fmt.Sprintf("c%03d", i)] = 1000 + int64(i)
			}
			insts := map[string]*globalQueryInstance{
				"a": startGlobalQueryInstance(t, c, appID, customers, orders, out, "a", kind.persistent),
				"b": startGlobalQueryInstance(t, c, appID, customers, orders, out, "b", kind.persistent),
			}
			// check returns what differs from want; it fails the test at
			// once for an answer that is wrong however far the table got.
			check := func() []string {
				var problems []string
				for name, in := range insts {
					for key, w := range want {
						got, ok, served, err := in.view.Get(key)
						if err != nil {
							t.Fatalf("%s: get %s: %v", name, key, err)
						}
						if !served.Global || served.Instance.ID != name || served.Instance.Address != name+".example:8080" || served.Stale {
							t.Fatalf("%s: get %s served by %+v", name, key, served)
						}
						// Every instance owns every key of a global table.
						loc, err := in.app.KeyOwner("customers", []byte(key))
						if err != nil || !loc.LocalActive || loc.Active.ID != name || loc.Task != (stream.TaskID{Subtopology: -1, Partition: -1}) {
							t.Fatalf("%s: KeyOwner(%s) = %+v, %v; want this instance, task -1_-1", name, key, loc, err)
						}
						if w < 0 && ok || w >= 0 && (!ok || got != w) {
							problems = append(problems, fmt.Sprintf("%s: %s = %d, %v; want %d", name, key, got, ok, w))
						}
					}
					all, err := in.view.All()
					if err != nil {
						t.Fatalf("%s: all: %v", name, err)
					}
					if len(all.Missing) != 0 || len(all.Served) != 1 || !all.Served[0].Global || all.Served[0].Instance.ID != name {
						t.Fatalf("%s: all: missing %v, served %+v", name, all.Missing, all.Served)
					}
					var present []string
					for k, w := range want {
						if w >= 0 {
							present = append(present, k)
						}
					}
					if len(all.Entries) != len(present) {
						problems = append(problems, fmt.Sprintf("%s: all: %d entries, want %d", name, len(all.Entries), len(present)))
					}
					for i, e := range all.Entries {
						if i > 0 && all.Entries[i-1].Key >= e.Key {
							t.Fatalf("%s: all: %q after %q", name, e.Key, all.Entries[i-1].Key)
						}
						if w, ok := want[e.Key]; !ok || w != e.Value {
							problems = append(problems, fmt.Sprintf("%s: all: %s = %d; want %d", name, e.Key, e.Value, w))
						}
					}
					pre, err := in.view.Prefix("c00")
					if err != nil {
						t.Fatalf("%s: prefix: %v", name, err)
					}
					for _, e := range pre.Entries {
						if !strings.HasPrefix(e.Key, "c00") {
							t.Fatalf("%s: prefix c00 returned %q", name, e.Key)
						}
					}
				}
				return problems
			}
			settle := func() {
				t.Helper()
				var problems []string
				waitFor(t, "both instances to answer every key", func() bool {
					problems = check()
					return len(problems) == 0
				})
			}
			// Run loads the table before the App starts: once Running,
			// every key is there.
			waitFor(t, "both instances to run", func() bool {
				return insts["a"].app.State() == stream.Running && insts["b"].app.State() == stream.Running
			})
			if p := check(); len(p) != 0 {
				t.Fatalf("running but not loaded: %s", strings.Join(p[:min(len(p), 5)], "\n"))
			}
			pre, err := insts["a"].view.Prefix("c00")
			if err != nil || len(pre.Entries) != 10 {
				t.Fatalf("prefix c00: %d entries, %v; want 10", len(pre.Entries), err)
			}
			rng, err := insts["b"].view.Range("c010", "c020")
			if err != nil || len(rng.Entries) != 10 || rng.Entries[0].Key != "c010" || rng.Entries[9].Key != "c019" {
				t.Fatalf("range [c010, c020): %+v, %v", rng.Entries, err)
			}

			// The updater follows the topic while queries read.
			produceAll(t, cl, []*kgo.Record{
				{Topic: customers, Key: []byte("c005"), Value: int64Bytes(5)},
				{Topic: customers, Key: []byte("c006")}, // a tombstone
				{Topic: customers, Key: []byte("c040"), Value: int64Bytes(40)},
			})
			want["c005"], want["c006"], want["c040"] = 5, -1, 40
			settle()

			insts["b"].stop()
			var na *stream.NotAvailableError
			if _, _, _, err := insts["b"].view.Get("c000"); !errors.As(err, &na) || na.Retry {
				t.Fatalf("get of a stopped instance: %v, want a NotAvailableError not to retry", err)
			}
			delete(insts, "b")
			settle()
		})
	}
}

// TestQueryGlobalTableUnderWrites queries a global table from two
// goroutines, by Get and by All, while its updater applies rounds of new
// values of every key: every answer is a whole value that was written,
// and a key's value never goes back to an older round (one partition's
// records are applied in order). Under -race it checks that the queries'
// reads are synchronized with the updater's writes.
func TestQueryGlobalTableUnderWrites(t *testing.T) {
	for _, kind := range []struct {
		name       string
		persistent state.Opener
	}{{"memory", nil}, {"pebble", onDisk}} {
		t.Run(kind.name, func(t *testing.T) {
			c := kafkatest.New(t)
			customers, orders, out := c.CreateTopic(t, 2, nil), c.CreateTopic(t, 1, nil), c.CreateTopic(t, 1, nil)
			cl := c.Client(t)
			const keys, rounds = 50, 20
			round := func(r int) []*kgo.Record {
				var recs []*kgo.Record
				for k := range keys {
					recs = append(recs, &kgo.Record{Topic: customers, Key: []byte(fmt.Sprintf("k%02d", k)), Value: int64Bytes(int64(r*1000 + k))})
				}
				return recs
			}
			produceAll(t, cl, round(0))
			in := startGlobalQueryInstance(t, c, "queryglobalw-"+orders, customers, orders, out, "a", kind.persistent)
			waitFor(t, "the instance to run", func() bool { return in.app.State() == stream.Running })

			valid := func(key string, v int64) (int, error) {
				k, err := strconv.Atoi(strings.TrimPrefix(key, "k"))
				if err != nil || v%1000 != int64(k) || v/1000 > rounds {
					return 0, fmt.Errorf("%s = %d: never written", key, v)
				}
				return int(v / 1000), nil
			}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			errs := make(chan error, 2)
			reads := make([]int, 2)
			for g := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					last := map[string]int{}
					seen := func(key string, v int64) error {
						r, err := valid(key, v)
						if err != nil {
							return err
						}
						if r < last[key] {
							return fmt.Errorf("%s went back from round %d to %d", key, last[key], r)
						}
						last[key] = r
						reads[g]++
						return nil
					}
					for {
						select {
						case <-stop:
							return
						default:
						}
						var err error
						if g == 0 {
							for k := range keys {
								key := fmt.Sprintf("k%02d", k)
								v, ok, _, gerr := in.view.Get(key)
								if gerr != nil || !ok {
									err = fmt.Errorf("get %s: %v, %v", key, ok, gerr)
									break
								}
								if err = seen(key, v); err != nil {
									break
								}
							}
						} else {
							all, aerr := in.view.All()
							if aerr != nil || len(all.Entries) != keys {
								err = fmt.Errorf("all: %d entries, %v", len(all.Entries), aerr)
							}
							for _, e := range all.Entries {
								if err == nil {
									err = seen(e.Key, e.Value)
								}
							}
						}
						if err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			for r := 1; r <= rounds; r++ {
				produceAll(t, cl, round(r))
			}
			waitFor(t, "the last round to be applied", func() bool {
				for k := range keys {
					v, ok, _, err := in.view.Get(fmt.Sprintf("k%02d", k))
					if err != nil || !ok || v/1000 != rounds {
						return false
					}
				}
				return true
			})
			close(stop)
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			if reads[0] == 0 || reads[1] == 0 {
				t.Fatalf("reads %v: a goroutine read nothing", reads)
			}
		})
	}
}
