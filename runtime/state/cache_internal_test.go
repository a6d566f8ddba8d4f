package state

import (
	"fmt"
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
// the two keys it last rewrote (a join store's sequence number and observed
// time, at nearly every put, in turn) in place: no new entry, no walk down
// the tree; and that reads of them and writes after an entry left the tree
// see the latest value.
func TestOrderedOnlyRewriteInPlace(t *testing.T) {
	c := NewCache(NewMemory(), 100, nil)
	c.OrderedOnly()
	seq, obs, v := []byte("seq"), []byte("obs"), []byte("1")
	for _, k := range []string{"a", "obs", "seq", "z"} {
		if err := c.Put([]byte(k), v); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range [][]byte{seq, obs} { // replaced: now the hot keys
		if err := c.putOwned(k, v); err != nil {
			t.Fatal(err)
		}
	}
	i := 0
	if n := testing.AllocsPerRun(100, func() {
		i++
		_ = c.putOwned(seq, []byte(fmt.Sprint(i%10)))
		_ = c.putOwned(obs, v)
	}); n > 1 { // the value's string, not the cache's
		t.Fatalf("rewrites of the two hot keys in turn allocate %v times, want at most the value's 1", n)
	}
	if got, ok, _ := c.Get(seq); !ok || string(got) != fmt.Sprint(i%10) {
		t.Fatalf("Get(seq) = %q, %v; want %d", got, ok, i%10)
	}
	// A third key pushes the oldest out of the slots; each still reads
	// and rewrites right.
	third := []byte("a")
	for round := range 3 {
		for j, k := range [][]byte{seq, obs, third} {
			if err := c.putOwned(k, []byte(fmt.Sprint(round*10+j))); err != nil {
				t.Fatal(err)
			}
		}
		for j, k := range [][]byte{seq, obs, third} {
			if got, ok, _ := c.Get(k); !ok || string(got) != fmt.Sprint(round*10+j) {
				t.Fatalf("round %d: Get(%s) = %q, %v; want %d", round, k, got, ok, round*10+j)
			}
		}
	}
	if err := c.DeleteRange(nil, []byte("b")); err != nil { // forgets the hot entries
		t.Fatal(err)
	}
	if _, ok, _ := c.Get(third); ok {
		t.Fatal("a dropped hot key is still read")
	}
	if err := c.putOwned(seq, []byte("2")); err != nil {
		t.Fatal(err)
	}
	if got, ok, _ := c.Get(seq); !ok || string(got) != "2" {
		t.Fatalf("Get(seq) = %q, %v; want 2", got, ok)
	}
	// The dirty entries Dirty hands out are the latest values, once each.
	changes := c.Dirty()
	seen := map[string]string{}
	for _, ch := range changes {
		if _, dup := seen[string(ch.Key)]; dup {
			t.Fatalf("Dirty returned %s twice", ch.Key)
		}
		seen[string(ch.Key)] = string(ch.Value)
	}
	if seen["seq"] != "2" || seen["obs"] != "21" || seen["z"] != "1" {
		t.Fatalf("dirty values %v; want seq 2, obs 21, z 1", seen)
	}
}
