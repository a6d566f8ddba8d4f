package pebblestore

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/google/go-cmp/cmp"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/state/statetest"
)

func TestReopenKeepsDataAfterFlush(t *testing.T) {
	for _, disableWAL := range []bool{false, true} {
		t.Run(fmt.Sprintf("disableWAL=%v", disableWAL), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "counts")
			opts := Options{DisableWAL: disableWAL}
			b, err := Open(dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			s := state.NewKeyValueStore("counts", b, serde.String{}, serde.Int64{}, nil)
			want := map[string]int64{}
			for i := range 100 {
				k := fmt.Sprintf("k%03d", i)
				if err := s.Put(k, int64(i)); err != nil {
					t.Fatal(err)
				}
				want[k] = int64(i)
			}
			if err := s.Delete("k050"); err != nil {
				t.Fatal(err)
			}
			delete(want, "k050")
			if err := b.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}

			b, err = Open(dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			statetest.CloseAtEnd(t, b)
			s = state.NewKeyValueStore("counts", b, serde.String{}, serde.Int64{}, nil)
			got := map[string]int64{}
			for _, e := range statetest.Drain(t, must(s.All())) {
				got[e.K] = e.V
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("after reopen (-want +got):\n%s", diff)
			}
			// Overwrites and deletes may be counted more than once before a
			// compaction, so the estimate is only bounded.
			n, err := s.ApproximateCount()
			if err != nil {
				t.Fatal(err)
			}
			if n < 90 || n > 120 {
				t.Errorf("ApproximateCount after reopen = %d, want about 99", n)
			}
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestFlushSurvivesCrash simulates a machine crash, which keeps only
// what was synced: everything written before Flush must survive it.
func TestFlushSurvivesCrash(t *testing.T) {
	for _, disableWAL := range []bool{false, true} {
		t.Run(fmt.Sprintf("disableWAL=%v", disableWAL), func(t *testing.T) {
			fs := vfs.NewCrashableMem()
			opts := Options{CacheSize: 1 << 20, DisableWAL: disableWAL}
			b, err := openPebble("store", opts, fs)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := b.Close(); err != nil {
					t.Error(err)
				}
			}()
			for i := range 50 {
				if err := b.Put(fmt.Appendf(nil, "k%02d", i), []byte("v")); err != nil {
					t.Fatal(err)
				}
			}
			if err := b.Flush(); err != nil {
				t.Fatal(err)
			}
			crashed := fs.CrashClone(vfs.CrashCloneCfg{}) // unsynced data is lost

			rb, err := openPebble("store", opts, crashed)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := rb.Close(); err != nil {
					t.Error(err)
				}
			}()
			got := statetest.DrainRaw(t, must(rb.Range(nil, nil)))
			if len(got) != 50 {
				t.Errorf("after crash: %d keys, want 50", len(got))
			}
		})
	}
}

// TestCrashWithoutFlushLosesWrites shows the crash simulation above can
// fail: without Flush, unsynced writes are gone.
func TestCrashWithoutFlushLosesWrites(t *testing.T) {
	fs := vfs.NewCrashableMem()
	b, err := openPebble("store", Options{CacheSize: 1 << 20}, fs)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Put([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	crashed := fs.CrashClone(vfs.CrashCloneCfg{})
	rb, err := openPebble("store", Options{CacheSize: 1 << 20}, crashed)
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	if _, ok, err := rb.Get([]byte("k")); err != nil || ok {
		t.Errorf("Get after crash without flush = %v, %v; want not found", ok, err)
	}
}

func TestCloseReportsLeakedIterators(t *testing.T) {
	b, err := Open(t.TempDir(), Options{CacheSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Put([]byte("a"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	closedIt := must(b.Range(nil, nil))
	if err := closedIt.Close(); err != nil {
		t.Fatal(err)
	}
	leaked := must(b.Range(nil, nil))
	if !leaked.Next() {
		t.Fatal("Next = false on a store with one key")
	}
	err = b.Close()
	if err == nil || !strings.Contains(err.Error(), "1 iterators were left open") {
		t.Fatalf("Close with an open iterator = %v, want an error about it", err)
	}
	// The leaked iterator was closed for the caller: using it is safe.
	if leaked.Next() {
		t.Error("Next on an iterator of a closed store = true")
	}
	if err := leaked.Close(); err != nil {
		t.Errorf("Close of an iterator closed by its store = %v", err)
	}
}

func TestCloseAfterIteratorsClosed(t *testing.T) {
	b, err := Open(t.TempDir(), Options{CacheSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		it := must(b.Range([]byte("a"), []byte("z")))
		for it.Next() {
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(b.(*pebbleStore).iters); n != 0 {
		t.Errorf("%d iterators tracked after closing them all", n)
	}
	if err := b.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
}

func TestApproximateCount(t *testing.T) {
	b, err := Open(t.TempDir(), Options{CacheSize: 1 << 20, DisableWAL: true})
	if err != nil {
		t.Fatal(err)
	}
	statetest.CloseAtEnd(t, b)
	for i := range 1000 {
		if err := b.Put(fmt.Appendf(nil, "%04d", i), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	assertCount := func(when string, lo, hi int64) {
		t.Helper()
		n, err := b.ApproximateCount()
		if err != nil {
			t.Fatal(err)
		}
		if n < lo || n > hi {
			t.Errorf("ApproximateCount %s = %d, want in [%d, %d]", when, n, lo, hi)
		}
	}
	assertCount("in the memtable", 1000, 1000)
	if err := b.Flush(); err != nil { // WAL disabled: writes a table file
		t.Fatal(err)
	}
	assertCount("after a flush", 1000, 1000)
	for i := range 500 {
		if err := b.Delete(fmt.Appendf(nil, "%04d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	assertCount("after deleting half", 450, 550)
}

func TestOpenErrorNamesDir(t *testing.T) {
	dir := t.TempDir()
	b, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// Pebble locks its directory: a second open fails.
	_, err = Open(dir, Options{})
	if err == nil || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second Open = %v, want an error naming %s", err, dir)
	}
}

func TestSharedCache(t *testing.T) {
	cache := NewCache(1 << 20)
	root := t.TempDir()
	var stores []state.Backend
	for _, name := range []string{"a", "b"} {
		b, err := Open(filepath.Join(root, name), Options{Cache: cache})
		if err != nil {
			t.Fatal(err)
		}
		stores = append(stores, b)
	}
	if err := cache.Close(); err != nil {
		t.Fatal(err)
	}
	if err := cache.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	if _, err := Open(filepath.Join(root, "c"), Options{Cache: cache}); err == nil {
		t.Error("Open with a closed cache succeeded")
	}
	// The stores keep the cache alive until they close.
	for i, b := range stores {
		if err := b.Put([]byte("k"), []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		if err := b.Flush(); err != nil {
			t.Fatal(err)
		}
		if v, ok, err := b.Get([]byte("k")); err != nil || !ok || v[0] != byte(i) {
			t.Errorf("store %d: Get = %v, %v, %v", i, v, ok, err)
		}
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	}
}
