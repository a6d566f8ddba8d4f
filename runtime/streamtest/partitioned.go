package streamtest

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// KeyValueStoreFor returns a store for inspection (and for seeding state)
// over every partition's copy: with several partitions each task has its
// own, and a key's state lives in the task of the key's partition (murmur2
// of its serialized key, as the sinks choose). Get and Put go there (Get
// looks in the others too, for a store keyed otherwise than its records),
// Range and All merge the copies in key order.
func KeyValueStoreFor[K, V any](d *Driver, name string, ks serde.Serializer[K]) (state.KeyValueStore[K, V], error) {
	n := d.d.StorePartitions(name)
	if n == 0 {
		return nil, fmt.Errorf("no store %q", name)
	}
	if n == 1 {
		return KeyValueStoreAt[K, V](d, name, 0)
	}
	ps := &partitionedStore[K, V]{name: name, ks: ks}
	for p := range n {
		s, err := KeyValueStoreAt[K, V](d, name, p)
		if err != nil {
			return nil, err
		}
		ps.parts = append(ps.parts, s)
	}
	return ps, nil
}

type partitionedStore[K, V any] struct {
	name  string
	ks    serde.Serializer[K]
	parts []state.KeyValueStore[K, V]
}

func (s *partitionedStore[K, V]) Name() string { return s.name }

// home is the partition of key.
func (s *partitionedStore[K, V]) home(key K) (int, error) {
	kb, err := s.ks.Serialize(key)
	if err != nil {
		return 0, fmt.Errorf("store %q: serialize key: %w", s.name, err)
	}
	if kb == nil {
		return 0, nil
	}
	return int(stream.KafkaPartition(kb, int32(len(s.parts)))), nil
}

// where is the partition holding key, or its home when none does.
func (s *partitionedStore[K, V]) where(key K) (int, error) {
	h, err := s.home(key)
	if err != nil {
		return 0, err
	}
	if _, ok, err := s.parts[h].Get(key); ok || err != nil {
		return h, err
	}
	for p, st := range s.parts {
		if _, ok, err := st.Get(key); ok || err != nil {
			return p, err
		}
	}
	return h, nil
}

func (s *partitionedStore[K, V]) Get(key K) (V, bool, error) {
	p, err := s.where(key)
	if err != nil {
		var zero V
		return zero, false, err
	}
	return s.parts[p].Get(key)
}

func (s *partitionedStore[K, V]) Put(key K, value V) error {
	p, err := s.where(key)
	if err != nil {
		return err
	}
	return s.parts[p].Put(key, value)
}

func (s *partitionedStore[K, V]) PutIfAbsent(key K, value V) (V, bool, error) {
	p, err := s.where(key)
	if err != nil {
		var zero V
		return zero, false, err
	}
	return s.parts[p].PutIfAbsent(key, value)
}

func (s *partitionedStore[K, V]) Delete(key K) error {
	p, err := s.where(key)
	if err != nil {
		return err
	}
	return s.parts[p].Delete(key)
}

func (s *partitionedStore[K, V]) Range(from, to K) (state.KeyValueIterator[K, V], error) {
	return s.merge(func(st state.KeyValueStore[K, V]) (state.KeyValueIterator[K, V], error) { return st.Range(from, to) })
}

func (s *partitionedStore[K, V]) All() (state.KeyValueIterator[K, V], error) {
	return s.merge(func(st state.KeyValueStore[K, V]) (state.KeyValueIterator[K, V], error) { return st.All() })
}

func (s *partitionedStore[K, V]) ApproximateCount() (int64, error) {
	var n int64
	for _, st := range s.parts {
		c, err := st.ApproximateCount()
		if err != nil {
			return 0, err
		}
		n += c
	}
	return n, nil
}

// merge reads every partition's iterator and orders the entries by their
// serialized keys, as one store would.
func (s *partitionedStore[K, V]) merge(open func(state.KeyValueStore[K, V]) (state.KeyValueIterator[K, V], error)) (state.KeyValueIterator[K, V], error) {
	var all []entry[K, V]
	for _, st := range s.parts {
		it, err := open(st)
		if err != nil {
			return nil, err
		}
		for it.Next() {
			kb, err := s.ks.Serialize(it.Key())
			if err != nil {
				it.Close()
				return nil, fmt.Errorf("store %q: serialize key: %w", s.name, err)
			}
			all = append(all, entry[K, V]{kb: kb, k: it.Key(), v: it.Value()})
		}
		err = it.Err()
		if cerr := it.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
	}
	slices.SortFunc(all, func(a, b entry[K, V]) int { return bytes.Compare(a.kb, b.kb) })
	return &entries[K, V]{all: all, i: -1}, nil
}

type entry[K, V any] struct {
	kb []byte
	k  K
	v  V
}

type entries[K, V any] struct {
	all []entry[K, V]
	i   int
}

func (e *entries[K, V]) Next() bool   { e.i++; return e.i < len(e.all) }
func (e *entries[K, V]) Key() K       { return e.all[e.i].k }
func (e *entries[K, V]) Value() V     { return e.all[e.i].v }
func (e *entries[K, V]) Err() error   { return nil }
func (e *entries[K, V]) Close() error { return nil }
