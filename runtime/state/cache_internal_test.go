package state

import (
	"testing"
	"time"
	"unsafe"

	"github.com/kgen-dev/kgen/runtime/serde"
)

// TestJoinStoreCacheHasNoMap checks that a window store retaining
// duplicates (a stream-stream join's) makes its cache OrderedOnly, so its
// entries are indexed by the key tree alone, and that one without
// duplicates keeps the map its lookups by key use.
func TestJoinStoreCacheHasNoMap(t *testing.T) {
	for _, dups := range []bool{true, false} {
		c := NewCache(NewMemory(), 100, nil)
		s := NewWindowStore("w", c, serde.String{}, serde.String{}, WindowStoreOptions{WindowSize: time.Minute, Retention: time.Hour, RetainDuplicates: dups}, nil)
		if err := s.Put("k", "v", 1000); err != nil {
			t.Fatal(err)
		}
		if got := c.entries == nil; got != dups {
			t.Fatalf("RetainDuplicates %v: map gone = %v", dups, got)
		}
		if c.size() == 0 {
			t.Fatalf("RetainDuplicates %v: the put is not cached", dups)
		}
	}
}

// TestCacheEntrySize checks that an entry stays in the 24-byte size class
// (the value as a pointer and a length) and that it still tells an empty
// value from an absent one.
func TestCacheEntrySize(t *testing.T) {
	if n := unsafe.Sizeof(cacheEntry{}); n > 24 {
		t.Fatalf("cacheEntry is %d bytes, want at most 24", n)
	}
	c := NewCache(NewMemory(), 100, nil)
	if err := c.Put([]byte("empty"), []byte{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete([]byte("gone")); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := c.Get([]byte("empty")); err != nil || !ok || v == nil || len(v) != 0 {
		t.Fatalf("Get(empty) = %q (nil %v), %v, %v; want an empty value", v, v == nil, ok, err)
	}
	if v, ok, err := c.Get([]byte("gone")); err != nil || ok || v != nil {
		t.Fatalf("Get(gone) = %q, %v, %v; want absent", v, ok, err)
	}
	for _, ch := range c.Dirty() {
		if (ch.Value == nil) != (string(ch.Key) == "gone") {
			t.Fatalf("change %q: value %q (nil %v)", ch.Key, ch.Value, ch.Value == nil)
		}
	}
}

// TestOrderedOnlyRewriteInPlace checks that an OrderedOnly cache rewrites
// the key it last rewrote (a join store's sequence number, at every put) in
// place: no new entry, no walk down the tree.
func TestOrderedOnlyRewriteInPlace(t *testing.T) {
	c := NewCache(NewMemory(), 100, nil)
	c.OrderedOnly()
	key, v := []byte("seq"), []byte("1")
	for _, k := range []string{"a", "seq", "z"} {
		if err := c.Put([]byte(k), v); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.putOwned(key, v); err != nil { // replaced: now the hot key
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _ = c.putOwned(key, v) }); n != 0 {
		t.Fatalf("a rewrite of the hot key allocates %v times, want 0", n)
	}
	if err := c.DeleteRange(nil, []byte("b")); err != nil { // forgets the hot entry
		t.Fatal(err)
	}
	if err := c.putOwned(key, []byte("2")); err != nil {
		t.Fatal(err)
	}
	if got, ok, _ := c.Get(key); !ok || string(got) != "2" {
		t.Fatalf("Get(seq) = %q, %v; want 2", got, ok)
	}
}
