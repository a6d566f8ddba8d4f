package state

import (
	"testing"
	"time"

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
