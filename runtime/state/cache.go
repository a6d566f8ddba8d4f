package state

import (
	"bytes"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/RaduBerinde/btreemap"
)

// Cache is a write-back cache over a Backend, as Kafka Streams' record
// cache: reads of cached keys and repeated writes of one key stay in memory,
// and only the last value of each dirty key leaves the cache, when its owner
// takes the dirty entries (Dirty) or flushes (Flush). It knows nothing of
// changelogs or transactions: the owner decides what to do with what it
// takes, and when.
//
// Put copies key and value, and Get returns a copy, as the Backend contract
// says: a caller may reuse its buffers, or modify what it got.
//
// A Cache is not safe for concurrent use, except that once ShareReads was
// called, readers on other goroutines may Peek and Range while its owner
// uses it.
type Cache struct {
	// mu is nil unless ShareReads was called: then every method takes it,
	// around what it does (see ShareReads).
	mu      *sync.Mutex
	b       Backend
	entries map[string]*cacheEntry
	// sorted holds the keys of entries in order, for Range: a window
	// store's fetch per record (a stream-stream join's) would otherwise
	// scan the whole cache each time. Nil until the first Range or
	// DeleteRange, so that a store only read by key pays nothing for it.
	sorted *btreemap.BTreeMap[string, *cacheEntry]
	// orderedOnly says entries is nil and sorted alone holds the entries
	// (OrderedOnly).
	orderedOnly bool
	// hot are the entries of the last two keys an OrderedOnly cache
	// rewrote, the latest first, until an entry leaves the tree: a join's
	// window store rewrites its sequence number and its observed time at
	// nearly every put, and reads the observed time, which then take no
	// walk down the tree. With one slot the two keys evicted each other.
	hot    [2]hotEntry
	dirty  []string // keys in the order they became dirty
	limit  int
	onFull func()
	clock  RecordClock // nil: writes carry NoTimestamp
	// spareIter is a closed Range iterator, kept for the next Range.
	spareIter *mergedIter
	// drops are the ranges dropped since the owner last took them
	// (Drops), not yet applied to b: the backend's keys in them are hidden.
	drops []KeyRange
}

var _ RangeDeleter = (*Cache)(nil)

// hotEntry is a key of an OrderedOnly cache's tree and its entry there;
// e nil: none.
type hotEntry struct {
	key string
	e   *cacheEntry
}

// hotFind is key's hot slot, or nil. It does not keep key.
func (c *Cache) hotFind(key string) *hotEntry {
	for i := range c.hot {
		if h := &c.hot[i]; h.e != nil && h.key == key {
			return h
		}
	}
	return nil
}

// forgetHot empties the hot slots: an entry left the tree.
func (c *Cache) forgetHot() { c.hot = [2]hotEntry{} }

// cacheEntry is a cached key's value. The value is kept as a pointer and a
// length rather than a slice, so that an entry is 24 bytes, not 48 (its
// size class): it is a tenth of a join store's cache.
type cacheEntry struct {
	val     unsafe.Pointer // the value's first byte; nil when empty or absent
	ts      int64          // the time of the record that made the last write
	n       uint32         // the value's length (a Kafka record's is far below 4 GiB)
	present bool           // false: deleted, or absent in the backend
	isDirty bool
}

// value is the entry's value, nil when absent. Never modified in place.
func (e *cacheEntry) value() []byte {
	if !e.present {
		return nil
	}
	if e.val == nil {
		return []byte{}
	}
	return unsafe.Slice((*byte)(e.val), e.n)
}

// setValue makes v (nil: absent) the entry's value, without copying it.
func (e *cacheEntry) setValue(v []byte) {
	e.present, e.n, e.val = v != nil, uint32(len(v)), nil
	if len(v) > 0 {
		e.val = unsafe.Pointer(unsafe.SliceData(v))
	}
}

// newCacheEntry is an entry holding v.
func newCacheEntry(v []byte, ts int64, dirty bool) *cacheEntry {
	e := &cacheEntry{ts: ts, isDirty: dirty}
	e.setValue(v)
	return e
}

