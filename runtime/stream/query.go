package stream

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"

	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
)

// Interactive queries: read-only access to an App's stores from other
// goroutines (runtime/DESIGN.md, "Queries").
//
// A store belongs to its unit's goroutine. A query holds the unit's query
// lock shared (unit.qmu), which the unit holds exclusively only while it
// changes its tasks (rebalances, task creation, restoration, commits), so
// the task a query finds stays whole while it reads. A queryable store
// (StoreOptions.Queryable) is read while the unit processes records: each
// operation on it, the unit's and the query's, holds the store's own lock
// for its length (state.Cache.ShareReads, state.ShareReads), so a query
// waits at most for one store operation. A query of any other store also
// takes the unit's processing lock (unit.pmu), which the unit holds while
// it works and gives up between tasks to waiting queries: it waits up to a
// task's batch. Either way a query reads through the record cache, so it
// sees every write processed so far, committed or not.

// Instance is one instance of an application, as the group knows it.
type Instance struct {
	ID      string `json:"id"`                // its InstanceID
	Address string `json:"address,omitempty"` // its AdvertisedAddress; "" when it advertises none
}

// KeyLocation says where the data of a key of a store lives, as of the
// group's last assignment this instance received.
type KeyLocation struct {
	Store string
	// Task is the task holding the key: Task.Partition is the key's
	// partition, picked as the sinks' default partitioner does (murmur2 of
	// the serialized key, as Kafka's Java producer).
	Task TaskID
	// Active is the instance running the task; the zero Instance while no
	// instance does (the task is moving between instances).
	Active Instance
	// Standbys are the instances keeping standby copies of the task.
	Standbys []Instance
	// LocalActive and LocalStandby say whether this instance is Active or
	// one of Standbys.
	LocalActive, LocalStandby bool
}

// Served says who answered a query and how fresh the answer is.
type Served struct {
	Instance Instance `json:"instance"`
	Task     TaskID   `json:"task"`
	// Stale is true when the answer came from a copy that follows the
	// changelog (a standby, or an active task still restoring), which the
	// caller allowed (AllowStale); false for a running active task.
	Stale bool `json:"stale"`
	// Lag is how many changelog records the copy had yet to apply as of
	// its last fetch: 0 for a running active task, which writes the
	// changelog.
	Lag int64 `json:"lag"`
	// Global is true for an answer from a global table, which every
	// instance holds whole: Task is then {-1, -1}, never Stale, and the
	// instance answers every key itself.
	Global bool `json:"global,omitempty"`
}

// NotAvailableError says that no copy this instance may answer from holds
// the task now: it is restoring, moving, or not assigned yet. Retry says
// whether asking again later may succeed.
type NotAvailableError struct {
	Store  string
	Task   TaskID
	Reason string
	Retry  bool
}

func (e *NotAvailableError) Error() string {
	s := fmt.Sprintf("store %q, task %s: not available: %s", e.Store, e.Task, e.Reason)
	if e.Retry {
		s += "; retry"
	}
	return s
}

// NotLocalError says that another instance holds the task: ask Owner (or,
// for a stale read, one of Standbys).
type NotLocalError struct {
	Store    string
	Task     TaskID
	Owner    Instance
	Standbys []Instance
}

func (e *NotLocalError) Error() string {
	addr := e.Owner.Address
	if addr == "" {
		addr = "no advertised address"
	}
	return fmt.Sprintf("store %q, task %s: held by instance %q (%s)", e.Store, e.Task, e.Owner.ID, addr)
}

// errAppNotStarted is NotAvailable before Run knows the topics.
func errAppNotStarted(store string) error {
	return &NotAvailableError{Store: store, Task: TaskID{-1, -1}, Reason: "the app has not started", Retry: true}
}

// queryStore finds a store and its sub-topology.
func (a *App) queryStore(name string) (*subtopology, *storeDef, error) {
	for _, s := range a.topo.subs {
		for _, d := range s.stores {
			if d.name == name {
				return s, d, nil
			}
		}
	}
	return nil, nil, fmt.Errorf("query: no store %q in the topology", name)
}

