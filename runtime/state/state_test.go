package state

import (
	"path/filepath"
	"testing"
)

// backendKind opens one kind of backend for a test.
type backendKind struct {
	name string
	open func(t *testing.T) Backend
	// exactCount tells whether ApproximateCount is exact.
	exactCount bool
	// reopen flushes, closes and reopens b with its contents, or returns
	// nil when the kind does not persist.
	reopen func(t *testing.T, b Backend) Backend
}

func backendKinds() []backendKind {
	pebbleKind := func(name string, opts PebbleOptions) backendKind {
		return backendKind{
			name: name,
			open: func(t *testing.T) Backend {
				t.Helper()
				b, err := OpenPebble(filepath.Join(t.TempDir(), "store"), opts)
				if err != nil {
					t.Fatal(err)
				}
				closeAtEnd(t, b)
				return b
			},
			reopen: func(t *testing.T, b Backend) Backend {
				t.Helper()
				dir := b.(*pebbleStore).dir
				if err := b.Flush(); err != nil {
					t.Fatal(err)
				}
				if err := b.Close(); err != nil {
					t.Fatal(err)
				}
				nb, err := OpenPebble(dir, opts)
				if err != nil {
					t.Fatal(err)
				}
				closeAtEnd(t, nb)
				return nb
			},
		}
	}
	return []backendKind{
		{
			name: "memory",
			open: func(t *testing.T) Backend {
				b := NewMemory()
				closeAtEnd(t, b)
				return b
			},
			exactCount: true,
			reopen:     func(*testing.T, Backend) Backend { return nil },
		},
		pebbleKind("pebble", PebbleOptions{CacheSize: 1 << 20}),
		// A small memtable makes Pebble flush table files during the test.
		pebbleKind("pebble-nowal", PebbleOptions{CacheSize: 1 << 20, DisableWAL: true, MemTableSize: 256 << 10}),
	}
}

// closeAtEnd closes b when the test ends unless the test closed it already;
// a failing Close (such as a leaked iterator) fails the test.
func closeAtEnd(t *testing.T, b Backend) {
	t.Helper()
	t.Cleanup(func() {
		if closed(b) {
			return
		}
		if err := b.Close(); err != nil {
			t.Errorf("close backend: %v", err)
		}
	})
}

func closed(b Backend) bool {
	switch b := b.(type) {
	case *memory:
		return b.tree == nil
	case *pebbleStore:
		return b.db == nil
	}
	return false
}

// recorder is a ChangeLogger that keeps every change.
type recorder struct{ changes []Change }

func (r *recorder) LogChange(key, value []byte) {
	r.changes = append(r.changes, Change{Key: key, Value: value})
}

// drain reads an iterator to its end and closes it.
func drain[K, V any](t *testing.T, it KeyValueIterator[K, V]) []kv[K, V] {
	t.Helper()
	var out []kv[K, V]
	for it.Next() {
		out = append(out, kv[K, V]{it.Key(), it.Value()})
	}
	if err := it.Err(); err != nil {
		t.Fatalf("iterate: %v", err)
	}
	if err := it.Close(); err != nil {
		t.Fatalf("close iterator: %v", err)
	}
	return out
}

type kv[K, V any] struct {
	K K
	V V
}

// drainRaw reads a backend iterator to its end, copying, and closes it.
func drainRaw(t *testing.T, it Iterator) []Change {
	t.Helper()
	var out []Change
	for it.Next() {
		out = append(out, Change{Key: append([]byte{}, it.Key()...), Value: append([]byte{}, it.Value()...)})
	}
	if err := it.Err(); err != nil {
		t.Fatalf("iterate: %v", err)
	}
	if err := it.Close(); err != nil {
		t.Fatalf("close iterator: %v", err)
	}
	return out
}
