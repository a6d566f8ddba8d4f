package streamtest

import (
	"fmt"
	"time"

	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
)

// Window is one window (or session) a windowed aggregation keeps in its
// store: the key with its window, and the stored value.
type Window[K, V any] struct {
	Key   serde.Windowed[K]
	Value V
}

// Windows lists every window kept in window store name, over every
// partition's copy, partition by partition, each in its store's order. size
// gives each window its end (start+size), as the time-windowed key serde
// does: the windows' size, a sliding window's time difference.
func Windows[K, V any](d *Driver, name string, size time.Duration) ([]Window[K, V], error) {
	n := d.d.StorePartitions(name)
	if n == 0 {
		return nil, fmt.Errorf("no store %q", name)
	}
	var out []Window[K, V]
	for p := range n {
		s := d.d.StoreAt(name, p)
		ws, ok := s.(state.WindowStore[K, V])
		if !ok {
			return nil, fmt.Errorf("store %q is %T, not a WindowStore of the requested types", name, s)
		}
		it, err := ws.All()
		if err != nil {
			return nil, err
		}
		for it.Next() {
			out = append(out, Window[K, V]{serde.Windowed[K]{Key: it.Key(), Start: it.Start(), End: it.Start() + size.Milliseconds()}, it.Value()})
		}
		err = it.Err()
		if cerr := it.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Sessions lists every session kept in session store name, over every
// partition's copy, partition by partition, each in its store's order.
func Sessions[K, V any](d *Driver, name string) ([]Window[K, V], error) {
	n := d.d.StorePartitions(name)
	if n == 0 {
		return nil, fmt.Errorf("no store %q", name)
	}
	var out []Window[K, V]
	for p := range n {
		s := d.d.StoreAt(name, p)
		ss, ok := s.(state.SessionStore[K, V])
		if !ok {
			return nil, fmt.Errorf("store %q is %T, not a SessionStore of the requested types", name, s)
		}
		it, err := ss.All()
		if err != nil {
			return nil, err
		}
		for it.Next() {
			out = append(out, Window[K, V]{serde.Windowed[K]{Key: it.Key(), Start: it.Start(), End: it.End()}, it.Value()})
		}
		err = it.Err()
		if cerr := it.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
