package dsl

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// storeGetter hands a grace buffer its store, as a processor's context.
type storeGetter struct{ store any }

func (g storeGetter) Store(string) any { return g.store }
func (g storeGetter) NodeName() string { return "join" }

// A grace buffer reopened over its store (as after a restore) goes on as
// the one before: the stream time is the restored entries' latest, so a
// record older than it minus grace is not buffered; a record of a time and
// key already waiting goes after the restored ones (the seq goes on); all
// leave in the buffer's order.
func TestGraceBufferReopens(t *testing.T) {
	backend := state.NewMemory()
	open := func() *graceBuffer[string, string] {
		t.Helper()
		b := &graceBuffer[string, string]{storeName: "join-Buffer", ks: serde.String{}, vs: serde.String{}, grace: 1000}
		if err := b.init(storeGetter{state.NewKeyValueStore("join-Buffer", backend, serde.Bytes{}, serde.Bytes{}, nil)}); err != nil {
			t.Fatal(err)
		}
		return b
	}
	var left []string
	leave := func(r stream.Record[string, string]) error {
		left = append(left, fmt.Sprintf("%s=%s@%d", r.Key, r.Value, r.Timestamp.UnixMilli()))
		return nil
	}
	put := func(b *graceBuffer[string, string], k, v string, ms int64) bool {
		t.Helper()
		ok, err := b.put(stream.Record[string, string]{Key: k, Value: v, Timestamp: time.UnixMilli(ms)})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.evict(leave); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	b := open()
	for _, r := range []struct {
		k, v string
		ms   int64
	}{{"b", "1", 1000}, {"a", "2", 1000}, {"a", "3", 1000}, {"c", "4", 1500}, {"a", "5", 1900}} {
		if !put(b, r.k, r.v, r.ms) {
			t.Fatalf("record %s=%s@%d not buffered", r.k, r.v, r.ms)
		}
	}
	same := func(what string, want ...string) {
		t.Helper()
		if !slices.Equal(left, want) {
			t.Fatalf("%s: left %q, want %q", what, left, want)
		}
	}
	same("before the reopening")
	b = open()
	if b.observed != 1900 || b.seq != 5 || len(b.waiting) != 5 {
		t.Fatalf("reopened: stream time %d, seq %d, %d waiting; want 1900, 5, 5", b.observed, b.seq, len(b.waiting))
	}
	if put(b, "z", "late", 899) {
		t.Fatal("a record older than stream time - grace was buffered after the reopening")
	}
	if !put(b, "a", "6", 1000) {
		t.Fatal("a record within the grace period was not buffered")
	}
	put(b, "d", "7", 3000)
	same("after stream time 3000", "a=2@1000", "a=3@1000", "a=6@1000", "b=1@1000", "c=4@1500", "a=5@1900")
}
