package state

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
)

// memDegree is the B-tree degree: nodes hold up to 2*memDegree-1 entries.
const memDegree = 16

// memWideDegree is NewMemoryWide's degree. On 1,000,000 keys it inserted
// keys arriving in ascending runs twice as fast as memDegree, and read
// random keys 40% faster (fewer levels); random inserts cost the same.
const memWideDegree = 64

// memSlab is the size of the buffers a loading store packs its entries in;
// an entry above memSlab/16 bytes gets a buffer of its own.
const memSlab = 64 << 10

var (
	_ Restorer     = (*memory)(nil)
	_ RangeDeleter = (*memory)(nil)
)

// memory is the in-memory Backend: a copy-on-write B-tree whose stored key
// and value bytes are never modified once written, so that iterators can
// walk a cheap snapshot (a clone) while the store keeps changing.
//
// The entries live in slabs, by slot (memTree.slabs): a packing slab
// holds many, any other entry has one of its own. A slot is emptied, for
// a later slab, once its last entry is replaced or deleted and no
// snapshot can read it.
type memory struct {
	tree   *memTree
	degree int
	// live counts the entries of each slot; free lists the empty slots.
	live []int32
	free []uint32
	// dead are the slots whose entries went while snapshots of the slab
	// table were open (snaps counts them): emptied once none is, or in
	// a copy of the table, left to the snapshots, once they are many.
	dead  []uint32
	snaps *memSnaps
	// While the store only grows by ApplyBatch (a restore, a global
	// table's load), packing is set and the new entries are copied into
	// slab (the rest of the slab of slabSlot, from slabOff), memSlab
	// bytes shared by many entries: one allocation, and one object for
	// the GC, instead of one each. A slab stays as long as any of its
	// entries does, so packing stops for good at the first entry replaced
	// or deleted, or any other write: what the slabs can waste is bounded
	// by what was packed.
	packing  bool
	slab     []byte
	slabSlot uint32
	slabOff  uint32
}

// NewMemory returns an ordered in-memory Backend. Its contents are lost on
// Close; a logged store is restored from its changelog instead.
func NewMemory() Backend { return newMemory(memDegree) }

// NewMemoryWide returns NewMemory's store with B-tree nodes four times
// wider: cheaper to load from a topic and to read by key, but a write after
// an iterator is opened copies more (the iterator's snapshot shares the
// nodes, and a node is copied whole). It suits a table loaded in bulk and
// then read by key, as a global table is.
func NewMemoryWide() Backend { return newMemory(memWideDegree) }

func newMemory(degree int) *memory {
	return &memory{tree: newMemTree(degree), degree: degree, packing: true, snaps: new(memSnaps)}
}

// memSnaps counts the open snapshots of one slab table. An iterator
// gives its share back when it is closed, maybe from another goroutine.
type memSnaps struct{ open atomic.Int64 }

// memDeadCopy is how many dead slots wait for snapshots before the slab
// table is copied (if they are a quarter of it): a snapshot left open, or
// never closed, then holds them, not the store, and copies cost at most a
// few words per slot emptied.
const memDeadCopy = 1024

func (m *memory) Get(key []byte) ([]byte, bool, error) {
	if m.tree == nil {
		return nil, false, fmt.Errorf("memory store: get: %w", ErrClosed)
	}
	it, ok := m.tree.get(key)
	if !ok {
		return nil, false, nil
	}
	v := m.tree.value(it)
	return append(make([]byte, 0, len(v)), v...), true, nil
}

// view lends the stored bytes, which are never modified once written.
func (m *memory) view(key []byte) ([]byte, bool, error) {
	if m.tree == nil {
		return nil, false, fmt.Errorf("memory store: get: %w", ErrClosed)
	}
	it, ok := m.tree.get(key)
	if !ok {
		return nil, false, nil
	}
	return m.tree.value(it), true, nil
}

func (m *memory) Put(key, value []byte) error {
	if m.tree == nil {
		return fmt.Errorf("memory store: put: %w", ErrClosed)
	}
	m.stopPacking()
	return m.set(key, value)
}

// set stores copies of key and value, in a packing slab or in one
// allocation of their own.
func (m *memory) set(key, value []byte) error {
	n := len(key) + len(value)
	if uint64(n) > math.MaxUint32 {
		return fmt.Errorf("memory store: an entry of %d bytes is too large", n)
	}
	var (
		it  = memItem{klen: uint32(len(key)), vlen: uint32(len(value))}
		buf []byte
	)
	if m.packing && n <= memSlab/16 {
		if m.slab == nil || len(m.slab) < n {
			m.slab = make([]byte, memSlab)
			m.slabSlot, m.slabOff = m.newSlot(m.slab), 0
		}
		it.slot, it.off = m.slabSlot, m.slabOff
		buf, m.slab = m.slab[:n:n], m.slab[n:]
		m.slabOff += uint32(n)
	} else {
		buf = make([]byte, n)
		it.slot = m.newSlot(buf)
	}
	copy(buf, key)
	copy(buf[len(key):], value)
	m.live[it.slot]++
	if old, replaced := m.tree.set(key, it); replaced {
		m.stopPacking()
		m.release(old.slot)
	}
	return nil
}

// newSlot puts buf in an empty slot, or a new one.
func (m *memory) newSlot(buf []byte) uint32 {
	if n := len(m.free); n > 0 {
		slot := m.free[n-1]
		m.free = m.free[:n-1]
		m.tree.slabs[slot] = buf
		return slot
	}
	if uint64(len(m.tree.slabs)) >= math.MaxUint32 {
		panic("memory store: too many slabs")
	}
	m.tree.slabs = append(m.tree.slabs, buf)
	m.live = append(m.live, 0)
	return uint32(len(m.tree.slabs) - 1)
}

