package stream

import (
	"fmt"
	"reflect"
	"time"

	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
)

// AddWindowStore adds a window store (state.NewWindowStore) and attaches it
// to processors. Logged (opts.Changelog), its changelog topic is created
// cleanup.policy=compact,delete with retention.ms = the store's retention
// plus the app's ChangelogRetentionMargin, as Kafka Streams' windowed
// changelogs.
func AddWindowStore[K, V any](t *Topology, name string, ks serde.Serde[K], vs serde.Serde[V], opt state.WindowStoreOptions, opts StoreOptions, processors ...string) {
	if !checkWindowOptions(t, name, opt) {
		return
	}
	t.addStore(&storeDef{
		name: name, kind: state.WindowKind(opt), opts: opts,
		retention: max(opt.Retention, opt.WindowSize),
		keyType:   reflect.TypeFor[K](), valType: reflect.TypeFor[V](),
		open: func(b state.Backend, logger state.ChangeLogger) any {
			return state.NewWindowStore(name, b, ks, vs, opt, logger)
		},
	}, processors)
}

// AddTimestampedWindowStore adds a timestamped window store
// (state.NewTimestampedWindowStore, the store of Kafka Streams' windowed
// aggregations) and attaches it to processors; get it with
// GetWindowStore[K, state.ValueAndTimestamp[V]]. Logged, its changelog is
// created as a window store's, keeping the producer's timestamps, which
// are its values' timestamps.
func AddTimestampedWindowStore[K, V any](t *Topology, name string, ks serde.Serde[K], vs serde.Serde[V], opt state.WindowStoreOptions, opts StoreOptions, processors ...string) {
	if !checkWindowOptions(t, name, opt) {
		return
	}
	t.addStore(&storeDef{
		name: name, kind: state.TimestampedWindowKind(opt), opts: opts,
		retention: max(opt.Retention, opt.WindowSize),
		keyType:   reflect.TypeFor[K](), valType: reflect.TypeFor[state.ValueAndTimestamp[V]](),
		open: func(b state.Backend, logger state.ChangeLogger) any {
			return state.NewTimestampedWindowStore(name, b, ks, vs, opt, logger)
		},
	}, processors)
}

// checkWindowOptions records in t why opt cannot make a window store, if
// it cannot.
func checkWindowOptions(t *Topology, name string, opt state.WindowStoreOptions) bool {
	if opt.WindowSize <= 0 && opt.Retention <= 0 {
		t.errorf("window store %q: neither a window size nor a retention", name)
		return false
	}
	if opt.Retention > 0 && opt.Retention < opt.WindowSize {
		t.errorf("window store %q: retention %v is shorter than the window size %v", name, opt.Retention, opt.WindowSize)
		return false
	}
	return true
}

// AddSessionStore adds a session store (state.NewSessionStore) keeping
// sessions for retention, and attaches it to processors. Logged, its
// changelog is created as a window store's.
func AddSessionStore[K, V any](t *Topology, name string, ks serde.Serde[K], vs serde.Serde[V], retention time.Duration, opts StoreOptions, processors ...string) {
	if retention <= 0 {
		t.errorf("session store %q: retention %v, want more than 0", name, retention)
		return
	}
	t.addStore(&storeDef{
		name: name, kind: state.SessionKind(retention), opts: opts, retention: retention,
		keyType: reflect.TypeFor[K](), valType: reflect.TypeFor[V](),
		open: func(b state.Backend, logger state.ChangeLogger) any {
			return state.NewSessionStore(name, b, ks, vs, retention, logger)
		},
	}, processors)
}

// AddTimestampedKeyValueStore adds a timestamped key-value store
// (state.NewTimestampedKeyValueStore) and attaches it to processors; get it
// with GetKeyValueStore[K, state.ValueAndTimestamp[V]]. Logged, its
// changelog holds Kafka Streams' records (the bare value, whose timestamp
// is the record's), so the topic must keep the producer's timestamps.
func AddTimestampedKeyValueStore[K, V any](t *Topology, name string, ks serde.Serde[K], vs serde.Serde[V], opts StoreOptions, processors ...string) {
	t.addStore(&storeDef{
		name: name, kind: state.TimestampedKeyValue, opts: opts,
		keyType: reflect.TypeFor[K](), valType: reflect.TypeFor[state.ValueAndTimestamp[V]](),
		open: func(b state.Backend, logger state.ChangeLogger) any {
			return state.NewTimestampedKeyValueStore(name, b, ks, vs, logger)
		},
	}, processors)
}

// GetWindowStore returns the typed window store named name. Call it in Init
// and keep the result.
func GetWindowStore[K, V any](ctx StoreGetter, name string) (state.WindowStore[K, V], error) {
	return getStore[state.WindowStore[K, V]](ctx, name, "WindowStore")
}

// GetSessionStore returns the typed session store named name. Call it in
// Init and keep the result.
func GetSessionStore[K, V any](ctx StoreGetter, name string) (state.SessionStore[K, V], error) {
	return getStore[state.SessionStore[K, V]](ctx, name, "SessionStore")
}

func getStore[S any](ctx StoreGetter, name, what string) (S, error) {
	var zero S
	s := ctx.Store(name)
	if s == nil {
		return zero, fmt.Errorf("processor %q: store %q is not attached to it", ctx.NodeName(), name)
	}
	typed, ok := s.(S)
	if !ok {
		return zero, fmt.Errorf("processor %q: store %q is %T, not a %s of the requested types", ctx.NodeName(), name, s, what)
	}
	return typed, nil
}

// AddVersionedKeyValueStore adds a versioned key-value store
// (state.NewVersionedKeyValueStore, Kafka Streams' KIP-889) keeping
// history for historyRetention, and attaches it to processors; get it with
// GetVersionedKeyValueStore. Logged, its changelog holds every accepted
// put with its version's timestamp as the record's, and is created
// compacted, message.timestamp.type=CreateTime and min.compaction.lag.ms =
// historyRetention + one day, as Kafka Streams'. The store logs its own
// writes: through the record cache too, each put is logged when made.
func AddVersionedKeyValueStore[K, V any](t *Topology, name string, ks serde.Serde[K], vs serde.Serde[V], historyRetention time.Duration, opts StoreOptions, processors ...string) {
	if historyRetention <= 0 {
		t.errorf("versioned store %q: history retention %v, want more than 0", name, historyRetention)
		return
	}
	t.addStore(&storeDef{
		name: name, kind: state.VersionedKind(historyRetention), opts: opts,
		keyType: reflect.TypeFor[K](), valType: reflect.TypeFor[V](),
		open: func(b state.Backend, logger state.ChangeLogger) any {
			return state.NewVersionedKeyValueStore(name, b, ks, vs, historyRetention, logger)
		},
	}, processors)
}

// GetVersionedKeyValueStore returns the typed versioned store named name.
// Call it in Init and keep the result.
func GetVersionedKeyValueStore[K, V any](ctx StoreGetter, name string) (state.VersionedKeyValueStore[K, V], error) {
	return getStore[state.VersionedKeyValueStore[K, V]](ctx, name, "VersionedKeyValueStore")
}
