package statetest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/kgen-dev/kgen/runtime/state"
)

// NullableString is a serde of *string whose nil is a null (nil bytes),
// for tests of stores where a null value deletes.
type NullableString struct{}

func (NullableString) Serialize(v *string) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	return append([]byte{}, *v...), nil
}

func (NullableString) Deserialize(b []byte) (*string, error) {
	if b == nil {
		return nil, nil
	}
	s := string(b)
	return &s, nil
}

// writePath is how a model test writes a store: straight to the backend,
// the store logging each write, or through a record cache that the test
// commits now and then as the runtime does: the cache's drops and dirty
// writes go to the backend, and the writes are logged through the kind's
// ToChangelog.
type writePath struct {
	name   string
	cached bool
	kind   *state.StoreKind
	b      state.Backend // the store's backend, under the cache
	cache  *state.Cache
	log    *Recorder
	full   bool // the cache asked for a commit
	limit  int
}

// writePaths are the ways model tests write a store.
var writePaths = []struct {
	name   string
	cached bool
}{{"direct", false}, {"cached", true}}

func newWritePath(name string, cached bool, kind *state.StoreKind, b state.Backend, log *Recorder) *writePath {
	w := &writePath{name: name, cached: cached, kind: kind, log: log, limit: 16}
	w.reset(b)
	return w
}

// reset puts the path over b (a new or restored backend).
func (w *writePath) reset(b state.Backend) {
	w.b, w.cache, w.full = b, nil, false
	if w.cached {
		w.cache = state.NewCache(b, w.limit, func() { w.full = true })
		w.cache.SetClock(w.log)
	}
}

// backend is what the typed store is opened over.
func (w *writePath) backend() state.Backend {
	if w.cache != nil {
		return w.cache
	}
	return w.b
}

// logger is what the typed store logs to: nothing when the cache's
// writes are logged at the commit.
func (w *writePath) logger() state.ChangeLogger {
	if w.cache != nil {
		return nil
	}
	return w.log
}

// commit takes what the cache holds to the backend and the log.
func (w *writePath) commit() error {
	w.full = false
	if w.cache == nil {
		return nil
	}
	if err := state.DeleteRanges(w.b, w.cache.Drops()); err != nil {
		return err
	}
	changes := w.cache.Dirty()
	for _, c := range changes {
		if w.kind.ToChangelog == nil {
			w.log.LogChange(c.Key, c.Value, c.Timestamp)
		} else if lc, ok := w.kind.ToChangelog(c); ok {
			w.log.LogChange(lc.Key, lc.Value, lc.Timestamp)
		}
	}
	return state.ApplyChanges(w.b, changes)
}

// restoreLog restores log into a new backend of kind k, in batches of
// random sizes, as the runtime would after losing the store.
func restoreLog(t *testing.T, r *rand.Rand, k Kind, sk *state.StoreKind, log []state.Change) state.Backend {
	t.Helper()
	b := k.Open(t)
	for len(log) > 0 {
		n := min(1+r.IntN(20), len(log))
		// Restoration hands over copies of the fetched records.
		batch := make([]state.Change, n)
		for i, c := range log[:n] {
			batch[i] = state.Change{Key: append([]byte{}, c.Key...), Timestamp: c.Timestamp}
			if c.Value != nil {
				batch[i].Value = append([]byte{}, c.Value...)
			}
		}
		if err := sk.Restore(b, batch); err != nil {
			t.Fatalf("restore: %v", err)
		}
		log = log[n:]
	}
	return b
}

// checkSegmentsDropped checks that b holds no record of a segment wholly
// expired at observed, given the retention and segment interval (ms):
// retention drops segments, not only hides them.
func checkSegmentsDropped(b state.Backend, observed, retention, interval int64) error {
	if observed < 0 {
		return nil
	}
	minSeg := max(observed-retention+1, 0) / interval
	it, err := b.Range(nil, nil)
	if err != nil {
		return err
	}
	defer it.Close()
	for it.Next() {
		k := it.Key()
		if k[0] == 0xff {
			continue // the store's own keys
		}
		if seg := int64(binary.BigEndian.Uint64(k)); seg < minSeg {
			return fmt.Errorf("backend holds key %x of segment %d, below the first live segment %d (observed time %d)", k, seg, minSeg, observed)
		}
	}
	return it.Err()
}

// isExpired tells whether err says a window was past retention, and
// whether that is all it says.
func isExpired(err error) (expired, other bool) {
	if err == nil {
		return false, false
	}
	if errors.Is(err, state.ErrExpired) {
		return true, false
	}
	return false, true
}
