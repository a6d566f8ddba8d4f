package state

import (
	"github.com/kgen-dev/kgen/runtime/serde"
)

// ValueAndTimestamp is a value with the time, in milliseconds since the
// epoch, of the record that last updated it: what a timestamped key-value
// store keeps per key.
type ValueAndTimestamp[V any] struct {
	Value     V
	Timestamp int64
}

// NewTimestampedKeyValueStore types a backend as a key-value store of
// values with their timestamps, as Kafka Streams' TimestampedKeyValueStore:
// the backend keeps timestamp (8 bytes, big-endian) ‖ serialized value, and
// a value that serializes to nil deletes the key. logger may be nil (not
// logged); each write is logged as Kafka Streams logs it: the serialized
// value alone, with the value's timestamp as the record's. Its kind is
// TimestampedKeyValue.
func NewTimestampedKeyValueStore[K, V any](name string, b Backend, ks serde.Serde[K], vs serde.Serde[V], logger ChangeLogger) KeyValueStore[K, ValueAndTimestamp[V]] {
	panic("not yet")
}

// TimestampedKeyValue is the kind of timestamped key-value stores: a
// compacted changelog of values whose record timestamps are their
// timestamps (so the topic must keep the producer's), restored as
// timestamp ‖ value.
var TimestampedKeyValue = &StoreKind{Name: "timestamped-key-value"}
