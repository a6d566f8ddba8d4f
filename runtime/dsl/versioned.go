package dsl

import (
	"time"

	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// VersionedTable reads topic as a versioned table (Kafka Streams'
// KIP-889/KIP-914): each record is stored as its key's version at the
// record's time in a versioned store (stream.AddVersionedKeyValueStore of
// *V values, nil a tombstone) keeping history for historyRetention, so a
// join can ask the value a key had at a time. Every stored update is
// forwarded as a Change from the key's latest value before it, as Kafka
// Streams' table source does: one older than the key's latest version
// (out of order) went into the history only, and is forwarded with
// OutOfOrder set (Old is then the latest value, still current), for a
// table-table join to drop. A record older than the history retention is
// neither stored nor forwarded, and is counted as
// stream.DropExpiredVersion; a null key is dropped as stream.DropNullKey.
// It adds a source node name+"-source" and the table node name.
func VersionedTable[K, V any](t *stream.Topology, name, topic string, ks serde.Serde[K], vs serde.Serde[V], store string, historyRetention time.Duration, opts stream.StoreOptions) {
	source := name + "-source"
	stream.AddSource(t, source, topic, serde.Deserializer[K](ks), Nullable(vs))
	stream.AddProcessor(t, name, func() stream.Processor[K, *V, K, Change[V]] {
		return &versionedTableSource[K, V]{storeName: store, keyNil: nilTest[K]()}
	}, source)
	stream.AddVersionedKeyValueStore(t, store, ks, Nullable(vs), historyRetention, opts, name)
}

type versionedTableSource[K, V any] struct {
	storeName string
	store     state.VersionedKeyValueStore[K, *V]
	keyNil    func(K) bool // nil for a key type that cannot be nil
}

func (s *versionedTableSource[K, V]) Init(ctx *stream.Context[K, Change[V]]) (err error) {
	s.store, err = stream.GetVersionedKeyValueStore[K, *V](ctx, s.storeName)
	return err
}

func (s *versionedTableSource[K, V]) Process(ctx *stream.Context[K, Change[V]], r stream.Record[K, *V]) error {
	if s.keyNil != nil && s.keyNil(r.Key) {
		ctx.RecordDropped(stream.DropNullKey)
		return nil
	}
	old, found, err := s.store.Get(r.Key)
	if err != nil {
		return err
	}
	validTo, err := s.store.Put(r.Key, r.Value, r.Timestamp.UnixMilli())
	if err != nil {
		return err
	}
	if validTo == state.PutNotPut {
		ctx.RecordDropped(stream.DropExpiredVersion)
		return nil
	}
	ch := Change[V]{New: r.Value, OutOfOrder: validTo != state.PutValidToUndefined}
	if found {
		ch.Old = old.Value
	}
	ctx.Forward(stream.Record[K, Change[V]]{Key: r.Key, Value: ch, Timestamp: r.Timestamp, Headers: r.Headers})
	return nil
}
