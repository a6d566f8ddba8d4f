package stream

import (
	"bytes"
	"slices"

	"github.com/kgen-dev/kgen/runtime/state"
)

// cachedBackend sits between a typed store and its backend: reads of cached
// keys and repeated writes of the same key stay in memory, and only the last
// value of each dirty key reaches the backend and the changelog, when the
// task commits or the cache fills. It turns a store's per-record cost on hot
// keys into a map operation, as Kafka Streams' record cache does.
//
// Under exactly-once the cache also keeps local state from getting ahead of
// Kafka: a commit logs the dirty entries inside the transaction and holds
// them as pending; they reach the backend only after the transaction has
// committed (applyPending), and an abort throws them away with the task. So
// the backend only ever holds committed data and needs no wipe after a crash.
type cachedBackend struct {
	b       state.Backend
	logger  state.ChangeLogger // nil when not logged
	entries map[string]*cacheEntry
	dirty   []string // keys in the order they became dirty
	limit   int

	eos     bool
	pending []state.Change // logged in the open transaction, not yet applied
	onFull  func()         // under exactly-once: ask for a commit instead of evicting
}

type cacheEntry struct {
	value   []byte // nil: deleted
	isDirty bool
}

func newCachedBackend(b state.Backend, logger state.ChangeLogger, limit int) *cachedBackend {
	return &cachedBackend{b: b, logger: logger, entries: make(map[string]*cacheEntry, limit), limit: limit}
}

func (c *cachedBackend) Get(key []byte) ([]byte, bool, error) {
	if e, ok := c.entries[string(key)]; ok {
		return e.value, e.value != nil, nil
	}
	v, ok, err := c.b.Get(key)
	if err != nil {
		return nil, false, err
	}
	if len(c.entries) < c.limit {
		c.entries[string(key)] = &cacheEntry{value: v}
	}
	return v, ok, nil
}

func (c *cachedBackend) Put(key, value []byte) error { return c.write(key, value) }

func (c *cachedBackend) Delete(key []byte) error { return c.write(key, nil) }

func (c *cachedBackend) write(key, value []byte) error {
	if e, ok := c.entries[string(key)]; ok {
		e.value = value
		if !e.isDirty {
			e.isDirty = true
			c.dirty = append(c.dirty, string(key))
		}
	} else {
		k := string(key)
		c.entries[k] = &cacheEntry{value: value, isDirty: true}
		c.dirty = append(c.dirty, k)
	}
	if len(c.entries) > c.limit {
		if c.eos {
			// Nothing may reach the backend before the commit: commit soon.
			c.onFull()
			return nil
		}
		return c.evict()
	}
	return nil
}

// flushDirty logs every dirty entry and writes it to the backend, or under
// exactly-once keeps it pending until the transaction commits.
func (c *cachedBackend) flushDirty() error {
	if len(c.dirty) == 0 {
		return nil
	}
	changes := make([]state.Change, 0, len(c.dirty))
	for _, k := range c.dirty {
		e := c.entries[k]
		e.isDirty = false
		changes = append(changes, state.Change{Key: []byte(k), Value: e.value})
	}
	c.dirty = c.dirty[:0]
	if c.eos {
		c.pending = append(c.pending, changes...)
	} else if err := applyChanges(c.b, changes); err != nil {
		return err
	}
	if c.logger != nil {
		for _, ch := range changes {
			c.logger.LogChange(ch.Key, ch.Value)
		}
	}
	return nil
}

// applyPending writes what a committed transaction logged to the backend.
func (c *cachedBackend) applyPending() error {
	if len(c.pending) == 0 {
		return nil
	}
	err := applyChanges(c.b, c.pending)
	c.pending = nil
	if err == nil && len(c.entries) > c.limit && len(c.dirty) == 0 {
		clear(c.entries)
	}
	return err
}

// evict flushes and forgets everything: simple, and rare when the limit
// fits the hot keys.
func (c *cachedBackend) evict() error {
	if err := c.flushDirty(); err != nil {
		return err
	}
	clear(c.entries)
	return nil
}

// Range merges the cache over the backend: a cached entry (dirty, pending or
// clean) is the key's current value, so nothing has to be flushed first.
func (c *cachedBackend) Range(from, to []byte) (state.Iterator, error) {
	var keys []string
	for k := range c.entries {
		if (from == nil || k >= string(from)) && (to == nil || k < string(to)) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	it, err := c.b.Range(from, to)
	if err != nil {
		return nil, err
	}
	m := &mergedIter{back: it, keys: keys, cache: c.entries}
	m.backOK = it.Next()
	return m, nil
}

func (c *cachedBackend) ApproximateCount() (int64, error) { return c.b.ApproximateCount() }

// Flush makes the cache's writes durable; under exactly-once the commit
// path calls flushDirty and applyPending itself, around the transaction.
func (c *cachedBackend) Flush() error {
	if !c.eos {
		if err := c.flushDirty(); err != nil {
			return err
		}
	}
	return c.b.Flush()
}

func (c *cachedBackend) Close() error { return c.b.Close() }

// mergedIter walks the backend's iterator and the sorted cached keys
// together; for a key in both, the cache wins, and a cached deletion hides
// the key.
type mergedIter struct {
	back   state.Iterator
	backOK bool
	keys   []string
	cache  map[string]*cacheEntry
	key    []byte
	value  []byte
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
				m.backOK = m.back.Next() // shadowed by the cache
			}
			fromCache = cmp <= 0
		}
		if !fromCache {
			m.key = append(m.key[:0], m.back.Key()...)
			m.value = append(m.value[:0], m.back.Value()...)
			m.backOK = m.back.Next()
			return true
		}
		k := m.keys[0]
		m.keys = m.keys[1:]
		e := m.cache[k]
		if e == nil || e.value == nil {
			continue // deleted in the cache
		}
		m.key, m.value = []byte(k), e.value
		return true
	}
}

func (m *mergedIter) Key() []byte   { return m.key }
func (m *mergedIter) Value() []byte { return m.value }
func (m *mergedIter) Err() error    { return m.back.Err() }
func (m *mergedIter) Close() error  { return m.back.Close() }
