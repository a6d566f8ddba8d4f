package state

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kgen-dev/kgen/runtime/serde"
)

func TestChangelogSeesExactlyTheWrites(t *testing.T) {
	for _, kind := range backendKinds() {
		t.Run(kind.name, func(t *testing.T) {
			log := &recorder{}
			s := NewKeyValueStore("counts", kind.open(t), serde.String{}, serde.Int64{}, log)
			steps := []func() error{
				func() error { return s.Put("a", 1) },
				func() error { return s.Put("a", 2) },
				func() error { _, _, err := s.Get("a"); return err },
				func() error { _, _, err := s.PutIfAbsent("a", 3); return err }, // exists: not logged
				func() error { _, _, err := s.PutIfAbsent("b", 4); return err },
				func() error { return s.Delete("a") },
				func() error { return s.Delete("missing") }, // a tombstone all the same
				func() error { it, err := s.All(); drain(t, it); return err },
				func() error { _, err := s.ApproximateCount(); return err },
			}
			for i, step := range steps {
				if err := step(); err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
			}
			i64 := func(v int64) []byte { return must(serde.Int64{}.Serialize(v)) }
			want := []Change{
				{[]byte("a"), i64(1)},
				{[]byte("a"), i64(2)},
				{[]byte("b"), i64(4)},
				{[]byte("a"), nil},
				{[]byte("missing"), nil},
			}
			if diff := cmp.Diff(want, log.changes); diff != "" {
				t.Errorf("changelog (-want +got):\n%s", diff)
			}
		})
	}
}

func TestChangelogNotCalledWhenWriteFails(t *testing.T) {
	log := &recorder{}
	b := NewMemory()
	s := NewKeyValueStore("counts", b, serde.String{}, serde.Int64{}, log)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Put("a", 1); !errors.Is(err, ErrClosed) {
		t.Errorf("Put on a closed backend = %v, want ErrClosed", err)
	}
	if err := s.Delete("a"); !errors.Is(err, ErrClosed) {
		t.Errorf("Delete on a closed backend = %v, want ErrClosed", err)
	}
	if len(log.changes) != 0 {
		t.Errorf("failed writes were logged: %v", log.changes)
	}
}

func TestNilSerializedValueDeletes(t *testing.T) {
	for _, kind := range backendKinds() {
		t.Run(kind.name, func(t *testing.T) {
			log := &recorder{}
			s := NewKeyValueStore("blobs", kind.open(t), serde.String{}, serde.Bytes{}, log)
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
			want := []Change{{[]byte("k"), []byte("v")}, {[]byte("empty"), []byte{}}, {[]byte("k"), nil}}
			if diff := cmp.Diff(want, log.changes); diff != "" {
				t.Errorf("changelog (-want +got):\n%s", diff)
			}
		})
	}
}

