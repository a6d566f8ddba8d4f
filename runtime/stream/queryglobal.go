package stream

import (
	"bytes"
	"errors"
	"fmt"
)

// Queries of global tables (QueryKeyValue of a global table's name). A
// global table is held whole by every instance, so a query never looks for
// an owner: it reads the App's one shared copy, as the processors do,
// while the global updater writes it (globalStore's lock; an iterator
// reads its snapshot outside it).

// globalServed is who answers a global table's query: this instance.
func (a *App) globalServed() Served {
	return Served{Instance: a.self(), Task: TaskID{-1, -1}, Global: true}
}

// queryGlobal returns the App's global table store, or a NotAvailableError:
// to retry while Run has not loaded the tables, and for good once the App
// has closed them.
func (a *App) queryGlobal(store string) (*globalStore, error) {
	m := a.queryGlobals.Load()
	if m == nil {
		if a.State() >= Closing {
			return nil, &NotAvailableError{Store: store, Task: TaskID{-1, -1}, Reason: "the app is " + a.State().String()}
		}
		return nil, &NotAvailableError{Store: store, Task: TaskID{-1, -1}, Reason: "the global table is loading", Retry: true}
	}
	g := (*m)[store]
	if g == nil {
		return nil, fmt.Errorf("query: no global table %q", store) // QueryKeyValue checked the topology
	}
	return g, nil
}

// globalErr turns a closed table into the NotAvailableError of a query.
func (a *App) globalErr(store string, err error) error {
	if errors.Is(err, errGlobalClosed) {
		return &NotAvailableError{Store: store, Task: TaskID{-1, -1}, Reason: "the app is " + a.State().String()}
	}
	return fmt.Errorf("query global table %q: %w", store, err)
}

func (v *KeyValueView[K, V]) globalGet(kb []byte) (value V, ok bool, served Served, err error) {
	g, err := v.app.queryGlobal(v.store)
	if err != nil {
		return value, false, Served{}, err
	}
	raw, ok, err := g.queryGet(kb)
	if err != nil {
		return value, false, Served{}, v.app.globalErr(v.store, err)
	}
	served = v.app.globalServed()
	if !ok {
		return value, false, served, nil
	}
	if value, err = v.vs.Deserialize(raw); err != nil {
		return value, false, served, fmt.Errorf("query global table %q: value of key %q: %w", v.store, kb, err)
	}
	return value, true, served, nil
}

func (v *KeyValueView[K, V]) globalScan(from, to []byte) (RangeResult[K, V], error) {
	var res RangeResult[K, V]
	g, err := v.app.queryGlobal(v.store)
	if err != nil {
		return res, err
	}
	var all []rawEntry
	err = g.queryEach(from, to, func(k, val []byte) error {
		all = append(all, rawEntry{bytes.Clone(k), bytes.Clone(val)})
		return nil
	})
	if err != nil {
		return res, v.app.globalErr(v.store, err)
	}
	res.Served = []Served{v.app.globalServed()}
	return v.decode(res, all)
}
