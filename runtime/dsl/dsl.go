// Package dsl is kgen's typed stream operators, in the spirit of Kafka
// Streams' DSL: filter, map, flatMap, branch, merge, grouping and
// aggregation into tables, and tables read from topics. Each function adds
// nodes to a stream.Topology, built only on its public Processor API (as
// Kafka Streams' DSL is built on its Processor API), so operators and
// hand-written processors mix freely: either can read from the other.
//
// Records keep their timestamp and headers through stateless operators.
// Aggregations emit every update (Kafka Streams with its record cache off),
// timestamped with the later of the record's time and the previous
// aggregate's. A table's updates flow as Change values: the row before and
// after, nil for a row that does not exist, so a deletion is never mistaken
// for a zero value.
//
// # Nulls
//
// Operators treat nulls as Kafka Streams does. A key or value can be null
// only if its type says so (a *V read with Nullable, a []byte, or any
// serde.NullDecoder); a source whose side cannot say null drops such
// records before any operator runs (stream.AddSource). Stateless operators
// pass what they are given, nil included, to the user's functions, which
// must handle it; Map, SelectKey and FlatMap may turn a nil key into a
// real one. The aggregations (Count, Reduce, Aggregate) drop a record
// whose key or value is nil, and Table drops a record whose key is nil,
// counting each drop (stream.DropNullKey, stream.DropNullValue) in the
// dropped-records counter with a debug log; a table's nil value deletes
// its row. Where Kafka Streams would hand a null to a user's function on a
// stateless path and kgen's side is not nullable, kgen drops the record at
// the source instead: that is on purpose (a null is never a zero value).
//
// # Joins with tables
//
// StreamTableJoin and StreamTableLeftJoin enrich a stream from a table's
// current row; TableJoin, TableLeftJoin and TableOuterJoin keep a join of
// two tables up to date, with Kafka Streams 4.4's semantics (emitted
// results, tombstones, timestamps). A side that may have no row is a
// pointer in the joiner, nil for no row. MaterializeTable stores a join's
// result so it can be joined in turn. Joined topics must be co-partitioned.
//
// # Windows
//
// Windowed aggregations (WindowedCount, WindowedReduce, WindowedAggregate
// over TumblingWindows, HoppingWindows or SlidingWindows; SessionCount,
// SessionReduce, SessionAggregate over SessionWindows) key their tables by
// Windowed[K], with Kafka Streams 4.4's semantics: a grace period per
// window, the operator's own stream time (restored after a restart), every
// update emitted or (EmitFinal) each window once when it closes, late
// records dropped and counted (stream.DropLateRecord). SuppressUntilWindowCloses
// and SuppressUntilTimeLimit are Kafka Streams' suppress. Final results need
// stream time to move: an input that goes quiet emits nothing until its next
// record, unless IdleClose lets the wall clock close windows.
//
// The generator (kgen generate) wires these from the operators of a
// kgen.yaml, adding repartition steps where a key may have changed before a
// grouping; by hand, add stream.AddRepartition where Kafka Streams would.
package dsl

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/kgen-dev/kgen/runtime/serde"
)

// KeyValue is one record a FlatMap emits.
type KeyValue[K, V any] struct {
	Key   K
	Value V
}

// Change is one update of a table row: its value before and after. A nil
// New is a deletion (a tombstone); a nil Old is a new row.
type Change[V any] struct {
	Old, New *V
}

// ValueAndTimestamp is what a table's store keeps per key: the value and
// the timestamp of the record that last changed it (Kafka Streams'
// timestamped stores).
type ValueAndTimestamp[V any] struct {
	Value     V
	Timestamp time.Time
}

// Timestamped encodes a ValueAndTimestamp as the timestamp in milliseconds
// (8 bytes, big-endian) followed by the value as s encodes it.
func Timestamped[V any](s serde.Serde[V]) serde.Serde[ValueAndTimestamp[V]] {
	a, _ := s.(serde.Appender[V])
	return timestamped[V]{s, a}
}

type timestamped[V any] struct {
	s serde.Serde[V]
	a serde.Appender[V] // nil when s cannot append
}

