package streamtest

import (
	"fmt"
	"time"

	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// GlobalTable returns the reader of global table name: every partition of
// its topic, as every task reads it.
func GlobalTable[K, V any](d *Driver, name string) (*stream.GlobalTable[K, V], error) {
	g := d.d.GlobalTable(name)
	if g == nil {
		return nil, fmt.Errorf("no global table %q", name)
	}
	t, ok := g.(*stream.GlobalTable[K, V])
	if !ok {
		return nil, fmt.Errorf("global table %q is %T, not a GlobalTable of the requested types", name, g)
	}
	return t, nil
}

// VersionedGet returns the latest version of key in the versioned store
// name of a versioned table (which keeps *V, nil a tombstone): ok false
// when the key has none, or its latest is a tombstone. It reads the copy of
// the task of the key's partition (murmur2 of ks's bytes, as the sinks
// choose), or, when that one has no version, any other that has.
func VersionedGet[K, V any](d *Driver, name string, ks serde.Serializer[K], key K) (state.VersionedRecord[V], bool, error) {
	return versionedRead(d, name, ks, key, func(s state.VersionedKeyValueStore[K, *V]) (state.VersionedRecord[*V], bool, error) {
		return s.Get(key)
	})
}

// VersionedGetAsOf returns the version of key valid at asOf in the
// versioned store name of a versioned table, as VersionedGet reads it:
// the one of the largest time not after asOf; ok false for none (a time
// before the key's first version, a tombstone, or past the history).
func VersionedGetAsOf[K, V any](d *Driver, name string, ks serde.Serializer[K], key K, asOf time.Time) (state.VersionedRecord[V], bool, error) {
	return versionedRead(d, name, ks, key, func(s state.VersionedKeyValueStore[K, *V]) (state.VersionedRecord[*V], bool, error) {
		return s.GetAsOf(key, asOf.UnixMilli())
	})
}

func versionedRead[K, V any](d *Driver, name string, ks serde.Serializer[K], key K, read func(state.VersionedKeyValueStore[K, *V]) (state.VersionedRecord[*V], bool, error)) (state.VersionedRecord[V], bool, error) {
	var out state.VersionedRecord[V]
	n := d.d.StorePartitions(name)
	if n == 0 {
		return out, false, fmt.Errorf("no store %q", name)
	}
	kb, err := ks.Serialize(key)
	if err != nil {
		return out, false, fmt.Errorf("store %q: serialize key: %w", name, err)
	}
	if kb == nil {
		return out, false, fmt.Errorf("store %q: the key serializes to null, which no store holds", name)
	}
	home := stream.KafkaPartition(kb, n)
	order := []int32{home}
	for p := range n {
		if p != home {
			order = append(order, p)
		}
	}
	for _, p := range order {
		s := d.d.StoreAt(name, p)
		vs, ok := s.(state.VersionedKeyValueStore[K, *V])
		if !ok {
			return out, false, fmt.Errorf("store %q is %T, not a VersionedKeyValueStore of the requested types", name, s)
		}
		rec, ok, err := read(vs)
		if err != nil {
			return out, false, err
		}
		if ok && rec.Value != nil {
			return state.VersionedRecord[V]{Value: *rec.Value, Timestamp: rec.Timestamp, ValidTo: rec.ValidTo}, true, nil
		}
	}
	return out, false, nil
}
