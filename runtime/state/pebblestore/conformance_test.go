package pebblestore

import (
	"path/filepath"
	"testing"

	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/state/statetest"
)

// kind is a Pebble backend kind for the conformance suite, opened with opts.
func kind(name string, opts Options) statetest.Kind {
	open := func(t testing.TB, dir string) state.Backend {
		t.Helper()
		b, err := Open(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		statetest.CloseAtEnd(t, b)
		return b
	}
	return statetest.Kind{
		Name: name,
		Open: func(t testing.TB) state.Backend {
			t.Helper()
			return open(t, filepath.Join(t.TempDir(), "store"))
		},
		Reopen: func(t testing.TB, b state.Backend) state.Backend {
			t.Helper()
			dir := b.(*pebbleStore).dir
			if err := b.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			return open(t, dir)
		},
	}
}

// positioned is k with a position recorded as soon as a store is opened:
// the position must change nothing that the store's users see, nor slow
// them down.
func positioned(k statetest.Kind) statetest.Kind {
	open := k.Open
	k.Name += "+position"
	k.Open = func(t testing.TB) state.Backend {
		t.Helper()
		b := open(t)
		if err := b.(state.Positioned).SetPosition(1); err != nil {
			t.Fatal(err)
		}
		return b
	}
	return k
}

// TestConformance runs the backend conformance suite of runtime/state on
// Pebble, with and without its WAL, and with a position; -state.seed and
// -state.ops tune its model test.
func TestConformance(t *testing.T) {
	statetest.Run(t,
		kind("pebble", Options{CacheSize: 1 << 20}),
		// A small memtable makes Pebble flush table files during the test.
		kind("pebble-nowal", Options{CacheSize: 1 << 20, DisableWAL: true, MemTableSize: 256 << 10}),
		positioned(kind("pebble-nowal", Options{CacheSize: 1 << 20, DisableWAL: true, MemTableSize: 256 << 10})),
	)
}

// benchKinds are Pebble with its defaults, with and without the WAL, and
// with a position.
func benchKinds() []statetest.Kind {
	return []statetest.Kind{
		kind("pebble", Options{}),
		kind("pebble-nowal", Options{DisableWAL: true}),
		positioned(kind("pebble", Options{})),
	}
}

func BenchmarkPut(b *testing.B) { statetest.BenchmarkPut(b, benchKinds()...) }
func BenchmarkGet(b *testing.B) { statetest.BenchmarkGet(b, benchKinds()...) }
func BenchmarkAll(b *testing.B) { statetest.BenchmarkAll(b, benchKinds()...) }

func BenchmarkWindowCount(b *testing.B)      { statetest.BenchmarkWindowCount(b, benchKinds()[0]) }
func BenchmarkWindowFetchRange(b *testing.B) { statetest.BenchmarkWindowFetchRange(b, benchKinds()[0]) }
func BenchmarkWindowFetchAll(b *testing.B)   { statetest.BenchmarkWindowFetchAll(b, benchKinds()[0]) }

// TestOpener checks that a store opened through Opener is a Pebble store in
// the directory given, with the options given.
func TestOpener(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "counts")
	b, err := Opener(Options{DisableWAL: true})(dir)
	if err != nil {
		t.Fatal(err)
	}
	statetest.CloseAtEnd(t, b)
	ps, ok := b.(*pebbleStore)
	if !ok {
		t.Fatalf("Opener opened a %T, want a Pebble store", b)
	}
	if ps.dir != dir || !ps.disableWAL {
		t.Errorf("Opener opened dir %q (disableWAL %v), want %q (true)", ps.dir, ps.disableWAL, dir)
	}
}