// storePartitions is the partition count of a store's sub-topology, known
// once Run has read the topics.
func (a *App) storePartitions(s *subtopology) (int32, bool) {
	if !a.topicsKnown.Load() || len(s.topics) == 0 {
		return 0, false
	}
	n := a.partitions[s.topics[0]]
	return n, n > 0
}

// owners is the newest owner map the units received from the group leader.
func (a *App) owners() *ownerMap {
	var best *ownerMap
	var seq uint64
	for _, u := range a.currentUnits() {
		u.bal.mu.Lock()
		if u.bal.owners != nil && u.bal.ownersSeq > seq {
			best, seq = u.bal.owners, u.bal.ownersSeq
		}
		u.bal.mu.Unlock()
	}
	return best
}

func (a *App) currentUnits() []*unit {
	a.statsMu.Lock()
	defer a.statsMu.Unlock()
	units := make([]*unit, 0, len(a.units))
	for _, u := range a.units {
		if u != nil {
			units = append(units, u)
		}
	}
	return units
}

// self is this instance as the group knows it.
func (a *App) self() Instance {
	return Instance{ID: a.InstanceID(), Address: a.cfg.advertisedAddress}
}

// KeyOwner says which task of store holds key (the serialized key, as the
// store's key serde writes it) and which instances hold that task, as of
// the last assignment this instance received. It fails with a
// NotAvailableError while the app has not started or joined its group. A
// global table's key is held here, as everywhere: this instance, task -1_-1.
func (a *App) KeyOwner(store string, key []byte) (KeyLocation, error) {
	if _, ok := a.topo.globals[store]; ok {
		// Every instance holds a global table whole: this one answers.
		me := a.self()
		return KeyLocation{Store: store, Task: TaskID{-1, -1}, Active: me, LocalActive: true}, nil
	}
	s, _, err := a.queryStore(store)
	if err != nil {
		return KeyLocation{}, err
	}
	n, ok := a.storePartitions(s)
	if !ok {
		return KeyLocation{}, errAppNotStarted(store)
	}
	id := TaskID{s.id, KafkaPartition(key, n)}
	loc := KeyLocation{Store: store, Task: id}
	active, standbys, ok := a.owners().owners(id)
	if !ok {
		return loc, &NotAvailableError{Store: store, Task: id, Reason: "no assignment received from the group yet", Retry: true}
	}
	me := a.InstanceID()
	loc.Active, loc.Standbys = active, standbys
	loc.LocalActive = active.ID != "" && active.ID == me
	for _, sb := range standbys {
		loc.LocalStandby = loc.LocalStandby || sb.ID == me
	}
	return loc, nil
}

// Owners lists every task the group's last assignment placed, with its
// active and standby instances, by task id (Store left empty: a task holds
// every store of its sub-topology); nil before the first one.
func (a *App) Owners() []KeyLocation {
	m := a.owners()
	if m == nil {
		return nil
	}
	ids := make([]TaskID, 0, len(m.tasks))
	for id := range m.tasks {
		ids = append(ids, id)
	}
	sortTasks(ids)
	me := a.InstanceID()
	out := make([]KeyLocation, 0, len(ids))
	for _, id := range ids {
		active, standbys, _ := m.owners(id)
		loc := KeyLocation{Task: id, Active: active, Standbys: standbys, LocalActive: active.ID != "" && active.ID == me}
		for _, sb := range standbys {
			loc.LocalStandby = loc.LocalStandby || sb.ID == me
		}
		out = append(out, loc)
	}
	return out
}

