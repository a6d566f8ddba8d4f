package stream

import (
	"reflect"
	"time"

	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
)

// AddWindowStore adds a window store (values by key and window start, kept
// for wopt's retention) and attaches it to processors, which get it with
// Context.Store as a state.WindowStore[K, V]. Its changelog, if logged, is
// compacted and deleted past the retention plus ChangelogRetentionMargin.
func AddWindowStore[K, V any](t *Topology, name string, ks serde.Serde[K], vs serde.Serde[V], wopt state.WindowStoreOptions, opts StoreOptions, processors ...string) {
	kind := state.WindowKind(wopt)
	t.addStore(&storeDef{
		name: name, kind: kind, opts: opts, retention: max(wopt.Retention, wopt.WindowSize),
		keyType: reflect.TypeFor[K](), valType: reflect.TypeFor[V](),
		open: func(b state.Backend, logger state.ChangeLogger) any {
			return state.NewWindowStore(name, b, ks, vs, wopt, logger)
		},
	}, processors)
}

// AddSessionStore adds a session store (values by key and session start
// and end, kept for retention past a session's end) and attaches it to
// processors, which get it with Context.Store as a state.SessionStore[K, V].
func AddSessionStore[K, V any](t *Topology, name string, ks serde.Serde[K], vs serde.Serde[V], retention time.Duration, opts StoreOptions, processors ...string) {
	t.addStore(&storeDef{
		name: name, kind: state.SessionKind(retention), opts: opts, retention: retention,
		keyType: reflect.TypeFor[K](), valType: reflect.TypeFor[V](),
		open: func(b state.Backend, logger state.ChangeLogger) any {
			return state.NewSessionStore(name, b, ks, vs, retention, logger)
		},
	}, processors)
}
