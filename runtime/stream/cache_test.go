package stream

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kgen-dev/kgen/runtime/state"
)

type logRecorder struct{ changes []state.Change }

func (l *logRecorder) LogChange(key, value []byte) {
	l.changes = append(l.changes, state.Change{Key: key, Value: value})
}

func TestCachedBackend(t *testing.T) {
	mem := state.NewMemory()
	log := &logRecorder{}
	c := newCachedBackend(mem, log, 3)
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
		t.Fatalf("Get(a) = %q,%v before flush, want the cached 2", v, ok)
	}
	if _, ok, _ := mem.Get([]byte("a")); ok {
		t.Fatal("backend has a before flush: the cache wrote through")
	}
	if len(log.changes) != 0 {
		t.Fatalf("changelog got %d records before flush, want 0", len(log.changes))
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	want := []state.Change{{Key: []byte("a"), Value: []byte("2")}, {Key: []byte("b")}}
	if diff := cmp.Diff(want, log.changes); diff != "" {
		t.Fatalf("changelog after flush (-want +got):\n%s", diff)
	}
	if v, ok, _ := mem.Get([]byte("a")); !ok || string(v) != "2" {
		t.Fatalf("backend a = %q,%v after flush, want 2", v, ok)
	}
	// A flush with nothing dirty logs nothing.
	log.changes = nil
	if err := c.Flush(); err != nil || len(log.changes) != 0 {
		t.Fatalf("second flush: err %v, %d records; want none", err, len(log.changes))
	}
	// a and b stay cached, clean. Going past the limit flushes and forgets.
	put("c", "1")
	put("d", "1")
	if len(c.entries) != 0 || len(log.changes) != 2 {
		t.Fatalf("after overflow: %d cached, %d logged; want 0 cached and c,d logged", len(c.entries), len(log.changes))
	}
	put("e", "1")
	// Range sees unflushed writes and deletions over the backend.
	put("f", "1")
	if err := c.Delete([]byte("d")); err != nil {
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
	if diff := cmp.Diff([]string{"a", "c", "e", "f"}, keys); diff != "" {
		t.Fatalf("range (-want +got):\n%s", diff)
	}
}

func TestCachedBackendExactlyOnceHoldsWritesUntilCommit(t *testing.T) {
	mem := state.NewMemory()
	log := &logRecorder{}
	full := 0
	c := newCachedBackend(mem, log, 2)
	c.eos, c.onFull = true, func() { full++ }
	for _, k := range []string{"a", "b", "c"} {
		if err := c.Put([]byte(k), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if full != 1 || len(c.entries) != 3 {
		t.Fatalf("over the limit: onFull called %d times, %d cached; want 1 and no eviction", full, len(c.entries))
	}
	if err := c.flushDirty(); err != nil {
		t.Fatal(err)
	}
	if len(log.changes) != 3 || len(c.pending) != 3 {
		t.Fatalf("after flushDirty: %d logged, %d pending; want 3 and 3", len(log.changes), len(c.pending))
	}
	if _, ok, _ := mem.Get([]byte("a")); ok {
		t.Fatal("backend got a write before the transaction committed")
	}
	if v, ok, _ := c.Get([]byte("a")); !ok || string(v) != "v" {
		t.Fatalf("Get(a) = %q,%v while pending, want v", v, ok)
	}
	if err := c.applyPending(); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := mem.Get([]byte("c")); !ok {
		t.Fatal("backend lacks c after applyPending")
	}
}
