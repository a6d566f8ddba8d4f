package dsl

import (
	"reflect"
	"time"
	"unsafe"

	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// Aggregations of a grouped stream. The records of one key must meet in one
// task: where the key may have changed upstream, put a stream.AddRepartition
// in between (the generator does). Each aggregation registers its store,
// keeps a timestamped value per key, and forwards every update as a
// Change, timestamped with the later of the record's time and the previous
// aggregate's. A record whose key is nil (a key type that can be nil) or
// whose value is nil (a tombstone read with Nullable, or a nil slice or
// map) is dropped, as Kafka Streams drops a null key or value: it neither
// changes the aggregate nor emits, and is counted as stream.DropNullKey or
// stream.DropNullValue (a key or value type that cannot be nil never gets
// here with a null: the source drops it). An aggregator or reducer
// that returns nil (an aggregate type that can be nil) deletes the key's
// aggregate, as Kafka Streams' null does: the update's New is nil (a
// tombstone after ToStream), and the key's next record starts afresh.

// Count counts the records of each key.
func Count[K, V any](t *stream.Topology, name, store string, ks serde.Serde[K], opts stream.StoreOptions, parents ...string) {
	Aggregate(t, name, store, ks, serde.Serde[int64](serde.Int64{}), opts,
		func() int64 { return 0 }, func(_ K, _ V, n int64) int64 { return n + 1 }, parents...)
}

// Reduce combines the values of each key: the first value is the
// aggregate, and each later one is combined into it with reducer.
func Reduce[K, V any](t *stream.Topology, name, store string, ks serde.Serde[K], vs serde.Serde[V], opts stream.StoreOptions, reducer func(agg, value V) V, parents ...string) {
	addAggregation(t, name, store, ks, vs, opts, func(_ K, v V, agg V, found bool) V {
		if !found {
			return v
		}
		return reducer(agg, v)
	}, parents)
}

// Aggregate folds the values of each key into an aggregate of type VA,
// starting from init() for a key seen for the first time.
func Aggregate[K, V, VA any](t *stream.Topology, name, store string, ks serde.Serde[K], vas serde.Serde[VA], opts stream.StoreOptions, init func() VA, agg func(key K, value V, agg VA) VA, parents ...string) {
	addAggregation(t, name, store, ks, vas, opts, func(k K, v V, a VA, found bool) VA {
		if !found {
			a = init()
		}
		return agg(k, v, a)
	}, parents)
}

func addAggregation[K, V, VA any](t *stream.Topology, name, store string, ks serde.Serde[K], vas serde.Serde[VA], opts stream.StoreOptions, step func(K, V, VA, bool) VA, parents []string) {
	stream.AddProcessor(t, name, func() stream.Processor[K, V, K, Change[VA]] {
		return &aggregation[K, V, VA]{storeName: store, step: step, keyNil: nilTest[K](), isNil: nilTest[V](), aggNil: nilTest[VA]()}
	}, parents...)
	stream.AddKeyValueStore(t, store, ks, Timestamped(vas), opts, name)
}

type aggregation[K, V, VA any] struct {
	storeName string
	store     state.KeyValueStore[K, ValueAndTimestamp[VA]]
	step      func(K, V, VA, bool) VA
	keyNil    func(K) bool // nil for a type whose values are never nil
	isNil     func(V) bool
	aggNil    func(VA) bool
}

// nilTest returns a test for nil values of a type that has them (pointers,
// slices, maps, interfaces, funcs, channels), else nil. The kind is looked
// up once; the test itself reads the value's first word, which for each of
// these kinds is nil exactly when the value is (a slice's data pointer, an
// interface's type word), so the hot path has no reflection.
func nilTest[V any]() func(V) bool {
	switch reflect.TypeFor[V]().Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface, reflect.Func, reflect.Chan, reflect.UnsafePointer:
		return func(v V) bool { return *(*unsafe.Pointer)(unsafe.Pointer(&v)) == nil }
	}
	return nil
}

func (a *aggregation[K, V, VA]) Init(ctx *stream.Context[K, Change[VA]]) (err error) {
	a.store, err = stream.GetKeyValueStore[K, ValueAndTimestamp[VA]](ctx, a.storeName)
	return err
}

func (a *aggregation[K, V, VA]) Process(ctx *stream.Context[K, Change[VA]], r stream.Record[K, V]) error {
	if a.keyNil != nil && a.keyNil(r.Key) {
		ctx.RecordDropped(stream.DropNullKey)
		return nil
	}
	if a.isNil != nil && a.isNil(r.Value) {
		ctx.RecordDropped(stream.DropNullValue)
		return nil
	}
	old, found, err := a.store.Get(r.Key)
	if err != nil {
		return err
	}
	next := a.step(r.Key, r.Value, old.Value, found)
	return writeAggregate(ctx, a.store, r, old, found, next, a.aggNil == nil || !a.aggNil(next))
}

// writeAggregate stores key r.Key's new aggregate next (or, when keep is
// false, deletes the key: a nil aggregate is none) and forwards the change
// from old (found says it existed), stamped with the later of the record's
// time and the old aggregate's: the common end of every aggregation.
func writeAggregate[K, V, VA any](ctx *stream.Context[K, Change[VA]], store state.KeyValueStore[K, ValueAndTimestamp[VA]], r stream.Record[K, V], old ValueAndTimestamp[VA], found bool, next VA, keep bool) error {
	ts := r.Timestamp
	if found {
		ts = later(ts, old.Timestamp)
	}
	halves := &[2]VA{old.Value, next} // one allocation for both halves of the change
	ch := Change[VA]{}
	if found {
		ch.Old = &halves[0]
	}
	var err error
	if keep {
		ch.New = &halves[1]
		err = store.Put(r.Key, ValueAndTimestamp[VA]{Value: next, Timestamp: ts})
	} else {
		err = store.Delete(r.Key)
	}
	if err != nil {
		return err
	}
	ctx.Forward(stream.Record[K, Change[VA]]{Key: r.Key, Value: ch, Timestamp: ts, Headers: r.Headers})
	return nil
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
