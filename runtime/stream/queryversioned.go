package stream

import (
	"fmt"
	"math"
	"reflect"

	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
)

// Queries of versioned stores and of timestamped key-value stores: the
// kinds QueryKeyValue, QueryWindow and QuerySession leave out.

// VersionedView is a read-only, typed view of a versioned key-value store
// of an App (QueryVersioned), over the tasks this instance holds; as
// KeyValueView, it is safe for concurrent use and fails with NotLocalError
// or NotAvailableError for a key whose task is elsewhere or moving.
//
// A version is a state.VersionedRecord: the value, the time it became
// valid (Timestamp) and the time it stopped (ValidTo, exclusive), which is
// state.PutValidToUndefined for the key's latest version. A tombstone is
// no version: a read of a time it covers finds nothing, as does a read of
// a time before the key's first version, or older than the store's history
// retention when the latest version was not yet valid then.
type VersionedView[K, V any] struct{ v kindView[K] }

// QueryVersioned returns a view of the versioned store named store (one
// added with AddVersionedKeyValueStore of K -> V; dsl.VersionedTable's
// store holds *V), whose keys ks serializes as the store does.
func QueryVersioned[K, V any](a *App, store string, ks serde.Serde[K]) (*VersionedView[K, V], error) {
	v, err := newKindView[K, V, state.VersionedKeyValueStore[K, V]](a, store, "versioned", ks)
	if err != nil {
		return nil, err
	}
	return &VersionedView[K, V]{v}, nil
}

// AllowStale is KeyValueView.AllowStale.
func (w *VersionedView[K, V]) AllowStale() *VersionedView[K, V] {
	c := *w
	c.v.stale = true
	return &c
}

// Get returns key's latest version and who served it; ok is false when
// the key has none or its latest is a tombstone.
func (w *VersionedView[K, V]) Get(key K) (rec state.VersionedRecord[V], ok bool, served Served, err error) {
	return w.read(key, math.MaxInt64, true)
}

// GetAsOf returns the version of key valid at asOf (milliseconds since the
// epoch): the one with the largest timestamp not after asOf, unless that is
// a tombstone. ok is false when there is none (see VersionedView).
func (w *VersionedView[K, V]) GetAsOf(key K, asOf int64) (rec state.VersionedRecord[V], ok bool, served Served, err error) {
	return w.read(key, asOf, false)
}

func (w *VersionedView[K, V]) read(key K, asOf int64, latest bool) (rec state.VersionedRecord[V], ok bool, served Served, err error) {
	served, err = readTyped(w.v, key, func(s state.VersionedKeyValueStore[K, V]) error {
		var err error
		if latest {
			rec, ok, err = s.Get(key)
		} else {
			rec, ok, err = s.GetAsOf(key, asOf)
		}
		return err
	})
	if err != nil {
		return state.VersionedRecord[V]{}, false, served, err
	}
	return rec, ok, served, nil
}

// QueryTimestampedKeyValue returns a key-value view of the timestamped
// key-value store named store (AddTimestampedKeyValueStore of K -> V):
// each value comes with the time of the record that last updated it. vs
// is the serde of the store's values (without their timestamps).
// QueryKeyValue reads the stores of dsl's tables and aggregations, which
// are plain key-value stores of dsl.ValueAndTimestamp values.
func QueryTimestampedKeyValue[K, V any](a *App, store string, ks serde.Serde[K], vs serde.Serde[V]) (*KeyValueView[K, state.ValueAndTimestamp[V]], error) {
	s, def, err := a.queryStore(store)
	if err != nil {
		return nil, err
	}
	if def.kind != state.TimestampedKeyValue {
		return nil, fmt.Errorf("query: store %q is a %s store, not timestamped-key-value", store, def.kind.Name)
	}
	k, v := reflect.TypeFor[K](), reflect.TypeFor[state.ValueAndTimestamp[V]]()
	if k != def.keyType || v != def.valType {
		return nil, fmt.Errorf("query: store %q holds %v -> %v, not %v -> %v", store, def.keyType, def.valType, k, v)
	}
	if ks == nil || vs == nil {
		return nil, fmt.Errorf("query: store %q: nil serde", store)
	}
	return &KeyValueView[K, state.ValueAndTimestamp[V]]{app: a, store: store, sub: s, ks: ks, vs: state.TimestampedSerde(vs)}, nil
}
