package pebblestore

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/state/statetest"
)

// TestRangeReusesIteratorOnlyWhileUnchanged: a Range after a closed one
// reuses its Pebble iterator while nothing was written, with the new
// bounds; after any kind of write it sees the write.
func TestRangeReusesIteratorOnlyWhileUnchanged(t *testing.T) {
	b, err := Open(t.TempDir(), Options{CacheSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s := b.(*pebbleStore)
	keys := func(from, to string) []string {
		t.Helper()
		var f, u []byte
		if from != "" {
			f = []byte(from)
		}
		if to != "" {
			u = []byte(to)
		}
		it, err := b.Range(f, u)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, ch := range statetest.DrainRaw(t, it) {
			got = append(got, string(ch.Key))
		}
		return got
	}
	check := func(step string, got []string, want ...string) {
		t.Helper()
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("%s (-want +got):\n%s", step, diff)
		}
	}
	for _, k := range []string{"a", "b", "c", "d"} {
		if err := b.Put([]byte(k), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	check("first range", keys("b", "d"), "b", "c")
	if s.spare == nil {
		t.Fatal("no spare iterator kept after a range closed with no write since")
	}
	spare := s.spare
	check("reused, other bounds", keys("c", ""), "c", "d")
	if s.spare != spare {
		t.Fatal("the second range did not reuse the spare iterator")
	}
	check("reused, no bounds", keys("", ""), "a", "b", "c", "d")
	if err := b.Put([]byte("bb"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	check("after a put", keys("b", "c"), "b", "bb")
	if err := b.Delete([]byte("b")); err != nil {
		t.Fatal(err)
	}
	check("after a delete", keys("b", "c"), "bb")
	if err := b.(state.Restorer).ApplyBatch([]state.Change{{Key: []byte("ab"), Value: []byte("v")}, {Key: []byte("a")}}); err != nil {
		t.Fatal(err)
	}
	check("after a batch", keys("", "b"), "ab")
	if err := b.(state.RangeDeleter).DeleteRange([]byte("a"), []byte("c")); err != nil {
		t.Fatal(err)
	}
	check("after a range delete", keys("", ""), "c", "d")
}
