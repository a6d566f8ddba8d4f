package state

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
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

// readAll returns what it walks, as key=value strings, and closes it.
func readAll(t *testing.T, it Iterator) []string {
	t.Helper()
	var kvs []string
	for it.Next() {
		kvs = append(kvs, string(it.Key())+"="+string(it.Value()))
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	return kvs
}

// contents returns m's entries, as key=value strings.
func contents(t *testing.T, m *memory) []string {
	t.Helper()
	it, err := m.Range(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return readAll(t, it)
}

// TestMemorySlotsAndSnapshots checks that a slot whose entries are all
// gone is emptied and reused, but not while a snapshot that can read it is
// open: an iterator keeps reading what the store held when it opened,
// packed entries and entries of their own, through replacements, deletes
// and new entries, and the slots wait for its Close.
func TestMemorySlotsAndSnapshots(t *testing.T) {
	m := NewMemory().(*memory)
	var load []Change
	for i := range 2000 {
		load = append(load, Change{Key: fmt.Appendf(nil, "k%04d", i), Value: fmt.Appendf(nil, "load%d", i)})
	}
	if err := m.ApplyBatch(load); err != nil { // packed
		t.Fatal(err)
	}
	for i := range 1000 { // entries of their own
		if err := m.Put(fmt.Appendf(nil, "p%04d", i), fmt.Appendf(nil, "put%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 500 { // slots emptied at once: no snapshot is open
		if err := m.Delete(fmt.Appendf(nil, "p%04d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if len(m.free) != 500 || len(m.dead) != 0 {
		t.Fatalf("%d free slots and %d dead after 500 deletes, want 500 and 0", len(m.free), len(m.dead))
	}
	before := contents(t, m)
	it, err := m.Range(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	slots := len(m.tree.slabs)
	// Every entry replaced or deleted while the snapshot is open: the
	// free slots are taken again, the emptied ones wait.
	for i := range 2000 {
		k := fmt.Appendf(nil, "k%04d", i)
		if i%2 == 0 {
			err = m.Delete(k)
		} else {
			err = m.Put(k, []byte("new"))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := 500; i < 1000; i++ {
		if err := m.Put(fmt.Appendf(nil, "p%04d", i), []byte("new")); err != nil {
			t.Fatal(err)
		}
	}
	if len(m.free) != 0 || len(m.dead) == 0 {
		t.Fatalf("%d free slots and %d dead with a snapshot open, want 0 and some", len(m.free), len(m.dead))
	}
	if got := readAll(t, it); !slices.Equal(got, before) {
		t.Fatalf("the snapshot read %d entries that differ from the %d it opened on", len(got), len(before))
	}
	dead := len(m.dead)
	if err := m.Delete([]byte("p0999")); err != nil { // the first release after the Close
		t.Fatal(err)
	}
	if len(m.dead) != 0 || len(m.free) != dead+1 {
		t.Fatalf("after the snapshot closed: %d dead, %d free; want 0 and %d", len(m.dead), len(m.free), dead+1)
	}
	for _, s := range m.free {
		if m.tree.slabs[s] != nil {
			t.Fatalf("free slot %d holds a slab", s)
		}
	}
	slots = len(m.tree.slabs)
	for i := range 100 {
		if err := m.Put(fmt.Appendf(nil, "q%04d", i), []byte("q")); err != nil {
			t.Fatal(err)
		}
	}
	if len(m.tree.slabs) != slots || len(m.free) != dead+1-100 {
		t.Fatalf("%d slots (was %d), %d free: the emptied slots were not taken again", len(m.tree.slabs), slots, len(m.free))
	}
	got := contents(t, m)
	var want []string
	for i := range 2000 {
		if i%2 == 1 {
			want = append(want, fmt.Sprintf("k%04d=new", i))
		}
	}
	for i := 500; i < 999; i++ {
		want = append(want, fmt.Sprintf("p%04d=new", i))
	}
	for i := range 100 {
		want = append(want, fmt.Sprintf("q%04d=q", i))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("the store holds %d entries, want %d", len(got), len(want))
	}
}

// TestMemorySnapshotLeftOpen checks that an iterator never closed does
// not keep every later emptied slot: once the dead slots are many, the
// store goes on in a copy of its slab table and empties them there, while
// the iterator still reads its snapshot.
func TestMemorySnapshotLeftOpen(t *testing.T) {
	m := NewMemory().(*memory)
	for i := range 100 {
		if err := m.Put(fmt.Appendf(nil, "k%03d", i), []byte("first")); err != nil {
			t.Fatal(err)
		}
	}
	before := contents(t, m)
	open, err := m.Range(nil, nil) // never closed here
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 * memDeadCopy {
		if err := m.Put(fmt.Appendf(nil, "k%03d", i%100), fmt.Appendf(nil, "v%d", i)); err != nil {
			t.Fatal(err)
		}
		if len(m.dead) > memDeadCopy {
			t.Fatalf("%d dead slots after %d replacements", len(m.dead), i+1)
		}
	}
	if len(m.tree.slabs) > 2*memDeadCopy {
		t.Fatalf("%d slots for 100 entries", len(m.tree.slabs))
	}
	if got := readAll(t, open); !slices.Equal(got, before) {
		t.Fatal("the open snapshot's entries changed")
	}
}

// TestMemoryConcurrentReaders runs readers beside a writer as a global
// table's store is used (for -race): lookups under a shared lock, and
// iterators opened under the write lock and read outside it, each closed
// by its reader, while the writer replaces, deletes and adds entries
// (emptying and reusing slots) under the write lock.
func TestMemoryConcurrentReaders(t *testing.T) {
	m := NewMemoryWide().(*memory)
	var mu sync.RWMutex
	const keys = 3000
	value := func(round, i int) []byte { return fmt.Appendf(nil, "r%d-%d", round, i) }
	batch := func(round int) []Change {
		var cs []Change
		for i := range keys {
			switch {
			case round > 0 && (i+round)%7 == 0:
				cs = append(cs, Change{Key: fmt.Appendf(nil, "k%05d", i)})
			default:
				cs = append(cs, Change{Key: fmt.Appendf(nil, "k%05d", i), Value: value(round, i)})
			}
		}
		return cs
	}
	if err := m.ApplyBatch(batch(0)); err != nil {
		t.Fatal(err)
	}
	const rounds = 30
	var round atomic.Int64 // the last round applied
	done := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for r := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				if r%2 == 0 { // lookups
					k := fmt.Appendf(nil, "k%05d", (i*31+r)%keys)
					mu.RLock()
					now := round.Load()
					v, ok, err := m.Get(k)
					mu.RUnlock()
					if err != nil || ok && !bytes.HasPrefix(v, fmt.Appendf(nil, "r%d-", now)) {
						errs <- fmt.Errorf("get %s in round %d: %q, %v, %v", k, now, v, ok, err)
						return
					}
					continue
				}
				mu.Lock()
				now := round.Load()
				it, err := m.Range(nil, nil)
				mu.Unlock()
				if err != nil {
					errs <- err
					return
				}
				n := 0
				for it.Next() {
					if !bytes.HasPrefix(it.Value(), fmt.Appendf(nil, "r%d-", now)) {
						errs <- fmt.Errorf("a snapshot of round %d read %s=%s", now, it.Key(), it.Value())
						return
					}
					n++
				}
				it.Close() // outside the lock: the count is atomic
				if n < keys*6/7-1 {
					errs <- fmt.Errorf("a snapshot of round %d read %d entries", now, n)
					return
				}
			}
		})
	}
	for r := 1; r <= rounds; r++ {
		b := batch(r)
		mu.Lock()
		err := m.ApplyBatch(b)
		if err == nil && r%3 == 0 {
			err = m.Put([]byte("k00001"), value(r, 1))
		}
		round.Store(int64(r))
		mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