// NewCache returns a cache of at most about limit entries over b (limit < 1
// means 1). When it holds more and every entry is dirty, it calls onFull,
// which should make its owner take the dirty entries soon, and keeps
// holding them; with onFull nil it writes them back to b itself, as one
// batch, and forgets every entry.
func NewCache(b Backend, limit int, onFull func()) *Cache {
	limit = max(limit, 1)
	// The map grows with the keys actually written: sized for the limit up
	// front, every store of a task would hold its full cache's worth of
	// buckets (about 4 MiB for 8 stores of 10,000) however few keys it sees.
	return &Cache{b: b, entries: make(map[string]*cacheEntry), limit: limit, onFull: onFull}
}

// SetClock makes each write carry the time clock tells when it is made
// (the time of the record being processed), which Dirty hands out with the
// write: the changelog record logged for it at the commit has the time of
// the record that caused it, however late the commit comes. Without a
// clock, writes carry NoTimestamp.
func (c *Cache) SetClock(clock RecordClock) { c.clock = clock }

// OrderedOnly makes the key tree the cache's only index, without the map:
// for a store whose reads are ranges and whose writes are nearly all new
// keys (a join's window store), where the map was some 47 bytes an entry,
// a sixth of the cache's memory, for lookups the tree can do. A lookup by
// key then costs a walk down the tree. Call it before the cache is used.
func (c *Cache) OrderedOnly() {
	c.lock()
	defer c.unlock()
	c.ordered()
	c.entries, c.orderedOnly = nil, true
}

// lookup returns the entry of key.
func (c *Cache) lookup(key []byte) (*cacheEntry, bool) {
	return c.find(unsafe.String(unsafe.SliceData(key), len(key)))
}

// find is lookup of a string key, which it does not keep.
func (c *Cache) find(k string) (*cacheEntry, bool) {
	if c.orderedOnly {
		if h := c.hotFind(k); h != nil {
			return h.e, true
		}
		_, e, ok := c.sorted.Get(k)
		return e, ok
	}
	e, ok := c.entries[k]
	return e, ok
}

// size is the number of entries.
func (c *Cache) size() int {
	if c.orderedOnly {
		return c.sorted.Len()
	}
	return len(c.entries)
}

// ShareReads makes the cache safe for readers on other goroutines (an
// interactive query) while one goroutine, its owner, reads and writes it:
// every method then holds a lock for the one operation it does (even the
// owner's Get fills the cache, and a Range opens an iterator of the
// backend: a memory store clones its tree). It is a plain mutex, not a
// reader/writer one: the owner takes it twice a record (a count's Get and
// Put), where a reader/writer lock's extra atomic operations cost more
// than the readers, who hold it for a map lookup or a backend's Get, lose
// by taking turns. The backend must be written only through the cache
// meanwhile, or under the same exclusion by other means. An iterator from
// Range reads outside the lock (the cached entries it merges are copied
// when it opens, and the backend's iterators read a snapshot, which a
// memory or Pebble store's do) and takes the lock to close. Call it before
// the cache is shared. The uncontended lock costs the owner a few
// nanoseconds an operation (BenchmarkCachedCountShared), so only the
// stores that are queried ask for it.
func (c *Cache) ShareReads() {
	if c.mu == nil {
		c.mu = new(sync.Mutex)
	}
}

func (c *Cache) lock() {
	if c.mu != nil {
		c.mu.Lock()
	}
}

func (c *Cache) unlock() {
	if c.mu != nil {
		c.mu.Unlock()
	}
}

// Get returns a copy of the value of key, from the cache or the backend.
func (c *Cache) Get(key []byte) ([]byte, bool, error) {
	c.lock()
	v, ok, err := c.viewLocked(key)
	c.unlock()
	if !ok || err != nil {
		return nil, ok, err
	}
	return append(make([]byte, 0, len(v)), v...), true, nil
}

// Peek is Get that leaves the cache as it is: a key read from the backend
// is not cached. Queries read through it, so that what they read does not
// push the entries the processing path uses out of the cache. A shared
// cache (ShareReads) over a ConcurrentGetter reads the backend after it
// releases its lock: the owner then waits for a map lookup at most, not
// for a read of the disk.
func (c *Cache) Peek(key []byte) ([]byte, bool, error) {
	c.lock()
	v, ok, cached := c.peekCached(key)
	if cached {
		c.unlock()
		return v, ok, nil
	}
	if cg, can := c.b.(ConcurrentGetter); can && c.mu != nil {
		c.unlock()
		// Not cached now: the backend holds the key's value as of now,
		// or a later one the owner wrote back since.
		return cg.ConcurrentGet(key)
	}
	defer c.unlock()
	return c.b.Get(key)
}

