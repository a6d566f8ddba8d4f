package state

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestMemoryPacking checks that a memory store packs the entries
// ApplyBatch inserts while it only grows, each within its own bytes, and
// stops for good at the first write that could leave packed bytes unused.
func TestMemoryPacking(t *testing.T) {
	apply := func(t *testing.T, m *memory, changes ...Change) {
		t.Helper()
		if err := m.ApplyBatch(changes); err != nil {
			t.Fatal(err)
		}
	}
	put := func(k, v string) Change { return Change{Key: []byte(k), Value: []byte(v)} }
	del := func(k string) Change { return Change{Key: []byte(k)} }
	for _, tc := range []struct {
		name  string
		write func(t *testing.T, m *memory)
		packs bool // whether packing goes on after write
	}{
		{"new keys", func(t *testing.T, m *memory) { apply(t, m, put("c", "3")) }, true},
		{"absent key deleted", func(t *testing.T, m *memory) { apply(t, m, del("z")) }, true},
		{"large entry", func(t *testing.T, m *memory) { apply(t, m, put("l", string(make([]byte, memSlab)))) }, true},
		{"replaced in a batch", func(t *testing.T, m *memory) { apply(t, m, put("a", "9")) }, false},
		{"replaced by a large entry", func(t *testing.T, m *memory) { apply(t, m, put("a", string(make([]byte, memSlab)))) }, false},
		{"deleted in a batch", func(t *testing.T, m *memory) { apply(t, m, del("a")) }, false},
		{"put", func(t *testing.T, m *memory) { m.Put([]byte("c"), []byte("3")) }, false},
		{"delete", func(t *testing.T, m *memory) { m.Delete([]byte("z")) }, false},
		{"delete range", func(t *testing.T, m *memory) { m.DeleteRange([]byte("x"), []byte("y")) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMemory().(*memory)
			apply(t, m, put("a", "1"), put("b", "2"))
			a, _, _ := m.view([]byte("a"))
			b, _, _ := m.view([]byte("b"))
			if len(m.slab) != memSlab-4 || cap(a) != len(a) || cap(b) != len(b) {
				t.Fatalf("a and b not packed in one slab, each in its own bytes: %d left in the slab, a %d/%d, b %d/%d", len(m.slab), len(a), cap(a), len(b), cap(b))
			}
			tc.write(t, m)
			left := len(m.slab)
			apply(t, m, put("n", "4"))
			if packed := len(m.slab) == left-2; packed != tc.packs {
				t.Fatalf("a new entry packed: %v, want %v", packed, tc.packs)
			}
			for k, want := range map[string]string{"b": "2", "n": "4"} {
				if v, ok, err := m.Get([]byte(k)); err != nil || !ok || !bytes.Equal(v, []byte(want)) {
					t.Fatalf("get %s = %q, %v, %v; want %q", k, v, ok, err, want)
				}
			}
		})
	}
}

// TestMemoryWide checks a wide store against a NewMemory one over enough
// keys for its tree to have three levels: the same writes (batches, puts,
// deletes, range deletes) leave the same entries, read whole and by range.
func TestMemoryWide(t *testing.T) {
	narrow, wide := NewMemory().(*memory), NewMemoryWide().(*memory)
	r := rand.New(rand.NewPCG(3, 4))
	key := func() []byte { return fmt.Appendf(nil, "k%06d", r.IntN(40_000)) }
	for i := range 60_000 {
		var err1, err2 error
		switch n := r.IntN(100); {
		case n < 80:
			batch := []Change{{Key: key(), Value: fmt.Appendf(nil, "v%d", i)}, {Key: key()}}
			err1, err2 = narrow.ApplyBatch(batch), wide.ApplyBatch(batch)
		case n < 90:
			k, v := key(), fmt.Appendf(nil, "p%d", i)
			err1, err2 = narrow.Put(k, v), wide.Put(k, v)
		case n < 99:
			k := key()
			err1, err2 = narrow.Delete(k), wide.Delete(k)
		default: // a few keys at once
			n := r.IntN(40_000)
			from, to := fmt.Appendf(nil, "k%06d", n), fmt.Appendf(nil, "k%06d", n+20)
			err1, err2 = narrow.DeleteRange(from, to), wide.DeleteRange(from, to)
		}
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
	}
	read := func(m *memory, from, to []byte) []string {
		it, err := m.Range(from, to)
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		var kvs []string
		for it.Next() {
			kvs = append(kvs, string(it.Key())+"="+string(it.Value()))
		}
		return kvs
	}
	all := read(wide, nil, nil)
	if len(all) < 127*127 {
		t.Fatalf("%d entries: too few for three levels of a wide tree", len(all))
	}
	if !slices.Equal(all, read(narrow, nil, nil)) {
		t.Fatal("the wide store's entries differ from the narrow one's")
	}
	for range 100 {
		from, to := key(), key()
		if got, want := read(wide, from, to), read(narrow, from, to); !slices.Equal(got, want) {
			t.Fatalf("range [%s, %s): %d entries, want %d", from, to, len(got), len(want))
		}
	}
}

// TestMemoryKeysCut checks that the keys an iterator hands out end at
// their length: an entry's value follows its key in the same bytes, and
// appending to a key must not write over it.
func TestMemoryKeysCut(t *testing.T) {
	m := NewMemory()
	if err := m.(Restorer).ApplyBatch([]Change{{Key: []byte("a"), Value: []byte("1")}, {Key: []byte("b"), Value: []byte("2")}}); err != nil {
		t.Fatal(err)
	}
	if err := m.Put([]byte("c"), []byte("3")); err != nil {
		t.Fatal(err)
	}
	it, err := m.Range(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for it.Next() {
		k := it.Key()
		if cap(k) != len(k) {
			t.Fatalf("key %q has capacity %d", k, cap(k))
		}
		_ = append(k, 'x')
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"a": "1", "b": "2", "c": "3"} {
		if v, ok, err := m.Get([]byte(k)); err != nil || !ok || string(v) != want {
			t.Fatalf("get %s = %q, %v, %v; want %q", k, v, ok, err, want)
		}
	}
	// An empty value is a value, not a deletion.
	if err := m.Put([]byte("e"), []byte{}); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := m.Get([]byte("e")); err != nil || !ok || v == nil || len(v) != 0 {
		t.Fatalf("get e = %q (nil %v), %v, %v; want an empty value", v, v == nil, ok, err)
	}
}
