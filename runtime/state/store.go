package state

import (
	"fmt"

	"github.com/kgen-dev/kgen/runtime/serde"
)

// KeyValueStore is a typed key-value store of one task. Keys are ordered by
// their serialized bytes, which for serde.Int64 and serde.Int32 (big-endian
// two's complement) puts negative keys after positive ones.
type KeyValueStore[K, V any] interface {
	// Name is the store's name, as in the topology.
	Name() string
	// Get returns the value of key; a missing key is (zero, false, nil).
	Get(key K) (V, bool, error)
	// Put stores value under key. A value that serializes to nil (a null,
	// such as a nil slice with serde.Bytes) deletes the key, as a tombstone
	// in the changelog would.
	Put(key K, value V) error
	// PutIfAbsent stores value unless the key exists; it returns the existing value and true when it did not store.
	PutIfAbsent(key K, value V) (V, bool, error)
	// Delete removes key; deleting a missing key is not an error.
	Delete(key K) error
	// Range iterates the keys in [from, to) in serialized-key byte order.
	Range(from, to K) (KeyValueIterator[K, V], error)
	// All iterates every key in serialized-key byte order.
	All() (KeyValueIterator[K, V], error)
	// ApproximateCount estimates the number of keys (see Backend).
	ApproximateCount() (int64, error)
}

// KeyValueIterator walks a KeyValueStore in key order. Call Next before the
// first Key. Key and Value are decoded at each step and are the caller's to
// keep. After Next returns false, Err tells whether decoding or the backend
// failed. Close must be called.
type KeyValueIterator[K, V any] interface {
	Next() bool
	Key() K
	Value() V
	Err() error
	Close() error
}

// NewKeyValueStore types a backend with serdes; logger may be nil (not logged).
// When logger is not nil, every Put, successful PutIfAbsent and Delete is
// passed to it, after the backend write succeeded, as the serialized key and
// value (nil for a delete), with the logger's RecordTime as its timestamp.
// Its kind is KeyValue.
func NewKeyValueStore[K, V any](name string, b Backend, ks serde.Serde[K], vs serde.Serde[V], logger ChangeLogger) KeyValueStore[K, V] {
	return &kvStore[K, V]{
		name:   name,
		b:      b,
		ks:     ks,
		vs:     vs,
		logger: logger,
		// Deserializers other than these may keep the bytes they are given
		// (serde.Bytes does): iterators hand them a copy, since backend
		// iterator bytes change at the next step.
		copyIterBytes: !decodesToCopy(ks) || !decodesToCopy(vs),
		viewValues:    decodesToCopy(vs),
		// The same serdes serialize into a new slice, which the store can
		// hand over instead of having it copied again.
		ownValues: decodesToCopy(vs),
	}
}

// owner is a backend that can take a value the caller gives up, without the
// copy Put makes.
type owner interface {
	putOwned(key, value []byte) error
}

// viewer is a backend that can lend a value without copying it: the bytes
// stay valid and unchanged, and must not be modified. A typed store whose
// value serde never keeps the bytes it decodes reads through it.
type viewer interface {
	view(key []byte) ([]byte, bool, error)
}

// decodesToCopy tells whether s is one of the serdes known never to keep the
// bytes it decodes.
func decodesToCopy(s any) bool {
	switch s.(type) {
	case serde.String, serde.Int32, serde.Int64, serde.Float64,
		*serde.String, *serde.Int32, *serde.Int64, *serde.Float64:
		return true
	}
	return false
}

type kvStore[K, V any] struct {
	name          string
	b             Backend
	ks            serde.Serde[K]
	vs            serde.Serde[V]
	logger        ChangeLogger
	copyIterBytes bool
	viewValues    bool
	ownValues     bool
}

func (s *kvStore[K, V]) Name() string { return s.name }

func (s *kvStore[K, V]) errorf(op string, err error) error {
	return fmt.Errorf("store %q: %s: %w", s.name, op, err)
}

func (s *kvStore[K, V]) key(op string, key K) ([]byte, error) {
	kb, err := s.ks.Serialize(key)
	if err != nil {
		return nil, s.errorf(op, fmt.Errorf("serialize key: %w", err))
	}
	return kb, nil
}

func (s *kvStore[K, V]) Get(key K) (V, bool, error) {
	var zero V
	kb, err := s.key("get", key)
	if err != nil {
		return zero, false, err
	}
	var vb []byte
	var ok bool
	if v, can := s.b.(viewer); can && s.viewValues {
		vb, ok, err = v.view(kb)
	} else {
		vb, ok, err = s.b.Get(kb)
	}
	if err != nil {
		return zero, false, s.errorf("get", err)
	}
	if !ok {
		return zero, false, nil
	}
	v, err := s.vs.Deserialize(vb)
	if err != nil {
		return zero, false, s.errorf("get", fmt.Errorf("deserialize value: %w", err))
	}
	return v, true, nil
}

