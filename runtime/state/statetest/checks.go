package statetest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
)

// ChangelogSeesExactlyTheWrites checks that a logged typed store logs every
// write, a delete of a missing key included, and nothing else.
func ChangelogSeesExactlyTheWrites(t *testing.T, kind Kind) {
	log := &Recorder{}
	s := state.NewKeyValueStore("counts", kind.Open(t), serde.String{}, serde.Int64{}, log)
	steps := []func() error{
		func() error { return s.Put("a", 1) },
		func() error { return s.Put("a", 2) },
		func() error { _, _, err := s.Get("a"); return err },
		func() error { _, _, err := s.PutIfAbsent("a", 3); return err }, // exists: not logged
		func() error { _, _, err := s.PutIfAbsent("b", 4); return err },
		func() error { return s.Delete("a") },
		func() error { return s.Delete("missing") }, // a tombstone all the same
		func() error { it, err := s.All(); Drain(t, it); return err },
		func() error { _, err := s.ApproximateCount(); return err },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	i64 := func(v int64) []byte { return must(serde.Int64{}.Serialize(v)) }
	want := []state.Change{
		{Key: []byte("a"), Value: i64(1)},
		{Key: []byte("a"), Value: i64(2)},
		{Key: []byte("b"), Value: i64(4)},
		{Key: []byte("a"), Value: nil},
		{Key: []byte("missing"), Value: nil},
	}
	if diff := cmp.Diff(want, log.Changes); diff != "" {
		t.Errorf("changelog (-want +got):\n%s", diff)
	}
}

// NilSerializedValueDeletes checks that a value serialized to nil deletes its
// key, while an empty value is stored.
func NilSerializedValueDeletes(t *testing.T, kind Kind) {
	log := &Recorder{}
	s := state.NewKeyValueStore("blobs", kind.Open(t), serde.String{}, serde.Bytes{}, log)
	if err := s.Put("k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := s.Put("empty", []byte{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Put("k", nil); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.Get("k"); ok || err != nil {
		t.Errorf("Get after Put(nil) = %v, %v; want deleted", ok, err)
	}
	v, ok, err := s.Get("empty")
	if !ok || err != nil || v == nil || len(v) != 0 {
		t.Errorf("Get of an empty value = %#v, %v, %v; want []byte{}, true", v, ok, err)
	}
	want := []state.Change{{Key: []byte("k"), Value: []byte("v")}, {Key: []byte("empty"), Value: []byte{}}, {Key: []byte("k"), Value: nil}}
	if diff := cmp.Diff(want, log.Changes); diff != "" {
		t.Errorf("changelog (-want +got):\n%s", diff)
	}
}

// ApplyBatchRestores checks state.Restorer: changes applied in order, over
// what the backend held, without keeping the caller's buffers.
func ApplyBatchRestores(t *testing.T, kind Kind) {
	b := kind.Open(t)
	if err := b.Put([]byte("stale"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	changes := []state.Change{
		{Key: []byte("a"), Value: []byte("1")},
		{Key: []byte("b"), Value: []byte("1")},
		{Key: []byte("a"), Value: []byte("2")}, // later records win
		{Key: []byte("b"), Value: nil},         // a tombstone after a value
		{Key: []byte("stale"), Value: nil},
		{Key: []byte("c"), Value: []byte{}},
	}
	r, ok := b.(state.Restorer)
	if !ok {
		t.Fatalf("%T does not implement state.Restorer", b)
	}
	if err := r.ApplyBatch(changes); err != nil {
		t.Fatal(err)
	}
	// The caller may reuse its buffers once ApplyBatch returns.
	for _, c := range changes {
		clear(c.Key)
		clear(c.Value)
	}
	want := []state.Change{{Key: []byte("a"), Value: []byte("2")}, {Key: []byte("c"), Value: []byte{}}}
	if diff := cmp.Diff(want, DrainRaw(t, must(b.Range(nil, nil)))); diff != "" {
		t.Errorf("after restore (-want +got):\n%s", diff)
	}
}

// BackendCopies checks that Put copies its arguments and Get returns a copy.
func BackendCopies(t *testing.T, kind Kind) {
	b := kind.Open(t)
	k, v := []byte("key"), []byte("value")
	if err := b.Put(k, v); err != nil {
		t.Fatal(err)
	}
	copy(k, "xxx")
	copy(v, "XXXXX")
	got, ok, err := b.Get([]byte("key"))
	if err != nil || !ok || string(got) != "value" {
		t.Fatalf("Get after the caller changed its buffers = %q, %v, %v", got, ok, err)
	}
	copy(got, "XXXXX")
	got, _, _ = b.Get([]byte("key"))
	if string(got) != "value" {
		t.Errorf("changing a returned value changed the store: %q", got)
	}
	if v, ok, err := b.Get([]byte("nope")); v != nil || ok || err != nil {
		t.Errorf("Get of a missing key = %v, %v, %v; want nil, false, nil", v, ok, err)
	}
}

// IteratorValuesKept checks that what a typed iterator returned stays
// intact after later steps, also with serde.Bytes, which keeps the bytes it
// decodes while Pebble reuses its buffers.
func IteratorValuesKept(t *testing.T, kind Kind) {
	s := state.NewKeyValueStore("blobs", kind.Open(t), serde.Bytes{}, serde.Bytes{}, nil)
	var want []KV[[]byte, []byte]
	for i := range 100 {
		k, v := fmt.Appendf(nil, "k%03d", i), fmt.Appendf(nil, "value-%d", i*7)
		if err := s.Put(k, v); err != nil {
			t.Fatal(err)
		}
		want = append(want, KV[[]byte, []byte]{k, v})
	}
	if diff := cmp.Diff(want, Drain(t, must(s.All()))); diff != "" {
		t.Errorf("kept iterator results (-want +got):\n%s", diff)
	}
	got := Drain(t, must(s.Range([]byte("k010"), []byte("k020"))))
	if diff := cmp.Diff(want[10:20], got); diff != "" {
		t.Errorf("Range (-want +got):\n%s", diff)
	}
}

// RangeEmptyAndReversed checks empty, reversed and empty-bounded ranges.
func RangeEmptyAndReversed(t *testing.T, kind Kind) {
	b := kind.Open(t)
	s := state.NewKeyValueStore("s", b, serde.String{}, serde.String{}, nil)
	for _, k := range []string{"a", "b", "c"} {
		if err := s.Put(k, k); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range [][2]string{{"b", "b"}, {"c", "a"}, {"x", "z"}, {"", ""}, {"a", ""}} {
		if got := Drain(t, must(s.Range(r[0], r[1]))); len(got) != 0 {
			t.Errorf("Range(%q, %q) = %v, want nothing", r[0], r[1], got)
		}
	}
	// An empty, not nil, upper bound is a bound: nothing sorts before it.
	if got := DrainRaw(t, must(b.Range(nil, []byte{}))); len(got) != 0 {
		t.Errorf("backend Range(nil, []byte{}) = %v, want nothing", got)
	}
	if got := DrainRaw(t, must(b.Range([]byte{}, nil))); len(got) != 3 {
		t.Errorf("backend Range([]byte{}, nil) = %v, want all 3", got)
	}
}

// ClosedBackendErrors checks that every operation on a closed backend fails
// with state.ErrClosed.
func ClosedBackendErrors(t *testing.T, kind Kind) {
	b := kind.Open(t)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	_, _, getErr := b.Get([]byte("k"))
	_, rangeErr := b.Range(nil, nil)
	_, countErr := b.ApproximateCount()
	for name, err := range map[string]error{
		"Get":         getErr,
		"Put":         b.Put([]byte("k"), []byte("v")),
		"Delete":      b.Delete([]byte("k")),
		"Range":       rangeErr,
		"Count":       countErr,
		"Flush":       b.Flush(),
		"ApplyBatch":  b.(state.Restorer).ApplyBatch([]state.Change{{Key: []byte("k")}}),
		"DeleteRange": b.(state.RangeDeleter).DeleteRange(nil, nil),
		"Close":       b.Close(),
	} {
		if !errors.Is(err, state.ErrClosed) {
			t.Errorf("%s after Close = %v, want state.ErrClosed", name, err)
		}
	}
}
