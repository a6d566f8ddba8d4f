package state

import (
	"encoding/binary"
	"fmt"
	"time"

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
// value alone, with the value's timestamp as the record's (a deletion
// with the logger's RecordTime). Its kind is TimestampedKeyValue.
func NewTimestampedKeyValueStore[K, V any](name string, b Backend, ks serde.Serde[K], vs serde.Serde[V], logger ChangeLogger) KeyValueStore[K, ValueAndTimestamp[V]] {
	if logger != nil {
		logger = timestampedLogger{logger}
	}
	return NewKeyValueStore(name, b, ks, serde.Serde[ValueAndTimestamp[V]](timestampedSerde[V]{vs}), logger)
}

// TimestampedKeyValue is the kind of timestamped key-value stores: a
// compacted changelog of values whose record timestamps are their
// timestamps (so the topic must keep the producer's), restored as
// timestamp ‖ value.
var TimestampedKeyValue = &StoreKind{
	Name: "timestamped-key-value",
	Changelog: func(time.Duration, time.Duration) ChangelogTopic {
		return ChangelogTopic{RecordTimes: true}
	},
	Restore: func(b Backend, changes []Change) error {
		return ApplyChanges(b, withTimestamps(changes))
	},
	ToChangelog: func(c Change) (Change, bool) {
		if c.Value == nil {
			return c, true
		}
		if len(c.Value) < 8 {
			return Change{}, false // not written by a timestamped store
		}
		return Change{Key: c.Key, Value: c.Value[8:], Timestamp: int64(binary.BigEndian.Uint64(c.Value))}, true
	},
}

// TimestampedSerde is the serde of the values of a timestamped store as
// its backend keeps them (timestamp ‖ value as vs writes it): what a
// reader of the backend's bytes, such as a query, decodes them with.
func TimestampedSerde[V any](vs serde.Serde[V]) serde.Serde[ValueAndTimestamp[V]] {
	return timestampedSerde[V]{vs}
}

// timestampedSerde encodes a ValueAndTimestamp as the backend keeps it; a
// value that serializes to nil is nil, a deletion.
type timestampedSerde[V any] struct{ vs serde.Serde[V] }

func (s timestampedSerde[V]) Serialize(v ValueAndTimestamp[V]) ([]byte, error) {
	b, err := s.vs.Serialize(v.Value)
	if b == nil || err != nil {
		return nil, err
	}
	out := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(b)), uint64(v.Timestamp))
	return append(out, b...), nil
}

func (s timestampedSerde[V]) Deserialize(b []byte) (ValueAndTimestamp[V], error) {
	if len(b) < 8 {
		return ValueAndTimestamp[V]{}, fmt.Errorf("timestamped value of %d bytes, want at least 8", len(b))
	}
	v, err := s.vs.Deserialize(b[8:])
	if err != nil {
		return ValueAndTimestamp[V]{}, err
	}
	return ValueAndTimestamp[V]{Value: v, Timestamp: int64(binary.BigEndian.Uint64(b))}, nil
}

// timestampedLogger logs a timestamped store's writes as Kafka Streams
// does: the value without its timestamp, which becomes the record's.
type timestampedLogger struct{ ChangeLogger }

func (l timestampedLogger) LogChange(key, value []byte, timestamp int64) {
	if c, ok := TimestampedKeyValue.ToChangelog(Change{Key: key, Value: value, Timestamp: timestamp}); ok {
		l.ChangeLogger.LogChange(c.Key, c.Value, c.Timestamp)
	}
}

// NewTimestampedWindowStore types a backend as a window store of values
// with their timestamps, as Kafka Streams' TimestampedWindowStore (the
// store of its windowed aggregations): the backend keeps timestamp ‖
// serialized value, and each write is logged as Kafka Streams logs it:
// the window store's changelog key, the serialized value alone, and the
// value's timestamp as the record's (a deletion: the logger's RecordTime).
// Its kind is TimestampedWindowKind(opt).
func NewTimestampedWindowStore[K, V any](name string, b Backend, ks serde.Serde[K], vs serde.Serde[V], opt WindowStoreOptions, logger ChangeLogger) WindowStore[K, ValueAndTimestamp[V]] {
	if logger != nil {
		logger = timestampedLogger{logger}
	}
	return NewWindowStore(name, b, ks, serde.Serde[ValueAndTimestamp[V]](timestampedSerde[V]{vs}), opt, logger)
}

// TimestampedWindowKind is the kind of timestamped window stores made with
// opt: a window store's changelog (compact,delete, kept for the retention
// plus the margin) whose values are bare and whose record timestamps are
// the values' (so the topic must keep the producer's); restoration puts
// the timestamp back in front of the value.
func TimestampedWindowKind(opt WindowStoreOptions) *StoreKind {
	w := WindowKind(opt)
	return &StoreKind{
		Name: "timestamped-window",
		Changelog: func(retention, margin time.Duration) ChangelogTopic {
			c := RetainedChangelog(retention, margin)
			c.RecordTimes = true
			return c
		},
		Restore: func(b Backend, changes []Change) error {
			return w.Restore(b, withTimestamps(changes))
		},
		ToChangelog: func(c Change) (Change, bool) {
			c, ok := w.ToChangelog(c)
			if !ok {
				return c, false
			}
			return TimestampedKeyValue.ToChangelog(c)
		},
	}
}

// withTimestamps puts each change's timestamp in front of its value, as a
// timestamped store keeps it.
func withTimestamps(changes []Change) []Change {
	out := make([]Change, len(changes))
	for i, c := range changes {
		out[i] = Change{Key: c.Key, Timestamp: c.Timestamp}
		if c.Value != nil {
			out[i].Value = binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(c.Value)), uint64(c.Timestamp))
			out[i].Value = append(out[i].Value, c.Value...)
		}
	}
	return out
}
