package state_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
)

// sharedValue is the value the writer of TestSharedReads puts for version n
// of a key: n, then bytes that all depend on n, so a torn value shows.
func sharedValue(n uint64) []byte {
	v := make([]byte, 40)
	binary.BigEndian.PutUint64(v, n)
	for i := 8; i < len(v); i++ {
		v[i] = byte(n + uint64(i))
	}
	return v
}

func checkSharedValue(v []byte, max uint64) error {
	if len(v) != 40 {
		return fmt.Errorf("value of %d bytes", len(v))
	}
	n := binary.BigEndian.Uint64(v)
	if !bytes.Equal(v, sharedValue(n)) {
		return fmt.Errorf("torn value %x", v)
	}
	if n > max {
		return fmt.Errorf("version %d, never written (last %d)", n, max)
	}
	return nil
}

// TestSharedReads: one goroutine writes a store as the runtime does (gets,
// puts, deletes, range drops, dirty entries taken and applied, write-backs
// of a full cache, flushes, iterators) while others Peek (or Get) and
// Range it. Every value read is one that was written, whole; a key that
// always has a value (the even keys, never deleted or dropped) is never
// missing. Under -race it checks that the lock covers what the two sides
// share: the cache's map, the memory store's tree.
func TestSharedReads(t *testing.T) {
	for _, tc := range []struct {
		name string
		open func() (w state.Backend, peek func([]byte) ([]byte, bool, error), apply func() error)
	}{
		{"cache", func() (state.Backend, func([]byte) ([]byte, bool, error), func() error) {
			mem := state.NewMemory()
			c := state.NewCache(mem, 16, nil) // small: full caches write back
			c.ShareReads()
			apply := func() error { return c.Flush() } // drops and dirty entries to the store
			return c, c.Peek, apply
		}},
		{"backend", func() (state.Backend, func([]byte) ([]byte, bool, error), func() error) {
			b := state.ShareReads(state.NewMemory())
			return b, b.Get, b.Flush
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, peek, apply := tc.open()
			const keys, versions = 64, 3000
			key := func(k int) []byte { return fmt.Appendf(nil, "k%02d", k) }
			var last atomic.Uint64 // every value written has a version <= last
			for k := 0; k < keys; k += 2 {
				must(0, w.Put(key(k), sharedValue(0)))
			}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var reads atomic.Int64
			for r := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						k := (i + r) % keys
						v, ok, err := peek(key(k))
						// Loaded after the read: the writer counts a
						// version once its Put is done.
						max := last.Load()
						if err != nil {
							t.Error(err)
							return
						}
						if !ok && k%2 == 0 {
							t.Errorf("k%02d missing", k)
							return
						}
						if ok {
							if err := checkSharedValue(v, max+1); err != nil {
								t.Errorf("k%02d: %v", k, err)
								return
							}
						}
						reads.Add(1)
						if i%16 == 0 {
							it, err := w.Range(nil, nil)
							if err != nil {
								t.Error(err)
								return
							}
							var vals [][]byte
							for it.Next() {
								vals = append(vals, bytes.Clone(it.Value()))
							}
							max := last.Load()
							for _, v := range vals {
								if err := checkSharedValue(v, max+1); err != nil {
									t.Errorf("range: %v", err)
								}
							}
							if err := it.Close(); err != nil {
								t.Error(err)
							}
						}
					}
				}()
			}
			store := state.NewKeyValueStore("s", w, serde.Bytes{}, serde.Bytes{}, nil)
			// The writes take microseconds: without this wait a busy
			// machine may run them all before a reader is scheduled.
			for reads.Load() < 2 && !t.Failed() {
				runtime.Gosched()
			}
			for n := uint64(1); n <= versions; n++ {
				if n%64 == 0 {
					runtime.Gosched() // let the readers in between writes
				}
				last.Store(n - 1)
				k := int(n) % keys
				if _, _, err := store.Get(key(k)); err != nil {
					t.Fatal(err)
				}
				must(0, store.Put(key(k), sharedValue(n)))
				last.Store(n)
				switch {
				case k%2 == 1 && n%5 == 0:
					must(0, store.Delete(key(k)))
				case n%97 == 0:
					// Odd keys only: k01 up to, not with, k02.
					must(0, w.(state.RangeDeleter).DeleteRange(key(1), append(key(1), 0)))
				case n%50 == 0:
					must(0, apply())
				}
			}
			close(stop)
			wg.Wait()
			if reads.Load() == 0 {
				t.Fatal("no reads")
			}
		})
	}
}

// BenchmarkCachedCountShared is BenchmarkCachedCount through a cache that
// shares its reads (Cache.ShareReads), with no reader: the difference is
// what a queryable store's lock costs processing.
func BenchmarkCachedCountShared(b *testing.B) {
	for _, shared := range []bool{false, true} {
		b.Run(fmt.Sprintf("shared=%v", shared), func(b *testing.B) {
			c := state.NewCache(state.NewMemory(), 10_000, func() {})
			if shared {
				c.ShareReads()
			}
			c.SetClock(&fakeClock{now: 1})
			store := state.NewKeyValueStore("counts", c, serde.String{}, serde.Int64{}, nil)
			keys := make([]string, 1000)
			for i := range keys {
				keys[i] = fmt.Sprintf("key-%d", i)
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				k := keys[i%len(keys)]
				n, _, err := store.Get(k)
				if err != nil {
					b.Fatal(err)
				}
				if err := store.Put(k, n+1); err != nil {
					b.Fatal(err)
				}
				if i%10_000 == 0 {
					c.Dirty()
				}
			}
		})
	}
}