// peekCached is what the cache alone says of key: cached is false when
// the backend has to be read.
func (c *Cache) peekCached(key []byte) (v []byte, ok, cached bool) {
	if e, in := c.lookup(key); in {
		v := e.value()
		if v == nil {
			return nil, false, true
		}
		return append(make([]byte, 0, len(v)), v...), true, true
	}
	if len(c.drops) > 0 && inRanges(c.drops, key) {
		return nil, false, true
	}
	return nil, false, false
}

// view is Get without the copy: the bytes stay valid, unchanged, but must
// not be modified. Typed stores whose value serde copies use it.
func (c *Cache) view(key []byte) ([]byte, bool, error) {
	c.lock()
	defer c.unlock()
	return c.viewLocked(key)
}

func (c *Cache) viewLocked(key []byte) ([]byte, bool, error) {
	if e, ok := c.lookup(key); ok {
		return e.value(), e.present, nil
	}
	if len(c.drops) > 0 && inRanges(c.drops, key) {
		return nil, false, nil // dropped, not yet from the backend
	}
	v, ok, err := c.b.Get(key)
	if err != nil {
		return nil, false, err
	}
	c.add(string(key), newCacheEntry(v, 0, false))
	c.overflow()
	return v, ok, nil
}

// Put caches a copy of value under key, as dirty.
func (c *Cache) Put(key, value []byte) error {
	v := append(make([]byte, 0, len(value)), value...)
	c.lock()
	defer c.unlock()
	return c.write(key, v)
}

// putOwned is Put of a value the caller gives up: no copy.
func (c *Cache) putOwned(key, value []byte) error {
	if value == nil {
		value = []byte{}
	}
	c.lock()
	defer c.unlock()
	return c.write(key, value)
}

// putOwnedKV is Put of a key and a value the caller gives up: neither is
// copied, and neither may be modified after (a window store's key and value
// share one allocation, which its changelog record reads too).
func (c *Cache) putOwnedKV(key, value []byte) error {
	if value == nil {
		value = []byte{}
	}
	c.lock()
	defer c.unlock()
	return c.writeKey(key, unsafe.String(unsafe.SliceData(key), len(key)), value)
}

// Delete caches the deletion of key, as dirty.
func (c *Cache) Delete(key []byte) error {
	c.lock()
	defer c.unlock()
	return c.write(key, nil)
}

func (c *Cache) write(key, value []byte) error {
	return c.writeKey(key, "", value)
}

// writeKey is write with the key's string when the caller has one to give
// (owned): else a new entry copies key.
func (c *Cache) writeKey(key []byte, owned string, value []byte) error {
	ts := NoTimestamp
	if c.clock != nil {
		ts = c.clock.RecordTime()
	}
	if c.orderedOnly {
		return c.writeOrdered(key, owned, value, ts)
	}
	if e, ok := c.entries[string(key)]; ok {
		e.setValue(value)
		e.ts = ts
		if !e.isDirty {
			e.isDirty = true
			c.dirty = append(c.dirty, string(key))
		}
	} else {
		k := owned
		if len(k) != len(key) {
			k = string(key)
		}
		c.add(k, newCacheEntry(value, ts, true))
		c.dirty = append(c.dirty, k)
	}
	return c.overflow()
}

// writeOrdered is writeKey of an OrderedOnly cache: one walk down the tree
// whether the key is new (nearly always) or not, at the price of a new
// entry when it is not.
func (c *Cache) writeOrdered(key []byte, owned string, value []byte, ts int64) error {
	// A view of key, not a copy: hotFind only compares it.
	if h := c.hotFind(unsafe.String(unsafe.SliceData(key), len(key))); h != nil {
		e := h.e
		e.setValue(value)
		e.ts = ts
		if !e.isDirty {
			e.isDirty = true
			c.dirty = append(c.dirty, h.key)
		}
		return c.overflow()
	}
	k := owned
	if len(k) != len(key) {
		k = string(key)
	}
	e := newCacheEntry(value, ts, true)
	_, old, replaced := c.sorted.ReplaceOrInsert(k, e)
	if !replaced || !old.isDirty {
		c.dirty = append(c.dirty, k)
	}
	if replaced {
		c.hot[1], c.hot[0] = c.hot[0], hotEntry{k, e}
	}
	return c.overflow()
}

