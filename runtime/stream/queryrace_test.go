package stream_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// raceValueLen is the length of the values TestQueryableStoreUnderWrites
// writes: long enough that a torn value would show.
const raceValueLen = 64

// raceValue is the value written for the n-th record of a key: n, then
// bytes that all depend on n.
func raceValue(n int64) []byte {
	v := make([]byte, raceValueLen)
	binary.BigEndian.PutUint64(v, uint64(n))
	for i := 8; i < raceValueLen; i++ {
		v[i] = byte(n*7 + int64(i))
	}
	return v
}

// raceValueN is the n of a value raceValue wrote, or an error when v is not
// one.
func raceValueN(v []byte) (int64, error) {
	if len(v) != raceValueLen {
		return 0, fmt.Errorf("value of %d bytes, want %d", len(v), raceValueLen)
	}
	n := int64(binary.BigEndian.Uint64(v))
	for i := 8; i < raceValueLen; i++ {
		if v[i] != byte(n*7+int64(i)) {
			return 0, fmt.Errorf("torn value %x (n %d)", v, n)
		}
	}
	return n, nil
}

// raceWriter puts raceValue(n) under each record's key, n its value.
type raceWriter struct {
	store state.KeyValueStore[string, []byte]
}

func (w *raceWriter) Init(ctx *stream.Context[string, []byte]) (err error) {
	w.store, err = stream.GetKeyValueStore[string, []byte](ctx, "vals")
	return err
}

func (w *raceWriter) Process(ctx *stream.Context[string, []byte], r stream.Record[string, string]) error {
	n, err := strconv.ParseInt(r.Value, 10, 64)
	if err != nil {
		return err
	}
	if old, ok, err := w.store.Get(r.Key); err != nil {
		return err
	} else if ok {
		if _, err := raceValueN(old); err != nil {
			return err
		}
	}
	return w.store.Put(r.Key, raceValue(n))
}

func (w *raceWriter) Close() error { return nil }

// TestQueryableStoreUnderWrites: queries hammer a queryable store (read
// while its unit processes, each store operation under the store's lock)
// while the unit writes it, and while its tasks move to a second instance
// and back. Every answer is right or says to retry: a value that was
// written, whole (never torn), for a key once seen never "no value" from
// a running active task. Stale reads of standbys may lag but never invent.
// Run under -race, it also checks that the unit's writes and the queries'
// reads share nothing unguarded: Pebble with its record cache, and a
// memory store without one (CacheRecords(0)), which locks its backend.
func TestQueryableStoreUnderWrites(t *testing.T) {
	for _, tc := range []struct {
		name       string
		persistent state.Opener
		more       []stream.Option
	}{
		{"pebble", onDisk, nil},
		{"memory-uncached", nil, []stream.Option{stream.CacheRecords(0)}},
	} {
		t.Run(tc.name, func(t *testing.T) { queryableUnderWrites(t, tc.persistent, tc.more) })
	}
}