func (s *kvStore[K, V]) Put(key K, value V) error {
	kb, err := s.key("put", key)
	if err != nil {
		return err
	}
	return s.put(kb, value)
}

// put writes value under the serialized key kb, and logs it.
func (s *kvStore[K, V]) put(kb []byte, value V) error {
	vb, err := s.vs.Serialize(value)
	if err != nil {
		return s.errorf("put", fmt.Errorf("serialize value: %w", err))
	}
	if vb == nil {
		return s.delete(kb)
	}
	if o, ok := s.b.(owner); ok && s.ownValues {
		err = o.putOwned(kb, vb)
	} else {
		err = s.b.Put(kb, vb)
	}
	if err != nil {
		return s.errorf("put", err)
	}
	if s.logger != nil {
		s.logger.LogChange(kb, vb, s.logger.RecordTime())
	}
	return nil
}

func (s *kvStore[K, V]) PutIfAbsent(key K, value V) (V, bool, error) {
	var zero V
	kb, err := s.key("put if absent", key)
	if err != nil {
		return zero, false, err
	}
	old, ok, err := s.b.Get(kb)
	if err != nil {
		return zero, false, s.errorf("put if absent", err)
	}
	if ok {
		v, err := s.vs.Deserialize(old)
		if err != nil {
			return zero, false, s.errorf("put if absent", fmt.Errorf("deserialize value: %w", err))
		}
		return v, true, nil
	}
	return zero, false, s.put(kb, value)
}

func (s *kvStore[K, V]) Delete(key K) error {
	kb, err := s.key("delete", key)
	if err != nil {
		return err
	}
	return s.delete(kb)
}

func (s *kvStore[K, V]) delete(kb []byte) error {
	if err := s.b.Delete(kb); err != nil {
		return s.errorf("delete", err)
	}
	if s.logger != nil {
		s.logger.LogChange(kb, nil, s.logger.RecordTime())
	}
	return nil
}

func (s *kvStore[K, V]) Range(from, to K) (KeyValueIterator[K, V], error) {
	fb, err := s.key("range", from)
	if err != nil {
		return nil, err
	}
	tb, err := s.key("range", to)
	if err != nil {
		return nil, err
	}
	// A nil bound means unbounded to the backend; a null key is the empty key here.
	if fb == nil {
		fb = []byte{}
	}
	if tb == nil {
		tb = []byte{}
	}
	return s.iter(fb, tb)
}

func (s *kvStore[K, V]) All() (KeyValueIterator[K, V], error) {
	return s.iter(nil, nil)
}

func (s *kvStore[K, V]) iter(from, to []byte) (KeyValueIterator[K, V], error) {
	it, err := s.b.Range(from, to)
	if err != nil {
		return nil, s.errorf("range", err)
	}
	return &kvIter[K, V]{s: s, it: it}, nil
}

func (s *kvStore[K, V]) ApproximateCount() (int64, error) {
	n, err := s.b.ApproximateCount()
	if err != nil {
		return 0, s.errorf("count", err)
	}
	return n, nil
}

type kvIter[K, V any] struct {
	s   *kvStore[K, V]
	it  Iterator
	k   K
	v   V
	err error
}

func (it *kvIter[K, V]) Next() bool {
	var zk K
	var zv V
	it.k, it.v = zk, zv
	if it.err != nil || !it.it.Next() {
		return false
	}
	kb, vb := it.it.Key(), it.it.Value()
	if it.s.copyIterBytes {
		kb = append(make([]byte, 0, len(kb)), kb...)
		vb = append(make([]byte, 0, len(vb)), vb...)
	}
	k, err := it.s.ks.Deserialize(kb)
	if err != nil {
		it.err = it.s.errorf("iterate", fmt.Errorf("deserialize key: %w", err))
		return false
	}
	v, err := it.s.vs.Deserialize(vb)
	if err != nil {
		it.err = it.s.errorf("iterate", fmt.Errorf("deserialize value: %w", err))
		return false
	}
	it.k, it.v = k, v
	return true
}

func (it *kvIter[K, V]) Key() K   { return it.k }
func (it *kvIter[K, V]) Value() V { return it.v }

func (it *kvIter[K, V]) Err() error {
	if it.err != nil {
		return it.err
	}
	if err := it.it.Err(); err != nil {
		return it.s.errorf("iterate", err)
	}
	return nil
}

func (it *kvIter[K, V]) Close() error {
	if err := it.it.Close(); err != nil {
		return it.s.errorf("close iterator", err)
	}
	return nil
}
