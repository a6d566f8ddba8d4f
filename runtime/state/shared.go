package state

import "sync"

// ShareReads returns b made safe for readers on other goroutines (an
// interactive query) while one goroutine, its owner, reads and writes it
// through what ShareReads returns: as Cache.ShareReads, each operation
// holds a mutex for its own length (a Range opens an iterator, which a
// memory store makes by cloning its tree and a Pebble store tracks). Iterators read outside the lock, on
// the snapshot the backend's iterators read, and take it to close. It is
// for a store written without a record cache; Cache.ShareReads does the
// same for one with.
func ShareReads(b Backend) Backend {
	return &shared{b: b}
}

// ConcurrentGetter is a Backend whose reads of one key are safe while
// another goroutine writes it (Pebble's are), which a shared cache then
// reads outside its lock (Cache.Peek). The store must stay open meanwhile:
// the runtime closes stores only under its query lock, which a query holds.
type ConcurrentGetter interface {
	// ConcurrentGet is Get, safe during the owner's writes.
	ConcurrentGet(key []byte) ([]byte, bool, error)
}

// shared is the Backend ShareReads returns. It lends values without a copy
// (viewer) and takes them without one (owner) where b does, and drops
// ranges as b does (RangeDeleter, or one key at a time).
type shared struct {
	mu sync.Mutex
	b  Backend
}

var (
	_ Restorer     = (*shared)(nil)
	_ RangeDeleter = (*shared)(nil)
	_ viewer       = (*shared)(nil)
	_ owner        = (*shared)(nil)
)

func (s *shared) Get(key []byte) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Get(key)
}

// view lends the stored bytes where b can, which are never modified once
// written: the value stays right after the lock is released.
func (s *shared) view(key []byte) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.b.(viewer); ok {
		return v.view(key)
	}
	return s.b.Get(key)
}

func (s *shared) Put(key, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Put(key, value)
}

func (s *shared) putOwned(key, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o, ok := s.b.(owner); ok {
		return o.putOwned(key, value)
	}
	return s.b.Put(key, value)
}

func (s *shared) Delete(key []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Delete(key)
}

func (s *shared) DeleteRange(from, to []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return DeleteRanges(s.b, []KeyRange{{From: from, To: to}})
}

func (s *shared) ApplyBatch(changes []Change) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ApplyChanges(s.b, changes)
}

func (s *shared) Range(from, to []byte) (Iterator, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it, err := s.b.Range(from, to)
	if err != nil {
		return nil, err
	}
	return &sharedIter{Iterator: it, mu: &s.mu}, nil
}

func (s *shared) ApproximateCount() (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.ApproximateCount()
}

func (s *shared) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Flush()
}

func (s *shared) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Close()
}

// sharedIter closes its iterator under the lock: the backend keeps track
// of its open iterators unguarded.
type sharedIter struct {
	Iterator
	mu *sync.Mutex
}

func (it *sharedIter) Close() error {
	it.mu.Lock()
	defer it.mu.Unlock()
	return it.Iterator.Close()
}