// cacheDegree is the degree of a cache's key tree.
const cacheDegree = 16

func (c *Cache) add(k string, e *cacheEntry) {
	if !c.orderedOnly {
		c.entries[k] = e
	}
	if c.sorted != nil {
		c.sorted.ReplaceOrInsert(k, e)
	}
}

func (c *Cache) remove(k string) {
	c.forgetHot()
	delete(c.entries, k)
	if c.sorted != nil {
		c.sorted.Delete(k)
	}
}

func (c *Cache) removeAll() {
	c.forgetHot()
	clear(c.entries)
	if c.sorted != nil {
		c.sorted.Clear(false)
	}
}

// cacheBounds are the key tree's bounds of [from, to), nil meaning none.
// They share from's and to's bytes: use them only while those stay as they
// are (during one walk of the tree).
func cacheBounds(from, to []byte) (btreemap.LowerBound[string], btreemap.UpperBound[string]) {
	lo, hi := btreemap.Min[string](), btreemap.Max[string]()
	if from != nil {
		lo = btreemap.GE(unsafe.String(unsafe.SliceData(from), len(from)))
	}
	if to != nil {
		hi = btreemap.LT(unsafe.String(unsafe.SliceData(to), len(to)))
	}
	return lo, hi
}

// ordered returns the tree of the cached keys, built on first use.
func (c *Cache) ordered() *btreemap.BTreeMap[string, *cacheEntry] {
	if c.sorted == nil {
		c.sorted = btreemap.New[string, *cacheEntry](cacheDegree, strings.Compare)
		for k, e := range c.entries {
			c.sorted.ReplaceOrInsert(k, e)
		}
	}
	return c.sorted
}

// overflow keeps the cache near its limit: clean entries go first, as they
// cost nothing to drop; then the owner is asked to take the dirty ones, or,
// with no one to ask, they are written back.
func (c *Cache) overflow() error {
	if c.size() <= c.limit {
		return nil
	}
	if len(c.dirty) < c.size() {
		c.dropClean()
		if c.size() <= c.limit {
			return nil
		}
	}
	if c.onFull != nil {
		c.onFull()
		return nil
	}
	// No owner: the drops and the dirty entries go back, unsynced (the
	// owner's next Flush makes them durable).
	if err := DeleteRanges(c.b, c.takeDrops()); err != nil {
		return err
	}
	if err := ApplyChanges(c.b, c.takeDirty()); err != nil {
		return err
	}
	c.removeAll()
	return nil
}

// dropClean forgets the clean entries.
func (c *Cache) dropClean() {
	c.forgetHot()
	if !c.orderedOnly {
		for k, e := range c.entries {
			if !e.isDirty {
				c.remove(k)
			}
		}
		return
	}
	var clean []string
	for k, e := range c.sorted.Ascend(btreemap.Min[string](), btreemap.Max[string]()) {
		if !e.isDirty {
			clean = append(clean, k)
		}
	}
	for _, k := range clean {
		c.sorted.Delete(k)
	}
}

// DeleteRange implements RangeDeleter as a write held like the others: the
// range's cached entries, dirty ones included, are forgotten, and the range
// hides the backend's keys in it until the owner takes it (Drops) or it is
// written back. Nothing is logged: see RangeDeleter.
func (c *Cache) DeleteRange(from, to []byte) error {
	r := KeyRange{From: bytes.Clone(from), To: bytes.Clone(to)}
	if from != nil && to != nil && bytes.Compare(from, to) >= 0 {
		return nil // an empty range
	}
	c.lock()
	defer c.unlock()
	c.forgetHot()
	tree := c.ordered()
	dirty := false
	if k, _, ok := tree.Min(); ok && (from == nil || k >= string(from)) {
		// The range starts at or before the first key (a window store
		// drops its oldest segments): the keys go from the front of the
		// tree, with no key compared on the way down.
		for {
			k, e, ok := tree.Min()
			if !ok || (to != nil && k >= string(to)) {
				break
			}
			tree.DeleteMin()
			delete(c.entries, k)
			dirty = dirty || e.isDirty
		}
	} else {
		lo, hi := cacheBounds(from, to)
		var gone []string
		for k, e := range tree.Ascend(lo, hi) {
			gone = append(gone, k)
			dirty = dirty || e.isDirty
		}
		for _, k := range gone {
			c.remove(k)
		}
	}
	if dirty {
		c.dirty = slices.DeleteFunc(c.dirty, func(k string) bool { return r.Contains([]byte(k)) })
	}
	c.drops = append(c.drops, r)
	return nil
}