// readLocal runs read on the store of task id held by this instance, under
// its unit's query lock: the active task's store when it runs, else, when
// stale is allowed, the store of a restoring active task or of a standby.
// read gets the store's top layer (through the record cache when it has
// one) and must copy what it keeps. Otherwise it returns a NotLocalError
// or a NotAvailableError saying why.
func (a *App) readLocal(store string, id TaskID, stale bool, read func(b storeReader) error) (Served, error) {
	units := a.currentUnits()
	served := Served{Instance: a.self(), Task: id}
	restoring := false
	// Active copies first: a standby is never preferred to a running task.
	// Standbys only when stale answers are allowed: otherwise the second
	// pass would take every unit's query lock again for nothing.
	passes := 1
	if stale {
		passes = 2
	}
	_, def, _ := a.queryStore(store)
	for pass := 0; pass < passes; pass++ {
		for _, u := range units {
			done, err := func() (bool, error) {
				if def == nil || !def.opts.Queryable {
					u.queriesWaiting.Add(1)
					u.pmu.Lock()
					u.queriesWaiting.Add(-1)
					defer u.pmu.Unlock()
				}
				u.qmu.RLock()
				defer u.qmu.RUnlock()
				if u.closed {
					return false, nil
				}
				var t *task
				if pass == 0 {
					t = u.tm.tasks[id]
				} else if stale {
					t = u.sb.tasks[id]
				}
				if t == nil || t.sm == nil || t.sm.stores[store] == nil {
					return false, nil
				}
				ts := t.sm.stores[store]
				if ts.backend == nil {
					return false, nil // handed over to another task
				}
				if pass == 0 && t.restoring {
					restoring = true
					if !stale {
						return false, nil
					}
				}
				served.Stale = pass == 1 || t.restoring
				if served.Stale && ts.changelog != "" {
					served.Lag = max(ts.restoreEnd-ts.restoredTo, 0)
				}
				if !ts.shared {
					// Queries share the query lock: they take turns
					// on a store that does not lock its operations.
					ts.readMu.Lock()
					defer ts.readMu.Unlock()
				}
				return true, read(storeReader{ts})
			}()
			if done {
				return served, err
			}
		}
	}
	active, standbys, known := a.owners().owners(id)
	switch {
	case restoring:
		return Served{}, &NotAvailableError{Store: store, Task: id, Reason: "the task is restoring its stores here", Retry: true}
	case a.State() >= Closing:
		return Served{}, &NotAvailableError{Store: store, Task: id, Reason: "the app is " + a.State().String()}
	case !known:
		return Served{}, &NotAvailableError{Store: store, Task: id, Reason: "no assignment received from the group yet", Retry: true}
	case active.ID == "":
		return Served{}, &NotAvailableError{Store: store, Task: id, Reason: "no instance holds the task: it is moving", Retry: true}
	case active.ID == a.InstanceID():
		return Served{}, &NotAvailableError{Store: store, Task: id, Reason: "the task is being created here", Retry: true}
	}
	return Served{}, &NotLocalError{Store: store, Task: id, Owner: active, Standbys: standbys}
}

// storeReader reads a task's store for a query without changing what the
// processing path sees: a cached store is read through its cache without
// filling it.
type storeReader struct{ ts *taskStore }

func (r storeReader) get(key []byte) ([]byte, bool, error) {
	if r.ts.cache != nil {
		return r.ts.cache.Peek(key)
	}
	return r.ts.backend.Get(key)
}

// each calls fn with every key in [from, to) (nil: unbounded), in key
// order. The bytes are valid only during the call.
func (r storeReader) each(from, to []byte, fn func(k, v []byte) error) error {
	it, err := r.ts.backend.Range(from, to)
	if err != nil {
		return err
	}
	for it.Next() {
		if err := fn(it.Key(), it.Value()); err != nil {
			it.Close()
			return err
		}
	}
	if err := it.Err(); err != nil {
		it.Close()
		return err
	}
	return it.Close()
}

