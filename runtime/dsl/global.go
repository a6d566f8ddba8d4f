package dsl

import (
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// GlobalTable names a global table of a topology (stream.AddGlobalTable):
// every partition of its topic on every instance, so a stream joins it
// without co-partitioning, looking rows up by a key it maps each record to.
type GlobalTable[K, V any] struct{ name string }

// NewGlobalTable adds a global table named name, read from topic, and
// returns its handle for JoinGlobal and LeftJoinGlobal. A record of the
// topic with a null key is dropped (stream.DropNullKey); a null value
// deletes the key's row.
func NewGlobalTable[K, V any](t *stream.Topology, name, topic string, ks serde.Serde[K], vs serde.Serde[V], opts stream.StoreOptions) GlobalTable[K, V] {
	stream.AddGlobalTable(t, name, topic, ks, vs, opts)
	return GlobalTable[K, V]{name: name}
}

// Name returns the global table's name.
func (g GlobalTable[K, V]) Name() string { return g.name }

// JoinGlobal joins each stream record with the row of table under the key
// keyMapper gives it (Kafka Streams' KStream#join(GlobalKTable)): the
// output keeps the record's key, timestamp and headers, with
// joiner(key, value, row) as its value. The row is the table's as of now:
// the table is loaded before anything is processed and updated as its
// topic moves, independently of the stream's time. As Kafka Streams does, a
// record with a nil value (a value type that can be nil) is dropped
// (stream.DropNullValue), as is a record keyMapper maps to no key
// (ok false: a null key, stream.DropNullKey); a record whose key has no
// row emits nothing. The stream's own key may be nil: only the mapped key
// matters.
func JoinGlobal[K, V, GK, GV, VR any](t *stream.Topology, name string, table GlobalTable[GK, GV], keyMapper func(K, V) (GK, bool), joiner func(key K, value V, row GV) VR, parents ...string) {
	stream.AddProcessor(t, name, func() stream.Processor[K, V, K, VR] {
		return &globalJoin[K, V, GK, GV, VR]{table: table.name, keyMapper: keyMapper, valueNil: nilTest[V](),
			join: func(k K, v V, row *GV) (VR, bool) {
				if row == nil {
					var none VR
					return none, false
				}
				return joiner(k, v, *row), true
			}}
	}, parents...)
}

// LeftJoinGlobal is JoinGlobal that keeps every record with a value: a
// record keyMapper maps to no key, or whose key has no row, is joined with
// a nil row (Kafka Streams' KStream#leftJoin(GlobalKTable), which since
// KIP-962 no longer drops a null mapped key). A nil value is still dropped
// (stream.DropNullValue).
func LeftJoinGlobal[K, V, GK, GV, VR any](t *stream.Topology, name string, table GlobalTable[GK, GV], keyMapper func(K, V) (GK, bool), joiner func(key K, value V, row *GV) VR, parents ...string) {
	stream.AddProcessor(t, name, func() stream.Processor[K, V, K, VR] {
		return &globalJoin[K, V, GK, GV, VR]{table: table.name, keyMapper: keyMapper, valueNil: nilTest[V](), left: true,
			join: func(k K, v V, row *GV) (VR, bool) { return joiner(k, v, row), true }}
	}, parents...)
}

type globalJoin[K, V, GK, GV, VR any] struct {
	table     string
	rows      *stream.GlobalTable[GK, GV]
	keyMapper func(K, V) (GK, bool)
	valueNil  func(V) bool // nil for a value type that cannot be nil
	left      bool
	// join makes the output value, or says there is none (an inner join
	// without a row).
	join func(K, V, *GV) (VR, bool)
}

func (j *globalJoin[K, V, GK, GV, VR]) Init(ctx *stream.Context[K, VR]) (err error) {
	j.rows, err = stream.GetGlobalTable[GK, GV](ctx, j.table)
	return err
}

func (j *globalJoin[K, V, GK, GV, VR]) Process(ctx *stream.Context[K, VR], r stream.Record[K, V]) error {
	if j.valueNil != nil && j.valueNil(r.Value) {
		ctx.RecordDropped(stream.DropNullValue)
		return nil
	}
	var row *GV
	gk, ok := j.keyMapper(r.Key, r.Value)
	switch {
	case ok:
		v, found, err := j.rows.Get(gk)
		if err != nil {
			return err
		}
		if found {
			row = &v
		}
	case !j.left:
		ctx.RecordDropped(stream.DropNullKey)
		return nil
	}
	out, emit := j.join(r.Key, r.Value, row)
	if emit {
		ctx.Forward(stream.Record[K, VR]{Key: r.Key, Value: out, Timestamp: r.Timestamp, Headers: r.Headers})
	}
	return nil
}
