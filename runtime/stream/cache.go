package stream

import (
	"github.com/kgen-dev/kgen/runtime/state"
)

// cachedBackend sits between a typed store and its backend: reads of cached
// keys and repeated writes of the same key stay in memory, and only the last
// value of each dirty key reaches the backend and the changelog, when the
// task commits or the cache fills. It turns a store's per-record cost on hot
// keys into a map operation, as Kafka Streams' record cache does.
type cachedBackend struct {
	b       state.Backend
	logger  state.ChangeLogger // nil when not logged
	entries map[string]*cacheEntry
	dirty   []string // keys in the order they became dirty
	limit   int
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
		return c.evict()
	}
	return nil
}

// flushDirty writes every dirty entry to the backend and the changelog.
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
	if err := applyChanges(c.b, changes); err != nil {
		return err
	}
	if c.logger != nil {
		for _, ch := range changes {
			c.logger.LogChange(ch.Key, ch.Value)
		}
	}
	return nil
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

// Range flushes first, so the backend's ordered iteration sees every write.
func (c *cachedBackend) Range(from, to []byte) (state.Iterator, error) {
	if err := c.flushDirty(); err != nil {
		return nil, err
	}
	return c.b.Range(from, to)
}

func (c *cachedBackend) ApproximateCount() (int64, error) {
	if err := c.flushDirty(); err != nil {
		return 0, err
	}
	return c.b.ApproximateCount()
}

func (c *cachedBackend) Flush() error {
	if err := c.flushDirty(); err != nil {
		return err
	}
	return c.b.Flush()
}

func (c *cachedBackend) Close() error { return c.b.Close() }
