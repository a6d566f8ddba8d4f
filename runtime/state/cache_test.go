package state_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/state/statetest"
)

func TestCacheHoldsWritesUntilTaken(t *testing.T) {
	mem := state.NewMemory()
	full := 0
	c := state.NewCache(mem, 3, func() { full++ })
	put := func(k, v string) {
		t.Helper()
		if err := c.Put([]byte(k), []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	put("a", "1")
	put("a", "2")
	put("b", "1")
	if err := c.Delete([]byte("b")); err != nil {
		t.Fatal(err)
	}
	if v, ok, _ := c.Get([]byte("a")); !ok || string(v) != "2" {
		t.Fatalf("Get(a) = %q,%v, want the cached 2", v, ok)
	}
	if _, ok, _ := mem.Get([]byte("a")); ok {
		t.Fatal("backend has a: the cache wrote through")
	}
	want := []state.Change{{Key: []byte("a"), Value: []byte("2"), Timestamp: state.NoTimestamp}, {Key: []byte("b"), Timestamp: state.NoTimestamp}}
	if diff := cmp.Diff(want, c.Dirty()); diff != "" {
		t.Fatalf("Dirty (-want +got):\n%s", diff)
	}
	if got := c.Dirty(); got != nil {
		t.Fatalf("second Dirty = %v, want nothing: the first marked the entries clean", got)
	}
	if v, ok, _ := c.Get([]byte("a")); !ok || string(v) != "2" {
		t.Fatalf("Get(a) after Dirty = %q,%v, want 2 still cached", v, ok)
	}
	// a and b are clean now: going over the limit drops them, not the dirty ones.
	put("c", "1")
	put("d", "1")
	put("e", "1")
	if full != 0 {
		t.Fatalf("onFull called %d times while clean entries could go", full)
	}
	put("f", "1")
	if full != 1 {
		t.Fatalf("onFull called %d times with 4 dirty entries over a limit of 3, want 1", full)
	}
	if err := c.Delete([]byte("d")); err != nil {
		t.Fatal(err)
	}
	if err := mem.Put([]byte("b0"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	it, err := c.Range(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var keys []string
	for it.Next() {
		keys = append(keys, string(it.Key()))
	}
	if diff := cmp.Diff([]string{"b0", "c", "e", "f"}, keys); diff != "" {
		t.Fatalf("range (-want +got):\n%s", diff)
	}
	c.Discard()
	if _, ok, _ := c.Get([]byte("c")); ok {
		t.Fatal("c readable after Discard: a discarded write reached the backend")
	}
}

func TestCacheWritesBackWithoutOwner(t *testing.T) {
	mem := state.NewMemory()
	c := state.NewCache(mem, 2, nil)
	for _, k := range []string{"a", "b", "c"} {
		if err := c.Put([]byte(k), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, _ := mem.Get([]byte("a")); !ok {
		t.Fatal("a not written back when the cache overflowed with no owner to ask")
	}
	if err := c.Put([]byte("d"), []byte("w")); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	if v, _, _ := mem.Get([]byte("d")); string(v) != "w" {
		t.Fatalf("backend d = %q after Flush, want w", v)
	}
}

// The caller's buffers are the caller's: a reused buffer must not change
// what the cache holds, returns, or hands on as a change (issue: the cache
// aliased caller bytes where the memory backend copied).
func TestCacheCopiesCallerBytes(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    func() state.Backend
	}{
		{"memory", state.NewMemory},
		{"cache", func() state.Backend { return state.NewCache(state.NewMemory(), 10, func() {}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.b()
			store := state.NewKeyValueStore("s", b, serde.Bytes{}, serde.Bytes{}, nil)
			buf := []byte("first")
			if err := store.Put([]byte("k"), buf); err != nil {
				t.Fatal(err)
			}
			copy(buf, "XXXXX") // the caller reuses its buffer
			got, _, err := store.Get([]byte("k"))
			if err != nil || string(got) != "first" {
				t.Fatalf("Get after the caller reused its buffer = %q, %v; want first", got, err)
			}
			copy(got, "YYYYY") // and modifies what it got
			again, _, _ := store.Get([]byte("k"))
			if string(again) != "first" {
				t.Fatalf("Get after the caller modified a returned value = %q; want first", again)
			}
			if c, ok := b.(*state.Cache); ok {
				if diff := cmp.Diff([]state.Change{{Key: []byte("k"), Value: []byte("first"), Timestamp: state.NoTimestamp}}, c.Dirty()); diff != "" {
					t.Fatalf("change handed on (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// BenchmarkCachedCount is a count's store traffic through the cache: a Get
// and a Put of an int64 per record, over 1,000 hot keys, each write stamped
// by the cache's clock as the runtime's are. Its allocations per op are the
// cache's own cost on a counting hot path.
func BenchmarkCachedCount(b *testing.B) {
	c := state.NewCache(state.NewMemory(), 10_000, func() {})
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
			c.Dirty() // a commit takes the dirty entries now and then
		}
	}
}

// TestCacheDeleteRange checks a range drop held by the cache: the range's
// keys are gone for readers at once, cached or only in the backend; the
// dirty entries in it are forgotten; the backend keeps its keys until the
// owner applies Drops before Dirty, which then leaves exactly what the
// reads showed.
func TestCacheDeleteRange(t *testing.T) {
	mem := state.NewMemory()
	for _, k := range []string{"a", "b", "c", "d"} {
		if err := mem.Put([]byte(k), []byte("old")); err != nil {
			t.Fatal(err)
		}
	}
	c := state.NewCache(mem, 100, func() {})
	must(0, c.Put([]byte("b"), []byte("dirty")))
	if _, ok, _ := c.Get([]byte("c")); !ok {
		t.Fatal("Get(c) before the drop: missing")
	}
	must(0, c.Put([]byte("e"), []byte("new")))
	must(0, c.DeleteRange([]byte("b"), []byte("d")))
	must(0, c.DeleteRange([]byte("x"), []byte("a"))) // reversed: nothing
	for _, k := range []string{"b", "c"} {
		if v, ok, err := c.Get([]byte(k)); ok || err != nil {
			t.Errorf("Get(%s) after the drop = %q, %v, %v; want missing", k, v, ok, err)
		}
	}
	keys := func() []string {
		var out []string
		for _, ch := range statetest.DrainRaw(t, must(c.Range(nil, nil))) {
			out = append(out, string(ch.Key)+"="+string(ch.Value))
		}
		return out
	}
	if diff := cmp.Diff([]string{"a=old", "d=old", "e=new"}, keys()); diff != "" {
		t.Errorf("Range after the drop (-want +got):\n%s", diff)
	}
	must(0, c.Put([]byte("c"), []byte("again"))) // a write after the drop stays
	if diff := cmp.Diff([]string{"a=old", "c=again", "d=old", "e=new"}, keys()); diff != "" {
		t.Errorf("Range after a write in the dropped range (-want +got):\n%s", diff)
	}
	if v, _, _ := mem.Get([]byte("b")); string(v) != "old" {
		t.Errorf("the backend lost b before the owner applied the drop: %q", v)
	}
	drops := c.Drops()
	if diff := cmp.Diff([]state.KeyRange{{From: []byte("b"), To: []byte("d")}}, drops); diff != "" {
		t.Errorf("Drops (-want +got):\n%s", diff)
	}
	dirty := c.Dirty()
	var dirtyKeys []string
	for _, ch := range dirty {
		dirtyKeys = append(dirtyKeys, string(ch.Key))
	}
	if diff := cmp.Diff([]string{"e", "c"}, dirtyKeys); diff != "" {
		t.Errorf("Dirty keys (-want +got):\n%s", diff)
	}
	must(0, state.DeleteRanges(mem, drops))
	must(0, state.ApplyChanges(mem, dirty))
	var got []string
	for _, ch := range statetest.DrainRaw(t, must(mem.Range(nil, nil))) {
		got = append(got, string(ch.Key)+"="+string(ch.Value))
	}
	if diff := cmp.Diff([]string{"a=old", "c=again", "d=old", "e=new"}, got); diff != "" {
		t.Errorf("backend after the owner applied drops and writes (-want +got):\n%s", diff)
	}
	if c.Drops() != nil {
		t.Error("Drops returned the drops twice")
	}
}

// TestCacheDropWrittenBack checks that a cache with no owner, when it
// flushes or overflows, applies its drops to the backend before its
// writes, and that Discard forgets a drop as it forgets writes.
func TestCacheDropWrittenBack(t *testing.T) {
	for _, how := range []string{"flush", "overflow", "discard"} {
		t.Run(how, func(t *testing.T) {
			mem := state.NewMemory()
			must(0, mem.Put([]byte("a"), []byte("old")))
			must(0, mem.Put([]byte("b"), []byte("old")))
			c := state.NewCache(mem, 2, nil)
			must(0, c.DeleteRange(nil, []byte("b")))
			must(0, c.Put([]byte("c"), []byte("new")))
			want := []string{"b=old", "c=new"}
			switch how {
			case "flush":
				must(0, c.Flush())
			case "overflow":
				must(0, c.Put([]byte("x"), []byte("1")))
				must(0, c.Put([]byte("y"), []byte("1"))) // three dirty entries: written back
				want = []string{"b=old", "c=new", "x=1", "y=1"}
			case "discard":
				c.Discard()
				want = []string{"a=old", "b=old"}
			}
			var got []string
			for _, ch := range statetest.DrainRaw(t, must(mem.Range(nil, nil))) {
				got = append(got, string(ch.Key)+"="+string(ch.Value))
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("backend (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCacheRangeKeepsCachedValues checks that walking a cache whose range
// returns a cached value and then one from the backend leaves the cached
// value intact: the iterator once copied the backend's value into the
// buffer of the cached one it had returned, so the cache, and the
// changelog record it logged at the commit, held the wrong bytes.
func TestCacheRangeKeepsCachedValues(t *testing.T) {
	mem := state.NewMemory()
	must(0, mem.Put([]byte("b"), []byte("old")))
	c := state.NewCache(mem, 100, func() {})
	must(0, c.Put([]byte("a"), []byte("again")))
	statetest.DrainRaw(t, must(c.Range(nil, nil)))
	if v, _, _ := c.Get([]byte("a")); string(v) != "again" {
		t.Errorf("Get(a) after a Range = %q, want again", v)
	}
	if diff := cmp.Diff([]state.Change{{Key: []byte("a"), Value: []byte("again"), Timestamp: state.NoTimestamp}}, c.Dirty()); diff != "" {
		t.Errorf("Dirty after a Range (-want +got):\n%s", diff)
	}
}

// TestDeleteRangesWithoutRangeDeleter checks DeleteRanges over a backend
// that cannot drop a range at once: it deletes the range's keys one by one.
func TestDeleteRangesWithoutRangeDeleter(t *testing.T) {
	mem := state.NewMemory()
	for _, k := range []string{"a", "b", "c", "d"} {
		must(0, mem.Put([]byte(k), []byte("v")))
	}
	plain := struct{ state.Backend }{mem} // only the Backend methods
	if _, ok := state.Backend(plain).(state.RangeDeleter); ok {
		t.Fatal("the wrapper still drops ranges")
	}
	must(0, state.DeleteRanges(plain, []state.KeyRange{{From: []byte("b"), To: []byte("d")}, {From: []byte("d")}}))
	if got := statetest.DrainRaw(t, must(mem.Range(nil, nil))); len(got) != 1 || string(got[0].Key) != "a" {
		t.Errorf("keys left: %v, want only a", got)
	}
}

// TestCacheModel runs random writes, deletions, range drops, reads,
// commits (the owner applying Drops then Dirty to the backend) and aborts
// (Discard) against a cache over a memory backend, and compares every read,
// and the backend after each commit, with a map. With no owner the cache
// writes back by itself when full, and nothing is aborted. An OrderedOnly
// cache (no map) must behave the same.
func TestCacheModel(t *testing.T) {
	for _, ordered := range []bool{false, true} {
		for _, owned := range []bool{true, false} {
			for seed := uint64(1); seed <= 20; seed++ {
				t.Run(fmt.Sprintf("ordered=%v/owned=%v/%d", ordered, owned, seed), func(t *testing.T) { cacheModel(t, ordered, owned, seed) })
			}
		}
	}
}

func cacheModel(t *testing.T, ordered, owned bool, seed uint64) {
	r := rand.New(rand.NewPCG(seed, seed))
	keys := []string{"", "a", "a\x00", "ab", "b", "ba", "c", "\xff"}
	key := func() string { return keys[r.IntN(len(keys))] }
	bound := func() []byte {
		if r.IntN(4) == 0 {
			return nil
		}
		return []byte(key())
	}
	mem := state.NewMemory()
	var onFull func()
	if owned {
		onFull = func() {}
	}
	c := state.NewCache(mem, 4, onFull)
	if ordered {
		c.OrderedOnly()
	}
	clock := &fakeClock{}
	c.SetClock(clock)
	current, committed := map[string]string{}, map[string]string{}
	written := map[string]int64{} // the time of each key's last write
	contents := func(it state.Iterator) map[string]string {
		got := map[string]string{}
		for _, ch := range statetest.DrainRaw(t, it) {
			got[string(ch.Key)] = string(ch.Value)
		}
		return got
	}
	in := func(k string, from, to []byte) bool { return state.KeyRange{From: from, To: to}.Contains([]byte(k)) }
	for op := range 300 {
		clock.now = int64(op)
		switch n := r.IntN(100); {
		case n < 30:
			k, v := key(), fmt.Sprintf("v%d", op)
			must(0, c.Put([]byte(k), []byte(v)))
			current[k], written[k] = v, clock.now
		case n < 40:
			k := key()
			must(0, c.Delete([]byte(k)))
			delete(current, k)
			written[k] = clock.now
		case n < 55:
			k := key()
			v, ok := must2(c.Get([]byte(k)))
			if want, wantOK := current[k]; ok != wantOK || string(v) != want {
				t.Fatalf("op %d: Get(%q) = %q, %v; want %q, %v", op, k, v, ok, want, wantOK)
			}
		case n < 65:
			from, to := bound(), bound()
			want := map[string]string{}
			for k, v := range current {
				if in(k, from, to) {
					want[k] = v
				}
			}
			if diff := cmp.Diff(want, contents(must(c.Range(from, to)))); diff != "" {
				t.Fatalf("op %d: Range(%q, %q) (-want +got):\n%s", op, from, to, diff)
			}
		case n < 75:
			from, to := bound(), bound()
			must(0, c.DeleteRange(from, to))
			for k := range current {
				if in(k, from, to) {
					delete(current, k)
				}
			}
		case n < 90:
			must(0, state.DeleteRanges(mem, c.Drops()))
			dirty := c.Dirty()
			for _, ch := range dirty {
				if ch.Timestamp != written[string(ch.Key)] {
					t.Fatalf("op %d: %q is held with time %d, its last write was at %d", op, ch.Key, ch.Timestamp, written[string(ch.Key)])
				}
			}
			must(0, state.ApplyChanges(mem, dirty))
			committed = maps.Clone(current)
			if diff := cmp.Diff(committed, contents(must(mem.Range(nil, nil)))); diff != "" {
				t.Fatalf("op %d: backend after a commit (-want +got):\n%s", op, diff)
			}
		default:
			if owned {
				c.Discard()
				current = maps.Clone(committed)
			}
		}
	}
}

func must2[A, B any](a A, b B, err error) (A, B) {
	if err != nil {
		panic(err)
	}
	return a, b
}

// TestCachePeek: a query's read sees the cached writes, the drops and the
// backend, and caches nothing, so queries cannot push the processing
// path's entries out.
func TestCachePeek(t *testing.T) {
	mem := state.NewMemory()
	for _, k := range []string{"a", "b", "c"} {
		if err := mem.Put([]byte(k), []byte("back-"+k)); err != nil {
			t.Fatal(err)
		}
	}
	c := state.NewCache(mem, 2, func() { t.Fatal("the cache filled") })
	if err := c.Put([]byte("a"), []byte("cached")); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete([]byte("b")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		key, want string
		ok        bool
	}{{"a", "cached", true}, {"b", "", false}, {"c", "back-c", true}, {"d", "", false}} {
		for range 2 {
			v, ok, err := c.Peek([]byte(tc.key))
			if err != nil || ok != tc.ok || string(v) != tc.want {
				t.Fatalf("Peek(%s) = %q, %v, %v; want %q, %v", tc.key, v, ok, err, tc.want, tc.ok)
			}
		}
	}
	// Had Peek cached c, the cache would still hold its old value.
	if err := mem.Put([]byte("c"), []byte("new-c")); err != nil {
		t.Fatal(err)
	}
	if v, _, _ := c.Get([]byte("c")); string(v) != "new-c" {
		t.Fatalf("Get(c) = %q: Peek cached what it read", v)
	}
	v, _, _ := c.Peek([]byte("a"))
	v[0] = 'X' // the caller's copy
	if v, _, _ := c.Get([]byte("a")); string(v) != "cached" {
		t.Fatalf("Get(a) = %q after modifying a peeked value", v)
	}
	if err := c.DeleteRange([]byte("c"), []byte("d")); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := c.Peek([]byte("c")); ok {
		t.Fatal("Peek(c) found a key of a dropped range")
	}
}

// TestCacheOrderedOnlyDirtyOrder checks that an OrderedOnly cache, whose
// rewrite of a key replaces its entry, hands out each dirty key once, in
// the order it became dirty, with its last value.
func TestCacheOrderedOnlyDirtyOrder(t *testing.T) {
	c := state.NewCache(state.NewMemory(), 100, func() {})
	c.OrderedOnly()
	for _, kv := range [][2]string{{"b", "1"}, {"a", "2"}, {"b", "3"}, {"c", "4"}} {
		must(0, c.Put([]byte(kv[0]), []byte(kv[1])))
	}
	want := []state.Change{
		{Key: []byte("b"), Value: []byte("3"), Timestamp: state.NoTimestamp},
		{Key: []byte("a"), Value: []byte("2"), Timestamp: state.NoTimestamp},
		{Key: []byte("c"), Value: []byte("4"), Timestamp: state.NoTimestamp},
	}
	if diff := cmp.Diff(want, c.Dirty()); diff != "" {
		t.Fatalf("Dirty (-want +got):\n%s", diff)
	}
	must(0, c.Put([]byte("a"), []byte("5"))) // clean, rewritten: dirty again
	want = []state.Change{{Key: []byte("a"), Value: []byte("5"), Timestamp: state.NoTimestamp}}
	if diff := cmp.Diff(want, c.Dirty()); diff != "" {
		t.Fatalf("Dirty after a clean key's rewrite (-want +got):\n%s", diff)
	}
	if v, ok := must2(c.Get([]byte("b"))); !ok || string(v) != "3" {
		t.Fatalf("Get(b) = %q, %v; want 3, true", v, ok)
	}
}