// release drops an entry of slot, which is emptied with its last one (but
// for the slab still being packed) once no snapshot can read it.
func (m *memory) release(slot uint32) {
	if m.live[slot]--; m.live[slot] > 0 || m.slab != nil && slot == m.slabSlot {
		return
	}
	m.dead = append(m.dead, slot)
	switch {
	case m.snaps.open.Load() == 0:
	case len(m.dead) >= memDeadCopy && len(m.dead) >= len(m.tree.slabs)/4:
		// The snapshots keep the table as it is; the store goes on in
		// a copy, which no snapshot reads yet.
		m.tree.slabs = slices.Clone(m.tree.slabs)
		m.snaps = new(memSnaps)
	default:
		return
	}
	for _, s := range m.dead {
		m.tree.slabs[s] = nil
		m.free = append(m.free, s)
	}
	m.dead = m.dead[:0]
}

// stopPacking ends packing, for good: every write but ApplyBatch's new
// keys calls it.
func (m *memory) stopPacking() { m.packing, m.slab = false, nil }

func (m *memory) Delete(key []byte) error {
	if m.tree == nil {
		return fmt.Errorf("memory store: delete: %w", ErrClosed)
	}
	m.stopPacking()
	if old, found := m.tree.delete(key); found {
		m.release(old.slot)
	}
	return nil
}

func (m *memory) Range(from, to []byte) (Iterator, error) {
	if m.tree == nil {
		return nil, fmt.Errorf("memory store: range: %w", ErrClosed)
	}
	it := &memIter{snap: m.tree.clone()}
	it.c = memCursor{t: &it.snap, stack: it.frames[:0]}
	if from != nil {
		it.from = bytes.Clone(from)
	}
	if to != nil {
		it.to = bytes.Clone(to)
	}
	// The snapshot reads slots that writes may empty: they wait for its
	// Close (see memDeadCopy).
	it.snaps = m.snaps
	it.snaps.open.Add(1)
	return it, nil
}

func (m *memory) ApproximateCount() (int64, error) {
	if m.tree == nil {
		return 0, fmt.Errorf("memory store: count: %w", ErrClosed)
	}
	return int64(m.tree.length), nil
}

func (m *memory) Flush() error {
	if m.tree == nil {
		return fmt.Errorf("memory store: flush: %w", ErrClosed)
	}
	return nil
}

// Close drops the contents. Iterators opened before keep their snapshot and
// remain usable until closed.
func (m *memory) Close() error {
	if m.tree == nil {
		return fmt.Errorf("memory store: close: %w", ErrClosed)
	}
	m.tree, m.slab, m.live, m.free, m.dead = nil, nil, nil, nil, nil
	return nil
}

// DeleteRange implements RangeDeleter. The tree has no range cut, so the
// keys of the range are found in one walk and deleted one by one: nothing is
// logged or copied, and a whole-store drop replaces the tree (and its
// slabs) at once. Iterators keep their snapshot.
func (m *memory) DeleteRange(from, to []byte) error {
	if m.tree == nil {
		return fmt.Errorf("memory store: delete range: %w", ErrClosed)
	}
	m.stopPacking()
	if from == nil && to == nil {
		m.tree = newMemTree(m.degree)
		m.live, m.free, m.dead, m.snaps = nil, nil, nil, new(memSnaps)
		return nil
	}
	var keys [][]byte
	c := memCursor{t: m.tree}
	for c.seek(from); c.valid(); c.next() {
		k := m.tree.key(c.item())
		if to != nil && bytes.Compare(k, to) >= 0 {
			break
		}
		keys = append(keys, k) // stored bytes are never modified: no copy
	}
	for _, k := range keys {
		if old, found := m.tree.delete(k); found {
			m.release(old.slot)
		}
	}
	return nil
}

// ApplyBatch implements Restorer.
func (m *memory) ApplyBatch(changes []Change) error {
	if m.tree == nil {
		return fmt.Errorf("memory store: apply batch: %w", ErrClosed)
	}
	for _, c := range changes {
		if c.Value != nil {
			if err := m.set(c.Key, c.Value); err != nil {
				return err
			}
		} else if old, found := m.tree.delete(c.Key); found {
			m.stopPacking()
			m.release(old.slot)
		}
	}
	return nil
}

// memIter walks a snapshot with a cursor.
type memIter struct {
	snap     memTree
	c        memCursor
	frames   [6]memFrame // the cursor's path, unless the tree is deeper
	from, to []byte
	started  bool
	done     bool      // past the last entry, or closed
	snaps    *memSnaps // nil once closed
}

func (it *memIter) Next() bool {
	if it.done {
		return false
	}
	if it.started {
		it.c.next()
	} else {
		it.started = true
		it.c.seek(it.from)
	}
	if !it.c.valid() || it.to != nil && bytes.Compare(it.c.t.key(it.c.item()), it.to) >= 0 {
		it.done = true
		return false
	}
	return true
}

func (it *memIter) Key() []byte {
	if !it.started || it.done {
		return nil
	}
	return it.c.t.key(it.c.item())
}

func (it *memIter) Value() []byte {
	if !it.started || it.done {
		return nil
	}
	return it.c.t.value(it.c.item())
}

func (it *memIter) Err() error { return nil }

func (it *memIter) Close() error {
	if it.snaps != nil {
		it.snaps.open.Add(-1)
		it.snaps = nil
	}
	it.done, it.c, it.snap = true, memCursor{}, memTree{}
	return nil
}