func TestApplyBatchRestores(t *testing.T) {
	for _, kind := range backendKinds() {
		t.Run(kind.name, func(t *testing.T) {
			b := kind.open(t)
			if err := b.Put([]byte("stale"), []byte("x")); err != nil {
				t.Fatal(err)
			}
			changes := []Change{
				{[]byte("a"), []byte("1")},
				{[]byte("b"), []byte("1")},
				{[]byte("a"), []byte("2")}, // later records win
				{[]byte("b"), nil},         // a tombstone after a value
				{[]byte("stale"), nil},
				{[]byte("c"), []byte{}},
			}
			r, ok := b.(Restorer)
			if !ok {
				t.Fatalf("%T does not implement Restorer", b)
			}
			if err := r.ApplyBatch(changes); err != nil {
				t.Fatal(err)
			}
			// The caller may reuse its buffers once ApplyBatch returns.
			for _, c := range changes {
				clear(c.Key)
				clear(c.Value)
			}
			want := []Change{{[]byte("a"), []byte("2")}, {[]byte("c"), []byte{}}}
			if diff := cmp.Diff(want, drainRaw(t, must(b.Range(nil, nil)))); diff != "" {
				t.Errorf("after restore (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBackendCopies(t *testing.T) {
	for _, kind := range backendKinds() {
		t.Run(kind.name, func(t *testing.T) {
			b := kind.open(t)
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
		})
	}
}

// TestIteratorValuesKept checks that what a typed iterator returned stays
// intact after later steps, also with serde.Bytes, which keeps the bytes it
// decodes while Pebble reuses its buffers.
func TestIteratorValuesKept(t *testing.T) {
	for _, kind := range backendKinds() {
		t.Run(kind.name, func(t *testing.T) {
			s := NewKeyValueStore("blobs", kind.open(t), serde.Bytes{}, serde.Bytes{}, nil)
			var want []kv[[]byte, []byte]
			for i := range 100 {
				k, v := fmt.Appendf(nil, "k%03d", i), fmt.Appendf(nil, "value-%d", i*7)
				if err := s.Put(k, v); err != nil {
					t.Fatal(err)
				}
				want = append(want, kv[[]byte, []byte]{k, v})
			}
			if diff := cmp.Diff(want, drain(t, must(s.All()))); diff != "" {
				t.Errorf("kept iterator results (-want +got):\n%s", diff)
			}
			got := drain(t, must(s.Range([]byte("k010"), []byte("k020"))))
			if diff := cmp.Diff(want[10:20], got); diff != "" {
				t.Errorf("Range (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRangeEmptyAndReversed(t *testing.T) {
	for _, kind := range backendKinds() {
		t.Run(kind.name, func(t *testing.T) {
			b := kind.open(t)
			s := NewKeyValueStore("s", b, serde.String{}, serde.String{}, nil)
			for _, k := range []string{"a", "b", "c"} {
				if err := s.Put(k, k); err != nil {
					t.Fatal(err)
				}
			}
			for _, r := range [][2]string{{"b", "b"}, {"c", "a"}, {"x", "z"}, {"", ""}, {"a", ""}} {
				if got := drain(t, must(s.Range(r[0], r[1]))); len(got) != 0 {
					t.Errorf("Range(%q, %q) = %v, want nothing", r[0], r[1], got)
				}
			}
			// An empty, not nil, upper bound is a bound: nothing sorts before it.
			if got := drainRaw(t, must(b.Range(nil, []byte{}))); len(got) != 0 {
				t.Errorf("backend Range(nil, []byte{}) = %q, want nothing", got)
			}
			if got := drainRaw(t, must(b.Range([]byte{}, nil))); len(got) != 3 {
				t.Errorf("backend Range([]byte{}, nil) = %q, want all 3", got)
			}
		})
	}
}

func TestTypedErrorsNameTheStore(t *testing.T) {
	b := NewMemory()
	if err := b.Put([]byte("k"), []byte("not eight bytes")); err != nil {
		t.Fatal(err)
	}
	s := NewKeyValueStore("totals", b, serde.String{}, serde.Int64{}, nil)
	_, _, err := s.Get("k")
	var size *serde.SizeError
	if !errors.As(err, &size) || !strings.Contains(err.Error(), `store "totals"`) {
		t.Errorf("Get of a bad value = %v, want a wrapped *serde.SizeError naming the store", err)
	}
	if _, _, err := s.PutIfAbsent("k", 1); !errors.As(err, &size) {
		t.Errorf("PutIfAbsent over a bad value = %v, want a wrapped *serde.SizeError", err)
	}
	it := must(s.All())
	if it.Next() {
		t.Error("Next over a bad value = true")
	}
	if err := it.Err(); !errors.As(err, &size) || !strings.Contains(err.Error(), `store "totals"`) {
		t.Errorf("iterator Err = %v, want a wrapped *serde.SizeError naming the store", err)
	}
	if err := it.Close(); err != nil {
		t.Error(err)
	}

	failing := NewKeyValueStore("j", NewMemory(), serde.String{}, serde.JSON[func()]{}, nil)
	if err := failing.Put("k", func() {}); err == nil || !strings.Contains(err.Error(), `store "j"`) {
		t.Errorf("Put of an unserializable value = %v, want an error naming the store", err)
	}
}

func TestClosedBackendErrors(t *testing.T) {
	for _, kind := range backendKinds() {
		t.Run(kind.name, func(t *testing.T) {
			b := kind.open(t)
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			_, _, getErr := b.Get([]byte("k"))
			_, rangeErr := b.Range(nil, nil)
			_, countErr := b.ApproximateCount()
			for name, err := range map[string]error{
				"Get":        getErr,
				"Put":        b.Put([]byte("k"), []byte("v")),
				"Delete":     b.Delete([]byte("k")),
				"Range":      rangeErr,
				"Count":      countErr,
				"Flush":      b.Flush(),
				"ApplyBatch": b.(Restorer).ApplyBatch([]Change{{Key: []byte("k")}}),
				"Close":      b.Close(),
			} {
				if !errors.Is(err, ErrClosed) {
					t.Errorf("%s after Close = %v, want ErrClosed", name, err)
				}
			}
		})
	}
}

func TestName(t *testing.T) {
	if got := NewKeyValueStore("counts", NewMemory(), serde.String{}, serde.Int64{}, nil).Name(); got != "counts" {
		t.Errorf("Name = %q", got)
	}
}
