package dsl

import (
	"bytes"
	"fmt"

	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// Table reads topic as a table: a record upserts its key, a null value (a
// tombstone) deletes it, and a record with a null key is dropped (counted
// as stream.DropNullKey), as Kafka Streams' table sources do. The rows live in store (Timestamped values, so set
// opts.Changelog unless the topic itself is to be replayed). It adds a
// source node name+"-source" and the table node name, which forwards every
// update as a Change, with the record's timestamp, a tombstone for a key
// that has no row too (as Kafka Streams' table sources do).
func Table[K, V any](t *stream.Topology, name, topic string, ks serde.Serde[K], vs serde.Serde[V], store string, opts stream.StoreOptions) {
	source := name + "-source"
	stream.AddSource(t, source, topic, serde.Deserializer[K](ks), Nullable(vs))
	stream.AddProcessor(t, name, func() stream.Processor[K, *V, K, Change[V]] {
		return &tableSource[K, V]{storeName: store, keyNil: nilTest[K]()}
	}, source)
	stream.AddKeyValueStore(t, store, ks, Timestamped(vs), opts, name)
}

type tableSource[K, V any] struct {
	storeName string
	store     state.KeyValueStore[K, ValueAndTimestamp[V]]
	keyNil    func(K) bool // nil for a key type that cannot be nil
}

func (s *tableSource[K, V]) Init(ctx *stream.Context[K, Change[V]]) (err error) {
	s.store, err = stream.GetKeyValueStore[K, ValueAndTimestamp[V]](ctx, s.storeName)
	return err
}

func (s *tableSource[K, V]) Process(ctx *stream.Context[K, Change[V]], r stream.Record[K, *V]) error {
	if s.keyNil != nil && s.keyNil(r.Key) {
		ctx.RecordDropped(stream.DropNullKey)
		return nil
	}
	old, found, err := s.store.Get(r.Key)
	if err != nil {
		return err
	}
	if r.Value == nil {
		err = s.store.Delete(r.Key)
	} else {
		err = s.store.Put(r.Key, ValueAndTimestamp[V]{Value: *r.Value, Timestamp: r.Timestamp})
	}
	if err != nil {
		return err
	}
	ch := Change[V]{New: r.Value}
	if found {
		ch.Old = &old.Value
	}
	ctx.Forward(stream.Record[K, Change[V]]{Key: r.Key, Value: ch, Timestamp: r.Timestamp, Headers: r.Headers})
	return nil
}

// ToStream turns table updates into a stream of the rows' new values: nil
// for a deletion. Write it with a sink whose value serde is Nullable, and a
// deletion becomes a tombstone.
func ToStream[K, V any](t *stream.Topology, name string, parents ...string) {
	add(t, name, func(ctx *stream.Context[K, *V], r stream.Record[K, Change[V]]) {
		ctx.Forward(stream.Record[K, *V]{Key: r.Key, Value: r.Value.New, Timestamp: r.Timestamp, Headers: r.Headers})
	}, parents)
}

// TableGroupBy is Kafka Streams' KTable.groupBy: it maps a row's old and new
// values to (group key, value) and forwards what the aggregation after it
// must subtract and add. When both map to the same group key (ks decides,
// by bytes) one record carries both halves, so the subtraction and the
// addition land together; otherwise the subtraction (old group key, Old
// only) goes first and then the addition (new group key, New only). A half
// whose group key or value is nil (types that can be nil) is left out, as
// Kafka Streams leaves out a null; a record left with no half is counted
// as dropped (stream.DropNullKey, or DropNullValue).
// Follow it with stream.AddRepartition(t, step, ks, Changes(vs), ...) and a
// TableCount, TableReduce or TableAggregate.
func TableGroupBy[K, V, KR, VR any](t *stream.Topology, name string, ks serde.Serializer[KR], fn func(K, V) (KR, VR), parents ...string) {
	keyNil, valNil := nilTest[KR](), nilTest[VR]()
	// null says why a selected pair cannot be forwarded, or "".
	null := func(k KR, v VR) stream.DropReason {
		switch {
		case keyNil != nil && keyNil(k):
			return stream.DropNullKey
		case valNil != nil && valNil(v):
			return stream.DropNullValue
		}
		return ""
	}
	stream.AddProcessor(t, name, func() stream.Processor[K, Change[V], KR, Change[VR]] {
		return stream.ProcessorFunc[K, Change[V], KR, Change[VR]](func(ctx *stream.Context[KR, Change[VR]], r stream.Record[K, Change[V]]) error {
			out := func(k KR, ch Change[VR]) {
				ctx.Forward(stream.Record[KR, Change[VR]]{Key: k, Value: ch, Timestamp: r.Timestamp, Headers: r.Headers})
			}
			var oldKey, newKey KR
			var oldVal, newVal VR
			hasOld, hasNew := r.Value.Old != nil, r.Value.New != nil
			var dropped stream.DropReason
			if hasOld {
				oldKey, oldVal = fn(r.Key, *r.Value.Old)
				if why := null(oldKey, oldVal); why != "" {
					hasOld, dropped = false, why
				}
			}
			if hasNew {
				newKey, newVal = fn(r.Key, *r.Value.New)
				if why := null(newKey, newVal); why != "" {
					hasNew, dropped = false, why
				}
			}
			if hasOld && hasNew {
				same, err := sameKey(ks, oldKey, newKey)
				if err != nil {
					return err
				}
				if same {
					out(newKey, Change[VR]{Old: &oldVal, New: &newVal})
					return nil
				}
			}
			if hasOld {
				out(oldKey, Change[VR]{Old: &oldVal})
			}
			if hasNew {
				out(newKey, Change[VR]{New: &newVal})
			}
			if !hasOld && !hasNew && dropped != "" {
				ctx.RecordDropped(dropped)
			}
			return nil
		})
	}, parents...)
}

func sameKey[K any](ks serde.Serializer[K], a, b K) (bool, error) {
	ab, err := ks.Serialize(a)
	if err != nil {
		return false, fmt.Errorf("group key: %w", err)
	}
	bb, err := ks.Serialize(b)
	if err != nil {
		return false, fmt.Errorf("group key: %w", err)
	}
	return bytes.Equal(ab, bb), nil
}

// TableCount counts the rows of each group.
func TableCount[K, V any](t *stream.Topology, name, store string, ks serde.Serde[K], opts stream.StoreOptions, parents ...string) {
	TableAggregate(t, name, store, ks, serde.Serde[int64](serde.Int64{}), opts, func() int64 { return 0 },
		func(_ K, _ V, n int64) int64 { return n + 1 }, func(_ K, _ V, n int64) int64 { return n - 1 }, parents...)
}

// TableReduce combines the rows of each group: adder folds a row in,
// subtractor takes a row's old value out. A group's first row is its
// aggregate.
func TableReduce[K, V any](t *stream.Topology, name, store string, ks serde.Serde[K], vs serde.Serde[V], opts stream.StoreOptions, adder, subtractor func(agg, value V) V, parents ...string) {
	addTableAggregation(t, name, store, ks, vs, opts, func(_ K, v V) V { return v },
		func(_ K, v, agg V) V { return adder(agg, v) }, func(_ K, v, agg V) V { return subtractor(agg, v) }, parents)
}

// TableAggregate folds the rows of each group into an aggregate of type VA:
// adder folds a row in (starting from init() for a new group), subtractor
// takes a row's old value out.
func TableAggregate[K, V, VA any](t *stream.Topology, name, store string, ks serde.Serde[K], vas serde.Serde[VA], opts stream.StoreOptions, init func() VA, adder, subtractor func(key K, value V, agg VA) VA, parents ...string) {
	addTableAggregation(t, name, store, ks, vas, opts, func(k K, v V) VA { return adder(k, v, init()) }, adder, subtractor, parents)
}

// addTableAggregation adds Kafka Streams' KTable aggregation: the old value
// is subtracted if the group has an aggregate, then the new value added, or
// made the group's first aggregate by start when there is none.
func addTableAggregation[K, V, VA any](t *stream.Topology, name, store string, ks serde.Serde[K], vas serde.Serde[VA], opts stream.StoreOptions, start func(K, V) VA, adder, subtractor func(K, V, VA) VA, parents []string) {
	stream.AddProcessor(t, name, func() stream.Processor[K, Change[V], K, Change[VA]] {
		return &tableAggregation[K, V, VA]{storeName: store, start: start, adder: adder, subtractor: subtractor, aggNil: nilTest[VA]()}
	}, parents...)
	stream.AddKeyValueStore(t, store, ks, Timestamped(vas), opts, name)
}

type tableAggregation[K, V, VA any] struct {
	storeName         string
	store             state.KeyValueStore[K, ValueAndTimestamp[VA]]
	start             func(K, V) VA
	adder, subtractor func(K, V, VA) VA
	// aggNil tells a nil aggregate (of a type that can be nil): as Kafka
	// Streams' null, it is no aggregate, so a subtraction that leaves nil
	// makes the addition start afresh, and a nil at the end deletes the group.
	aggNil func(VA) bool
}

func (a *tableAggregation[K, V, VA]) Init(ctx *stream.Context[K, Change[VA]]) (err error) {
	a.store, err = stream.GetKeyValueStore[K, ValueAndTimestamp[VA]](ctx, a.storeName)
	return err
}

func (a *tableAggregation[K, V, VA]) Process(ctx *stream.Context[K, Change[VA]], r stream.Record[K, Change[V]]) error {
	old, found, err := a.store.Get(r.Key)
	if err != nil {
		return err
	}
	agg, has := old.Value, found
	if r.Value.Old != nil && has {
		agg = a.subtractor(r.Key, *r.Value.Old, agg)
		has = a.aggNil == nil || !a.aggNil(agg)
	}
	if r.Value.New != nil {
		if has {
			agg = a.adder(r.Key, *r.Value.New, agg)
		} else {
			agg = a.start(r.Key, *r.Value.New)
		}
		has = a.aggNil == nil || !a.aggNil(agg)
	}
	return writeAggregate(ctx, a.store, r, old, found, agg, has)
}