func (t timestamped[V]) Serialize(v ValueAndTimestamp[V]) ([]byte, error) {
	if t.a != nil {
		out := binary.BigEndian.AppendUint64(make([]byte, 0, 16), uint64(v.Timestamp.UnixMilli()))
		return t.a.AppendSerialize(out, v.Value)
	}
	b, err := t.s.Serialize(v.Value)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 8, 8+len(b))
	binary.BigEndian.PutUint64(out, uint64(v.Timestamp.UnixMilli()))
	return append(out, b...), nil
}

func (t timestamped[V]) Deserialize(b []byte) (ValueAndTimestamp[V], error) {
	if len(b) < 8 {
		return ValueAndTimestamp[V]{}, fmt.Errorf("timestamped value: %d bytes, want at least 8", len(b))
	}
	v, err := t.s.Deserialize(b[8:])
	if err != nil {
		return ValueAndTimestamp[V]{}, err
	}
	return ValueAndTimestamp[V]{Value: v, Timestamp: time.UnixMilli(int64(binary.BigEndian.Uint64(b)))}, nil
}

// Nullable encodes nil as a null (a tombstone, or no key) and any other *V
// as s encodes the value; a null decodes to nil. It makes a side nilable
// (serde.NullDecoder): a source reading a key or value with it hands nulls
// to its nodes instead of dropping them.
func Nullable[V any](s serde.Serde[V]) serde.Serde[*V] { return nullable[V]{s} }

type nullable[V any] struct{ s serde.Serde[V] }

func (n nullable[V]) Serialize(v *V) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	b, err := n.s.Serialize(*v)
	if b == nil && err == nil {
		b = []byte{} // a value is not a tombstone, even an empty one
	}
	return b, err
}

// DecodesNull is true: a null is nil (serde.NullDecoder).
func (nullable[V]) DecodesNull() bool { return true }

func (n nullable[V]) Deserialize(b []byte) (*V, error) {
	if b == nil {
		return nil, nil
	}
	v, err := n.s.Deserialize(b)
	if err != nil {
		return nil, err
	}
	return &v, nil
}

// Changes encodes both halves of a Change, for the repartition topic after
// TableGroupBy: a flags byte (1: old present, 2: new present), the old
// value's length (4 bytes, big-endian) and bytes, then the new value's.
func Changes[V any](s serde.Serde[V]) serde.Serde[Change[V]] { return changes[V]{s} }

type changes[V any] struct{ s serde.Serde[V] }

const (
	hasOld = 1 << iota
	hasNew
)

func (c changes[V]) Serialize(v Change[V]) ([]byte, error) {
	var flags byte
	var ob, nb []byte
	var err error
	if v.Old != nil {
		flags |= hasOld
		if ob, err = c.s.Serialize(*v.Old); err != nil {
			return nil, err
		}
	}
	if v.New != nil {
		flags |= hasNew
		if nb, err = c.s.Serialize(*v.New); err != nil {
			return nil, err
		}
	}
	out := make([]byte, 5, 5+len(ob)+len(nb))
	out[0] = flags
	binary.BigEndian.PutUint32(out[1:], uint32(len(ob)))
	out = append(out, ob...)
	return append(out, nb...), nil
}

func (c changes[V]) Deserialize(b []byte) (Change[V], error) {
	if len(b) < 5 || b[0]&^(hasOld|hasNew) != 0 {
		return Change[V]{}, fmt.Errorf("table change: malformed (%d bytes)", len(b))
	}
	n := binary.BigEndian.Uint32(b[1:])
	if uint64(n) > uint64(len(b)-5) || (b[0]&hasOld == 0 && n != 0) || (b[0]&hasNew == 0 && int(n) != len(b)-5) {
		return Change[V]{}, fmt.Errorf("table change: old value of %d bytes in %d", n, len(b)-5)
	}
	var ch Change[V]
	if b[0]&hasOld != 0 {
		v, err := c.s.Deserialize(b[5 : 5+n])
		if err != nil {
			return Change[V]{}, err
		}
		ch.Old = &v
	}
	if b[0]&hasNew != 0 {
		v, err := c.s.Deserialize(b[5+n:])
		if err != nil {
			return Change[V]{}, err
		}
		ch.New = &v
	}
	return ch, nil
}