// Drops returns the ranges dropped since the last call, in order, and
// forgets them: the owner applies them to the backend (DeleteRanges) before
// the changes Dirty returns, which were all written after the drops of the
// keys they touch. Call it with Dirty.
func (c *Cache) Drops() []KeyRange {
	c.lock()
	defer c.unlock()
	return c.takeDrops()
}

func (c *Cache) takeDrops() []KeyRange {
	d := c.drops
	c.drops = nil
	return d
}

// Dirty returns the dirty entries as changes, in the order they became
// dirty (Value nil for a deletion; Timestamp that of the entry's last
// write), and marks them clean: they stay cached with their values. The
// changes' bytes must not be modified.
func (c *Cache) Dirty() []Change {
	c.lock()
	defer c.unlock()
	return c.takeDirty()
}

func (c *Cache) takeDirty() []Change {
	if len(c.dirty) == 0 {
		return nil
	}
	changes := make([]Change, 0, len(c.dirty))
	for _, k := range c.dirty {
		e, _ := c.find(k)
		e.isDirty = false
		changes = append(changes, Change{Key: []byte(k), Value: e.value(), Timestamp: e.ts})
	}
	c.dirty = c.dirty[:0]
	return changes
}

// Discard forgets every entry, dirty ones included: what they held never
// reaches the backend.
func (c *Cache) Discard() {
	c.lock()
	defer c.unlock()
	c.discard()
}

func (c *Cache) discard() {
	c.removeAll()
	c.dirty = c.dirty[:0]
	c.drops = nil
}

// Range merges the cache over the backend: a cached entry is the key's
// current value, so nothing has to be written back first.
func (c *Cache) Range(from, to []byte) (Iterator, error) {
	c.lock()
	defer c.unlock()
	lo, hi := cacheBounds(from, to)
	// The iterator sees the store as it is now: take the cached values
	// (never modified in place) rather than the live entries, and the
	// drops so far (appended to, never modified: shared, not copied).
	// A closed iterator is kept for the next Range, with its slices (a
	// window store's fetches range once per record).
	m := c.spareIter
	c.spareIter = nil
	if m == nil {
		m = &mergedIter{c: c}
	}
	keys, values := m.keyBuf[:0], m.valueBuf[:0]
	for k, e := range c.ordered().Ascend(lo, hi) {
		keys = append(keys, k)
		values = append(values, e.value())
	}
	it, err := c.b.Range(from, to)
	if err != nil {
		return nil, err
	}
	m.back, m.keys, m.values, m.keyBuf, m.valueBuf = it, keys, values, keys, values
	m.drops, m.mu, m.closed = c.drops[:len(c.drops):len(c.drops)], c.mu, false
	m.nextBack()
	return &cacheIter{m}, nil
}

// cacheIter is what Range returns: the iterator it lends, until Close
// gives it back (so a second Close cannot close the next Range's).
type cacheIter struct{ m *mergedIter }

func (it *cacheIter) Next() bool    { return it.m != nil && it.m.Next() }
func (it *cacheIter) Key() []byte   { return it.m.Key() }
func (it *cacheIter) Value() []byte { return it.m.Value() }

func (it *cacheIter) Err() error {
	if it.m == nil {
		return nil
	}
	return it.m.Err()
}

func (it *cacheIter) Close() error {
	if it.m == nil {
		return nil
	}
	m := it.m
	it.m = nil
	return m.Close()
}

// ApproximateCount is the backend's estimate: cached writes are not counted.
func (c *Cache) ApproximateCount() (int64, error) {
	c.lock()
	defer c.unlock()
	return c.b.ApproximateCount()
}

