// Package streamtest runs a topology with no broker, deterministically, for
// unit tests: pipe typed records into input topics (null keys and
// tombstones too: PipeNullKey, PipeTombstone), move wall-clock time, read
// typed records from output topics, look into stores and count dropped
// records. Each piped record is processed completely before Pipe returns.
package streamtest

import (
	"fmt"
	"time"

	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// Config configures a Driver.
type Config struct {
	AppID     string    // default "test"
	StartTime time.Time // initial wall-clock time; default 2026-01-01T00:00:00Z
	// OnProcessError and OnDeserializeError default to stream.Fail().
	OnProcessError     stream.ErrorPolicy
	OnDeserializeError stream.ErrorPolicy
	// Partitions is every topic's partition count (default 1), and
	// TopicPartitions overrides it per topic: with several, records are
	// placed by key as a producer would, one task per partition, so that a
	// key handled in the wrong task shows in a test.
	Partitions      int32
	TopicPartitions map[string]int32
}

// Driver runs one topology in-process.
type Driver struct {
	d *stream.LocalDriver
}

// New validates t and prepares its tasks and stores (all in memory).
func New(t *stream.Topology, cfg Config) (*Driver, error) {
	d, err := stream.NewLocalDriver(t, stream.LocalConfig{
		AppID: cfg.AppID, StartTime: cfg.StartTime,
		OnProcessError: cfg.OnProcessError, OnDeserializeError: cfg.OnDeserializeError,
		Partitions: cfg.Partitions, TopicPartitions: cfg.TopicPartitions,
	})
	if err != nil {
		return nil, err
	}
	return &Driver{d: d}, nil
}

// Pipe serializes key and value, feeds them to topic with timestamp ts and
// processes the record and all it causes.
func Pipe[K, V any](d *Driver, topic string, ks serde.Serializer[K], vs serde.Serializer[V], key K, value V, ts time.Time) error {
	kb, err := ks.Serialize(key)
	if err != nil {
		return fmt.Errorf("pipe to %q: serialize key: %w", topic, err)
	}
	vb, err := vs.Serialize(value)
	if err != nil {
		return fmt.Errorf("pipe to %q: serialize value: %w", topic, err)
	}
	return d.d.Pipe(topic, kb, vb, nil, ts)
}

// PipeNullKey feeds topic a record with a null key (what a producer that
// sends no key writes) and value, as Pipe: it goes to a partition
// round-robin. A source whose key serde cannot say null drops it (counted
// in Dropped as stream.DropNullKey).
func PipeNullKey[V any](d *Driver, topic string, vs serde.Serializer[V], value V, ts time.Time) error {
	vb, err := vs.Serialize(value)
	if err != nil {
		return fmt.Errorf("pipe to %q: serialize value: %w", topic, err)
	}
	return d.d.Pipe(topic, nil, vb, nil, ts)
}

// PipeTombstone feeds topic a record with key and a null value (a
// tombstone), as Pipe. A table deletes the key's row; a source whose value
// serde cannot say null drops it (counted as stream.DropNullValue).
func PipeTombstone[K any](d *Driver, topic string, ks serde.Serializer[K], key K, ts time.Time) error {
	kb, err := ks.Serialize(key)
	if err != nil {
		return fmt.Errorf("pipe to %q: serialize key: %w", topic, err)
	}
	return d.d.Pipe(topic, kb, nil, nil, ts)
}

// PipeNulls feeds topic a record whose key and value are both null.
func (d *Driver) PipeNulls(topic string, ts time.Time) error {
	return d.d.Pipe(topic, nil, nil, nil, ts)
}

// Dropped counts the records dropped so far by reason (a null key or value
// where the topology cannot take one, and so on: stream.DropReason), over
// every task; only reasons that happened are present.
func (d *Driver) Dropped() map[stream.DropReason]uint64 { return d.d.Dropped() }

// PipeRaw feeds already serialized bytes (or garbage, to test error paths).
func (d *Driver) PipeRaw(topic string, key, value []byte, ts time.Time) error {
	return d.d.Pipe(topic, key, value, nil, ts)
}

// Read removes and decodes the records written to topic so far. A null
// key or value is decoded only by a deserializer that decodes null
// (serde.NullDecoder: dsl.Nullable, serde.Bytes); for any other it is an
// error naming the record, never a zero value.
func Read[K, V any](d *Driver, topic string, kd serde.Deserializer[K], vd serde.Deserializer[V]) ([]stream.Record[K, V], error) {
	raw := d.d.Output(topic)
	out := make([]stream.Record[K, V], 0, len(raw))
	keyNull, valueNull := serde.DecodesNull(kd), serde.DecodesNull(vd)
	for _, r := range raw {
		if r.Key == nil && !keyNull {
			return out, fmt.Errorf("read %s/%d@%d: null key, and the key deserializer (%T) does not decode null: read it with a nullable one (dsl.Nullable)", topic, r.Partition, r.Offset, kd)
		}
		if r.Value == nil && !valueNull {
			return out, fmt.Errorf("read %s/%d@%d: null value (a tombstone), and the value deserializer (%T) does not decode null: read it with a nullable one (dsl.Nullable)", topic, r.Partition, r.Offset, vd)
		}
		k, err := kd.Deserialize(r.Key)
		if err != nil {
			return out, fmt.Errorf("read %s/%d@%d: key: %w", topic, r.Partition, r.Offset, err)
		}
		v, err := vd.Deserialize(r.Value)
		if err != nil {
			return out, fmt.Errorf("read %s/%d@%d: value: %w", topic, r.Partition, r.Offset, err)
		}
		out = append(out, stream.Record[K, V]{Key: k, Value: v, Timestamp: r.Timestamp, Headers: r.Headers})
	}
	return out, nil
}

// AdvanceWallClock moves wall-clock time and fires due punctuations.
func (d *Driver) AdvanceWallClock(dur time.Duration) error { return d.d.AdvanceWallClock(dur) }

// Now is the driver's wall-clock time.
func (d *Driver) Now() time.Time { return d.d.Now() }

// KeyValueStore returns a store for inspection (and for seeding state).
// With several partitions each task has its own copy of the store: use
// KeyValueStoreAt.
func KeyValueStore[K, V any](d *Driver, name string) (state.KeyValueStore[K, V], error) {
	if n := d.d.StorePartitions(name); n > 1 {
		return nil, fmt.Errorf("store %q is kept by %d tasks, one per partition: use KeyValueStoreAt", name, n)
	}
	return KeyValueStoreAt[K, V](d, name, 0)
}

// KeyValueStoreAt returns the store of the task of one partition.
func KeyValueStoreAt[K, V any](d *Driver, name string, partition int32) (state.KeyValueStore[K, V], error) {
	s := d.d.StoreAt(name, partition)
	if s == nil {
		return nil, fmt.Errorf("no store %q in partition %d", name, partition)
	}
	kv, ok := s.(state.KeyValueStore[K, V])
	if !ok {
		return nil, fmt.Errorf("store %q is %T, not a KeyValueStore of the requested types", name, s)
	}
	return kv, nil
}

// ChangelogLen is how many records the store's changelog received.
func (d *Driver) ChangelogLen(store string) int { return len(d.d.Changelog(store)) }

// Close closes processors and stores.
func (d *Driver) Close() error { return d.d.Close() }
