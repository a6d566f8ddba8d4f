package stream

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
)

// Queries of stores of other kinds open the kind's own typed store over a
// read-only backend of the task's store: the kind's code reads its layout,
// and nothing here knows it.

var errReadOnly = errors.New("a query's view of a store is read-only")

// readOnlyBackend is a Backend over a task's store for a query: reads go
// through the store's cache without filling it, writes are refused.
type readOnlyBackend struct{ r storeReader }

func (b readOnlyBackend) Get(key []byte) ([]byte, bool, error) { return b.r.get(key) }
func (b readOnlyBackend) Put([]byte, []byte) error             { return errReadOnly }
func (b readOnlyBackend) Delete([]byte) error                  { return errReadOnly }
func (b readOnlyBackend) Range(from, to []byte) (state.Iterator, error) {
	return b.r.ts.backend.Range(from, to)
}
func (b readOnlyBackend) ApproximateCount() (int64, error) { return b.r.ts.backend.ApproximateCount() }
func (b readOnlyBackend) Flush() error                     { return nil }
func (b readOnlyBackend) Close() error                     { return nil }

// kindView is what the views of every kind share: the store, its task's
// routing by key and the stale setting.
type kindView[K any] struct {
	app   *App
	store string
	sub   *subtopology
	def   *storeDef
	ks    serde.Serde[K]
	stale bool
}

// newKindView checks that store opens as a typed store S (a kind's typed
// interface of K and V): the kind's own constructor decides, so no kind is
// named here.
func newKindView[K, V, S any](a *App, store, what string, ks serde.Serde[K]) (kindView[K], error) {
	s, def, err := a.queryStore(store)
	if err != nil {
		return kindView[K]{}, err
	}
	if _, ok := def.open(readOnlyBackend{}, nil).(S); !ok {
		return kindView[K]{}, fmt.Errorf("query: store %q is a %s store of %v -> %v, not a %s store of %v -> %v",
			store, def.kind.Name, def.keyType, def.valType, what, reflect.TypeFor[K](), reflect.TypeFor[V]())
	}
	if ks == nil {
		return kindView[K]{}, fmt.Errorf("query: store %q: nil key serde", store)
	}
	return kindView[K]{app: a, store: store, sub: s, def: def, ks: ks}, nil
}

// read runs fn on the typed store (of type S) of the task of key.
func readTyped[K, S any](v kindView[K], key K, fn func(S) error) (Served, error) {
	kb, err := v.ks.Serialize(key)
	if err != nil {
		return Served{}, fmt.Errorf("query store %q: serialize key: %w", v.store, err)
	}
	if kb == nil {
		return Served{}, fmt.Errorf("query store %q: the key serializes to null, which no store holds", v.store)
	}
	n, known := v.app.storePartitions(v.sub)
	if !known {
		return Served{}, errAppNotStarted(v.store)
	}
	id := TaskID{v.sub.id, KafkaPartition(kb, n)}
	return v.app.readLocal(v.store, id, v.stale, func(r storeReader) error {
		typed, ok := v.def.open(readOnlyBackend{r}, nil).(S)
		if !ok {
			return fmt.Errorf("query store %q: the store is not a %v", v.store, reflect.TypeFor[S]())
		}
		return fn(typed)
	})
}

// Window is one window of a window store.
type Window[V any] struct {
	Start int64 // the window's start, milliseconds since the epoch
	Value V
}

// WindowView is a read-only, typed view of a window store of an App, over
// the tasks this instance holds (QueryWindow); as KeyValueView, it is safe
// for concurrent use and fails with NotLocalError or NotAvailableError.
type WindowView[K, V any] struct{ v kindView[K] }

// QueryWindow returns a view of the window store named store (of any
// window kind: with a timestamped one, V is state.ValueAndTimestamp of its
// values), whose keys ks serializes as the store does.
func QueryWindow[K, V any](a *App, store string, ks serde.Serde[K]) (*WindowView[K, V], error) {
	v, err := newKindView[K, V, state.WindowStore[K, V]](a, store, "window", ks)
	if err != nil {
		return nil, err
	}
	return &WindowView[K, V]{v}, nil
}

// AllowStale is KeyValueView.AllowStale.
func (w *WindowView[K, V]) AllowStale() *WindowView[K, V] {
	c := *w
	c.v.stale = true
	return &c
}

// Fetch returns the key's windows with a start in [from, to] (milliseconds
// since the epoch), by ascending start.
func (w *WindowView[K, V]) Fetch(key K, from, to int64) ([]Window[V], Served, error) {
	var out []Window[V]
	served, err := readTyped(w.v, key, func(s state.WindowStore[K, V]) error {
		it, err := s.FetchRange(key, from, to)
		if err != nil {
			return err
		}
		for it.Next() {
			out = append(out, Window[V]{Start: it.Start(), Value: it.Value()})
		}
		if err := it.Err(); err != nil {
			it.Close()
			return err
		}
		return it.Close()
	})
	return out, served, err
}

// Session is one session of a session store.
type Session[V any] struct {
	Start, End int64 // milliseconds since the epoch
	Value      V
}

// SessionView is a read-only, typed view of a session store of an App
// (QuerySession), as WindowView.
type SessionView[K, V any] struct{ v kindView[K] }

// QuerySession returns a view of the session store named store, whose keys
// ks serializes as the store does.
func QuerySession[K, V any](a *App, store string, ks serde.Serde[K]) (*SessionView[K, V], error) {
	v, err := newKindView[K, V, state.SessionStore[K, V]](a, store, "session", ks)
	if err != nil {
		return nil, err
	}
	return &SessionView[K, V]{v}, nil
}

// AllowStale is KeyValueView.AllowStale.
func (s *SessionView[K, V]) AllowStale() *SessionView[K, V] {
	c := *s
	c.v.stale = true
	return &c
}

// Sessions returns every session of key the store keeps, by start.
func (s *SessionView[K, V]) Sessions(key K) ([]Session[V], Served, error) {
	var out []Session[V]
	served, err := readTyped(s.v, key, func(st state.SessionStore[K, V]) error {
		it, err := st.FetchSessions(key)
		if err != nil {
			return err
		}
		for it.Next() {
			out = append(out, Session[V]{Start: it.Start(), End: it.End(), Value: it.Value()})
		}
		if err := it.Err(); err != nil {
			it.Close()
			return err
		}
		return it.Close()
	})
	return out, served, err
}