func queryableUnderWrites(t *testing.T, persistent state.Opener, more []stream.Option) {
	const keys, rounds = 32, 150
	c := kafkatest.New(t)
	in := c.CreateTopic(t, 4, nil)
	appID := "queryrace-" + in
	type inst struct {
		app  *stream.App
		view *stream.KeyValueView[string, []byte]
		stop context.CancelFunc
		done chan error
	}
	start := func(name string) *inst {
		topo := stream.NewTopology()
		stream.AddSource(topo, "in", in, serde.String{}, serde.String{})
		stream.AddProcessor(topo, "write", func() stream.Processor[string, string, string, []byte] { return &raceWriter{} }, "in")
		stream.AddKeyValueStore(topo, "vals", serde.String{}, serde.Bytes{},
			stream.StoreOptions{Persistent: persistent, Changelog: true, Queryable: true}, "write")
		app, err := stream.New(topo, append([]stream.Option{stream.Brokers(c.Seeds()...), stream.AppID(appID),
			stream.StateDir(t.TempDir()), stream.InstanceID(name), stream.StandbyReplicas(1),
			stream.CommitInterval(20 * time.Millisecond), stream.Logger(testLogger(t))}, more...)...)
		if err != nil {
			t.Fatal(err)
		}
		view, err := stream.QueryKeyValue(app, "vals", serde.String{}, serde.Bytes{})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		it := &inst{app: app, view: view, stop: cancel, done: make(chan error, 1)}
		go func() { it.done <- app.Run(ctx) }()
		return it
	}
	var sent [keys]atomic.Int64 // the largest n produced of each key
	cl := c.Client(t)
	produceRound := func(r int64) error {
		recs := make([]*kgo.Record, keys)
		for k := range keys {
			sent[k].Store(r) // before it can be written
			recs[k] = &kgo.Record{Topic: in, Key: fmt.Appendf(nil, "k%02d", k), Value: strconv.AppendInt(nil, r, 10)}
		}
		return cl.ProduceSync(context.Background(), recs...).FirstErr()
	}
	a := start("a")
	defer func() {
		a.stop()
		if err := <-a.done; err != nil {
			t.Errorf("instance a: %v", err)
		}
	}()
	if err := produceRound(1); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if _, ok, _, err := a.view.Get("k00"); err == nil && ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no answer within a minute")
		}
	}

	var views sync.Map // instance name -> *stream.KeyValueView
	views.Store("a", a.view)
	var seen [keys]atomic.Bool // a key once read has a value from then on
	var answered, retried, stale atomic.Int64
	stopReaders := make(chan struct{})
	var readers sync.WaitGroup
	fail := func(format string, args ...any) {
		t.Errorf(format, args...)
	}
	check := func(where string, k int, v []byte) {
		n, err := raceValueN(v)
		switch {
		case err != nil:
			fail("%s: k%02d: %v", where, k, err)
		case n < 1 || n > sent[k].Load():
			fail("%s: k%02d = %d, never written (sent up to %d)", where, k, n, sent[k].Load())
		}
	}
	read := func() {
		defer readers.Done()
		for i := 0; ; i++ {
			select {
			case <-stopReaders:
				return
			default:
			}
			k := i % keys
			key := fmt.Sprintf("k%02d", k)
			views.Range(func(name, v any) bool {
				view := v.(*stream.KeyValueView[string, []byte])
				wasSeen := seen[k].Load()
				got, ok, served, err := view.Get(key)
				var na *stream.NotAvailableError
				var nl *stream.NotLocalError
				switch {
				case errors.As(err, &na) || errors.As(err, &nl):
					retried.Add(1)
				case err != nil:
					fail("instance %s: Get(%s): %v", name, key, err)
				case !ok && wasSeen:
					fail("instance %s: Get(%s): no value (served by %+v), after one was read", name, key, served)
				case ok:
					answered.Add(1)
					seen[k].Store(true)
					check("instance "+name.(string)+": Get", k, got)
				}
				got, ok, served, err = view.AllowStale().Get(key)
				if err == nil && ok {
					if served.Stale {
						stale.Add(1)
					}
					check("instance "+name.(string)+": stale Get", k, got)
				}
				return true
			})
			if i%keys == 0 {
				views.Range(func(name, v any) bool {
					res, err := v.(*stream.KeyValueView[string, []byte]).All()
					var na *stream.NotAvailableError
					if errors.As(err, &na) && na.Retry {
						return true // b has not started yet
					}
					if err != nil {
						fail("instance %s: All: %v", name, err)
						return false
					}
					for _, e := range res.Entries {
						var k int
						if _, err := fmt.Sscanf(e.Key, "k%02d", &k); err != nil || k < 0 || k >= keys {
							fail("instance %s: All: key %q never written", name, e.Key)
							continue
						}
						check("instance "+name.(string)+": All", k, e.Value)
					}
					return true
				})
			}
		}
	}
	for range 2 {
		readers.Add(1)
		go read()
	}

	var b *inst
	for r := int64(2); r <= rounds; r++ {
		if err := produceRound(r); err != nil {
			t.Fatal(err)
		}
		switch r {
		case rounds / 3:
			// A rebalance: some tasks move to b, the others get standbys.
			b = start("b")
			views.Store("b", b.view)
		case 2 * rounds / 3:
			// b leaves while it is queried: its tasks move back to a.
			b.stop()
			if err := <-b.done; err != nil {
				t.Errorf("instance b: %v", err)
			}
		}
		time.Sleep(2 * time.Millisecond) // spreads the rounds over the rebalances
	}
	// Every key's last value reaches a.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		last := 0
		for k := range keys {
			if v, ok, _, err := a.view.Get(fmt.Sprintf("k%02d", k)); err == nil && ok {
				if n, _ := raceValueN(v); n == rounds {
					last++
				}
			}
		}
		if last == keys {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d keys at their last value after a minute", last, keys)
		}
	}
	close(stopReaders)
	readers.Wait()
	if answered.Load() == 0 {
		t.Fatal("no query answered")
	}
	t.Logf("answers %d, retries %d, stale answers %d", answered.Load(), retried.Load(), stale.Load())
}
