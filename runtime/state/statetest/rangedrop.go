package statetest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
)

// rangeDropKeys are the keys the range drop checks start from, in order.
var rangeDropKeys = []string{"", "a", "a\x00", "b", "b1", "b2", "c", "\xff", "\xff\xff"}

// fill puts every key of rangeDropKeys, with itself as value, through a
// logged typed store, and returns the store and its logger.
func fill(t *testing.T, b state.Backend) (state.KeyValueStore[string, string], *Recorder) {
	t.Helper()
	log := &Recorder{}
	s := state.NewKeyValueStore("drops", b, serde.String{}, serde.String{}, log)
	for _, k := range rangeDropKeys {
		if err := s.Put(k, k); err != nil {
			t.Fatal(err)
		}
	}
	return s, log
}

// keysOf lists the keys left in b.
func keysOf(t *testing.T, b state.Backend) []string {
	t.Helper()
	var keys []string
	for _, c := range DrainRaw(t, must(b.Range(nil, nil))) {
		keys = append(keys, string(c.Key))
	}
	return keys
}

// without is rangeDropKeys less those in [from, to) (nil: unbounded).
func without(from, to []byte) []string {
	var keys []string
	for _, k := range rangeDropKeys {
		in := (from == nil || k >= string(from)) && (to == nil || k < string(to))
		if !in {
			keys = append(keys, k)
		}
	}
	return keys
}

// DeleteRangeDrops checks state.RangeDeleter: every key of [from, to) goes
// at once (bounds included as Range has them: nil unbounded, an empty
// lower bound the smallest key, an empty or reversed range nothing), nothing
// of it reaches the changelog, an iterator opened before keeps seeing the
// keys, and the store takes writes in the dropped range afterwards.
func DeleteRangeDrops(t *testing.T, kind Kind) {
	for _, r := range []struct {
		name     string
		from, to []byte
	}{
		{"middle", []byte("a\x00"), []byte("b2")},
		{"from start", nil, []byte("b")},
		{"from empty key", []byte{}, []byte("b")},
		{"to end", []byte("b1"), nil},
		{"everything", nil, nil},
		{"empty", []byte("b"), []byte("b")},
		{"reversed", []byte("c"), []byte("a")},
		{"past the keys", []byte("\xff\xff\x00"), nil},
	} {
		t.Run(r.name, func(t *testing.T) {
			b := kind.Open(t)
			s, log := fill(t, b)
			logged := len(log.Changes)
			before := must(b.Range(nil, nil))
			if err := b.(state.RangeDeleter).DeleteRange(r.from, r.to); err != nil {
				t.Fatalf("DeleteRange(%q, %q): %v", r.from, r.to, err)
			}
			if diff := cmp.Diff(without(r.from, r.to), keysOf(t, b)); diff != "" {
				t.Errorf("keys after DeleteRange(%q, %q) (-want +got):\n%s", r.from, r.to, diff)
			}
			if n := len(DrainRaw(t, before)); n != len(rangeDropKeys) {
				t.Errorf("an iterator opened before the drop saw %d keys, want all %d", n, len(rangeDropKeys))
			}
			if len(log.Changes) != logged {
				t.Errorf("the drop was logged: %v", log.Changes[logged:])
			}
			if err := s.Put("b1", "again"); err != nil {
				t.Fatal(err)
			}
			if v, ok, err := s.Get("b1"); err != nil || !ok || v != "again" {
				t.Errorf("Get(b1) after a write in the dropped range = %q, %v, %v; want again", v, ok, err)
			}
		})
	}
}

// DeleteRangeAfterRestoreAndReopen checks that a range drop holds over
// restored data and, for a persistent kind, across a reopen, together with
// the writes around it: a restored batch, the drop, a write into the dropped
// range, a reopen, and a second drop after the reopen.
func DeleteRangeAfterRestoreAndReopen(t *testing.T, kind Kind) {
	b := kind.Open(t)
	var restored []state.Change
	for _, k := range rangeDropKeys {
		restored = append(restored, state.Change{Key: []byte(k), Value: []byte(k), Timestamp: 1})
	}
	if err := b.(state.Restorer).ApplyBatch(restored); err != nil {
		t.Fatal(err)
	}
	if err := b.(state.RangeDeleter).DeleteRange([]byte("a"), []byte("c")); err != nil {
		t.Fatal(err)
	}
	if err := b.Put([]byte("b"), []byte("after")); err != nil {
		t.Fatal(err)
	}
	want := []state.Change{
		{Key: []byte(""), Value: []byte("")},
		{Key: []byte("b"), Value: []byte("after")},
		{Key: []byte("c"), Value: []byte("c")},
		{Key: []byte("\xff"), Value: []byte("\xff")},
		{Key: []byte("\xff\xff"), Value: []byte("\xff\xff")},
	}
	if diff := cmp.Diff(want, DrainRaw(t, must(b.Range(nil, nil)))); diff != "" {
		t.Errorf("after restore and drop (-want +got):\n%s", diff)
	}
	if kind.Reopen == nil {
		return
	}
	b = kind.Reopen(t, b)
	if diff := cmp.Diff(want, DrainRaw(t, must(b.Range(nil, nil)))); diff != "" {
		t.Errorf("after reopen (-want +got):\n%s", diff)
	}
	if err := b.(state.RangeDeleter).DeleteRange([]byte("c"), nil); err != nil {
		t.Fatal(err)
	}
	b = kind.Reopen(t, b)
	if diff := cmp.Diff(want[:2], DrainRaw(t, must(b.Range(nil, nil)))); diff != "" {
		t.Errorf("after a drop to the end and a reopen (-want +got):\n%s", diff)
	}
}