// KeyValueView is a read-only, typed view of a key-value store of an App,
// over the tasks this instance holds (QueryKeyValue). It is safe for
// concurrent use. A read of one key goes to the task of the key's
// partition; a range reads every task held here and says which partitions
// it could not read. Reads see every write processed so far, committed or
// not: under exactly-once, writes a transaction abort later undoes.
type KeyValueView[K, V any] struct {
	app   *App
	store string
	sub   *subtopology
	ks    serde.Serde[K]
	vs    serde.Serde[V]
	stale bool
	// global is set for a view of a global table (sub is then nil).
	global bool
}

// QueryKeyValue returns a view of the key-value store named store, read
// with its own key and value serdes (ks and vs, of the types the store was
// added with). It fails if the topology has no such store, or it is of
// another kind or other types.
//
// store may name a global table (AddGlobalTable): every instance holds all
// of it, so every read is answered here, never forwarded nor missing a
// partition, with Served.Global set; before the table is loaded (Run fills
// it before the App starts) a read fails with a NotAvailableError to retry.
func QueryKeyValue[K, V any](a *App, store string, ks serde.Serde[K], vs serde.Serde[V]) (*KeyValueView[K, V], error) {
	if g, ok := a.topo.globals[store]; ok {
		if k, v := reflect.TypeFor[K](), reflect.TypeFor[V](); k != g.keyType || v != g.valType {
			return nil, fmt.Errorf("query: global table %q holds %v -> %v, not %v -> %v", store, g.keyType, g.valType, k, v)
		}
		if ks == nil || vs == nil {
			return nil, fmt.Errorf("query: global table %q: nil serde", store)
		}
		return &KeyValueView[K, V]{app: a, store: store, ks: ks, vs: vs, global: true}, nil
	}
	s, def, err := a.queryStore(store)
	if err != nil {
		return nil, err
	}
	if def.kind != state.KeyValue {
		return nil, fmt.Errorf("query: store %q is a %s store, not key-value", store, def.kind.Name)
	}
	if k, v := reflect.TypeFor[K](), reflect.TypeFor[V](); k != def.keyType || v != def.valType {
		return nil, fmt.Errorf("query: store %q holds %v -> %v, not %v -> %v", store, def.keyType, def.valType, k, v)
	}
	if ks == nil || vs == nil {
		return nil, fmt.Errorf("query: store %q: nil serde", store)
	}
	return &KeyValueView[K, V]{app: a, store: store, sub: s, ks: ks, vs: vs}, nil
}

// AllowStale returns a view that, for a task not running here, answers
// from a standby or a restoring copy this instance holds, with its lag in
// Served. Without it such a read fails with a NotAvailableError.
func (v *KeyValueView[K, V]) AllowStale() *KeyValueView[K, V] {
	c := *v
	c.stale = true
	return &c
}

func (v *KeyValueView[K, V]) keyBytes(key K) ([]byte, error) {
	kb, err := v.ks.Serialize(key)
	if err != nil {
		return nil, fmt.Errorf("query store %q: serialize key: %w", v.store, err)
	}
	if kb == nil {
		return nil, fmt.Errorf("query store %q: the key serializes to null, which no store holds", v.store)
	}
	return kb, nil
}

// Get returns the value of key and who served it; ok is false when the
// store holds no value for key. It fails with a NotLocalError when
// another instance holds the key's task, and a NotAvailableError while no
// instance may answer for it (a restore, a move).
func (v *KeyValueView[K, V]) Get(key K) (value V, ok bool, served Served, err error) {
	kb, err := v.keyBytes(key)
	if err != nil {
		return value, false, Served{}, err
	}
	if v.global {
		return v.globalGet(kb)
	}
	n, known := v.app.storePartitions(v.sub)
	if !known {
		return value, false, Served{}, errAppNotStarted(v.store)
	}
	id := TaskID{v.sub.id, KafkaPartition(kb, n)}
	var raw []byte
	served, err = v.app.readLocal(v.store, id, v.stale, func(r storeReader) error {
		var err error
		raw, ok, err = r.get(kb)
		return err
	})
	if err != nil || !ok {
		return value, false, served, err
	}
	if value, err = v.vs.Deserialize(raw); err != nil {
		return value, false, served, fmt.Errorf("query store %q: task %s: value of key %q: %w", v.store, id, kb, err)
	}
	return value, true, served, nil
}