// Flush writes the drops and the dirty entries back to the backend, then
// flushes it.
func (c *Cache) Flush() error {
	c.lock()
	defer c.unlock()
	if err := DeleteRanges(c.b, c.takeDrops()); err != nil {
		return err
	}
	if err := ApplyChanges(c.b, c.takeDirty()); err != nil {
		return err
	}
	return c.b.Flush()
}

// Close closes the backend; dirty entries are not written.
func (c *Cache) Close() error {
	c.lock()
	defer c.unlock()
	c.discard()
	return c.b.Close()
}

// ApplyChanges writes changes to b in order: as one batch when b is a
// Restorer, one write at a time otherwise.
func ApplyChanges(b Backend, changes []Change) error {
	if len(changes) == 0 {
		return nil
	}
	if r, ok := b.(Restorer); ok {
		return r.ApplyBatch(changes)
	}
	for _, c := range changes {
		var err error
		if c.Value == nil {
			err = b.Delete(c.Key)
		} else {
			err = b.Put(c.Key, c.Value)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// mergedIter walks the backend's iterator and the sorted cached keys
// together; for a key in both, the cache wins, and a cached deletion hides
// the key, as a pending drop hides the backend's keys in its range.
type mergedIter struct {
	back   Iterator
	backOK bool
	drops  []KeyRange
	keys   []string
	values [][]byte
	key    []byte
	value  []byte
	// kbuf and vbuf hold the backend's current key and value: never the
	// buffers of a cached entry that key or value last lent out.
	kbuf, vbuf []byte
	// mu is the shared cache's lock (ShareReads), which Close takes: a
	// backend's iterators are tracked by the store, unguarded.
	mu *sync.Mutex
	// c is the cache, which keeps the iterator once closed (spareIter);
	// keyBuf and valueBuf are the whole slices keys and values walk.
	c        *Cache
	keyBuf   []string
	valueBuf [][]byte
	closed   bool
}

func (m *mergedIter) Next() bool {
	for {
		var fromCache bool
		switch {
		case len(m.keys) == 0 && !m.backOK:
			return false
		case len(m.keys) == 0:
			fromCache = false
		case !m.backOK:
			fromCache = true
		default:
			cmp := bytes.Compare([]byte(m.keys[0]), m.back.Key())
			if cmp == 0 {
				m.nextBack() // shadowed by the cache
			}
			fromCache = cmp <= 0
		}
		if !fromCache {
			m.kbuf = append(m.kbuf[:0], m.back.Key()...)
			m.vbuf = append(m.vbuf[:0], m.back.Value()...)
			m.key, m.value = m.kbuf, m.vbuf
			m.nextBack()
			return true
		}
		k, v := m.keys[0], m.values[0]
		m.keys, m.values = m.keys[1:], m.values[1:]
		if v == nil {
			continue // deleted in the cache, or known absent
		}
		m.key, m.value = []byte(k), v
		return true
	}
}

// nextBack moves the backend's iterator to its next key outside the drops.
func (m *mergedIter) nextBack() {
	for m.backOK = m.back.Next(); m.backOK && len(m.drops) > 0 && inRanges(m.drops, m.back.Key()); {
		m.backOK = m.back.Next()
	}
}

// inRanges says whether key is in any of ranges.
func inRanges(ranges []KeyRange, key []byte) bool {
	for _, r := range ranges {
		if r.Contains(key) {
			return true
		}
	}
	return false
}

func (m *mergedIter) Key() []byte   { return m.key }
func (m *mergedIter) Value() []byte { return m.value }
func (m *mergedIter) Err() error    { return m.back.Err() }
func (m *mergedIter) Close() error {
	if m.closed {
		return nil
	}
	if m.mu != nil {
		m.mu.Lock()
		defer m.mu.Unlock()
	}
	err := m.back.Close()
	m.closed = true
	// Keep no cached value or backend iterator alive while spare.
	clear(m.keyBuf)
	clear(m.valueBuf)
	m.back, m.keys, m.values, m.key, m.value, m.drops = nil, nil, nil, nil, nil, nil
	if m.c.spareIter == nil {
		m.c.spareIter = m
	}
	return err
}
