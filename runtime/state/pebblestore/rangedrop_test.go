package pebblestore

import (
	"path/filepath"
	"testing"

	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/state/statetest"
)

// TestDeleteRangeKeepsPosition checks that dropping every key leaves the
// position, a range key beside the point keys, in place, also across a
// reopen: a store that dropped expired segments is not restored from the
// changelog's start.
func TestDeleteRangeKeepsPosition(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	b, err := Open(dir, Options{CacheSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	statetest.CloseAtEnd(t, b)
	for _, k := range []string{"", "a", "b"} {
		if err := b.Put([]byte(k), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.(state.Positioned).SetPosition(42); err != nil {
		t.Fatal(err)
	}
	if err := b.(state.RangeDeleter).DeleteRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b, err = Open(dir, Options{CacheSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	statetest.CloseAtEnd(t, b)
	if pos, ok, err := b.(state.Positioned).Position(); err != nil || !ok || pos != 42 {
		t.Errorf("Position after dropping every key and a reopen = %d, %v, %v; want 42, true", pos, ok, err)
	}
	if got := statetest.DrainRaw(t, must(b.Range(nil, nil))); len(got) != 0 {
		t.Errorf("keys left after DeleteRange(nil, nil): %v", got)
	}
}

// TestDeleteRangeFromLastKey checks a drop with no upper bound that starts
// at the last key, where the range tombstone before it is empty.
func TestDeleteRangeFromLastKey(t *testing.T) {
	b, err := Open(filepath.Join(t.TempDir(), "store"), Options{CacheSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	statetest.CloseAtEnd(t, b)
	for _, k := range []string{"a", "b"} {
		if err := b.Put([]byte(k), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.(state.RangeDeleter).DeleteRange([]byte("b"), nil); err != nil {
		t.Fatal(err)
	}
	if got := statetest.DrainRaw(t, must(b.Range(nil, nil))); len(got) != 1 || string(got[0].Key) != "a" {
		t.Errorf("keys after DeleteRange(b, nil): %v, want only a", got)
	}
}