// KeyValue is one entry of a store.
type KeyValue[K, V any] struct {
	Key   K
	Value V
}

// RangeResult is what a range read found in the tasks held here.
type RangeResult[K, V any] struct {
	// Entries are in the order of the serialized keys.
	Entries []KeyValue[K, V]
	// Served says who served each task read.
	Served []Served
	// Missing are the partitions not read here, each with why: a
	// NotLocalError naming the instance to ask, or a NotAvailableError.
	Missing map[int32]error
}

// Range returns the entries whose serialized keys are in [from, to), of
// every task held here (the store's keys are spread over its partitions
// by hash: any partition may hold a key of the range).
func (v *KeyValueView[K, V]) Range(from, to K) (RangeResult[K, V], error) {
	fb, err := v.keyBytes(from)
	if err != nil {
		return RangeResult[K, V]{}, err
	}
	tb, err := v.keyBytes(to)
	if err != nil {
		return RangeResult[K, V]{}, err
	}
	return v.scan(fb, tb)
}

// Prefix returns the entries whose serialized keys begin with the
// serialized prefix (for a string key, the keys that begin with it).
func (v *KeyValueView[K, V]) Prefix(prefix K) (RangeResult[K, V], error) {
	pb, err := v.keyBytes(prefix)
	if err != nil {
		return RangeResult[K, V]{}, err
	}
	return v.scan(pb, prefixEnd(pb))
}

// All returns every entry of the tasks held here.
func (v *KeyValueView[K, V]) All() (RangeResult[K, V], error) { return v.scan(nil, nil) }

// prefixEnd is the first key past every key beginning with p; nil when
// there is none (p is all 0xff).
func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

type rawEntry struct{ k, v []byte }

func (v *KeyValueView[K, V]) scan(from, to []byte) (RangeResult[K, V], error) {
	var res RangeResult[K, V]
	if v.global {
		return v.globalScan(from, to)
	}
	n, known := v.app.storePartitions(v.sub)
	if !known {
		return res, errAppNotStarted(v.store)
	}
	type raw = rawEntry
	var all []raw
	for p := range n {
		id := TaskID{v.sub.id, p}
		served, err := v.app.readLocal(v.store, id, v.stale, func(r storeReader) error {
			return r.each(from, to, func(k, val []byte) error {
				all = append(all, raw{bytes.Clone(k), bytes.Clone(val)})
				return nil
			})
		})
		var na *NotAvailableError
		var nl *NotLocalError
		switch {
		case errors.As(err, &na) || errors.As(err, &nl):
			if res.Missing == nil {
				res.Missing = map[int32]error{}
			}
			res.Missing[p] = err
			continue
		case err != nil:
			return res, fmt.Errorf("query store %q: task %s: %w", v.store, id, err)
		}
		res.Served = append(res.Served, served)
	}
	// Keys are in one partition each: sorting merges the tasks' runs.
	sort.Slice(all, func(i, j int) bool { return bytes.Compare(all[i].k, all[j].k) < 0 })
	return v.decode(res, all)
}

// decode turns the raw entries, in key order, into res.Entries.
func (v *KeyValueView[K, V]) decode(res RangeResult[K, V], all []rawEntry) (RangeResult[K, V], error) {
	res.Entries = slices.Grow(res.Entries, len(all))
	for _, e := range all {
		k, err := v.ks.Deserialize(e.k)
		if err != nil {
			return res, fmt.Errorf("query store %q: key %q: %w", v.store, e.k, err)
		}
		val, err := v.vs.Deserialize(e.v)
		if err != nil {
			return res, fmt.Errorf("query store %q: value of key %q: %w", v.store, e.k, err)
		}
		res.Entries = append(res.Entries, KeyValue[K, V]{k, val})
	}
	return res, nil
}
