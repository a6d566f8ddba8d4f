// Package statetest is the conformance suite of state.Backend
// implementations, shared by the tests of runtime/state (in memory) and of
// runtime/state/pebblestore, and usable by any other backend: Run checks a
// backend against a map model and against what the runtime relies on, and
// the Benchmark functions measure it through a typed store.
//
// The model test takes two flags, registered by this package, so every test
// binary that imports it accepts them:
//
//	-state.seed=N  run the model test with only seed N (a failure prints its seed)
//	-state.ops=N   operations per model test run (default 400)
//
// For example: go test ./runtime/state/pebblestore -run 'TestConformance/Model' -state.seed=7
package statetest

import (
	"errors"
	"testing"

	"github.com/kgen-dev/kgen/runtime/state"
)

// Kind opens one kind of backend for a test. The backend must also implement
// state.Restorer and state.RangeDeleter, as the runtime's backends do.
type Kind struct {
	// Name names the kind in subtest names: "memory", "pebble".
	Name string
	// Open returns a new, empty backend, closed when the test ends (see
	// CloseAtEnd).
	Open func(t testing.TB) state.Backend
	// Reopen flushes, closes and reopens b with its contents, closed when the
	// test ends. Nil for a kind that does not persist.
	Reopen func(t testing.TB, b state.Backend) state.Backend
	// ExactCount tells whether ApproximateCount is exact.
	ExactCount bool
}

// Checks are the conformance checks Run runs, by name.
var Checks = []struct {
	Name  string
	Check func(t *testing.T, kind Kind)
}{
	{"Model", RunModel},
	{"ChangelogSeesExactlyTheWrites", ChangelogSeesExactlyTheWrites},
	{"NilSerializedValueDeletes", NilSerializedValueDeletes},
	{"ApplyBatchRestores", ApplyBatchRestores},
	{"DeleteRangeDrops", DeleteRangeDrops},
	{"DeleteRangeAfterRestoreAndReopen", DeleteRangeAfterRestoreAndReopen},
	{"BackendCopies", BackendCopies},
	{"IteratorValuesKept", IteratorValuesKept},
	{"RangeEmptyAndReversed", RangeEmptyAndReversed},
	{"ClosedBackendErrors", ClosedBackendErrors},
	{"WindowModel", WindowModel},
	{"SessionModel", SessionModel},
	{"TimestampedStore", TimestampedStore},
	{"TimestampedWindowStore", TimestampedWindowStore},
	{"VersionedModel", VersionedModel},
}

// Run runs every check of Checks against each kind, as subtests named
// <check>/<kind>.
func Run(t *testing.T, kinds ...Kind) {
	t.Helper()
	for _, c := range Checks {
		t.Run(c.Name, func(t *testing.T) {
			for _, kind := range kinds {
				t.Run(kind.Name, func(t *testing.T) { c.Check(t, kind) })
			}
		})
	}
}

// CloseAtEnd closes b when the test ends unless the test closed it already;
// a failing Close (such as a leaked iterator) fails the test.
func CloseAtEnd(t testing.TB, b state.Backend) {
	t.Helper()
	t.Cleanup(func() {
		// Closing a closed backend fails with state.ErrClosed, and does
		// nothing else.
		if err := b.Close(); err != nil && !errors.Is(err, state.ErrClosed) {
			t.Errorf("close backend: %v", err)
		}
	})
}

// Recorder is a state.ChangeLogger that keeps every change, with its
// timestamp. Its record time is Time, which a test sets as a task would for
// each record.
type Recorder struct {
	Changes []state.Change
	Time    int64
}

// LogChange implements state.ChangeLogger.
func (r *Recorder) LogChange(key, value []byte, timestamp int64) {
	r.Changes = append(r.Changes, state.Change{Key: key, Value: value, Timestamp: timestamp})
}

// RecordTime implements state.RecordClock.
func (r *Recorder) RecordTime() int64 { return r.Time }

// KV is one entry read from a typed store.
type KV[K, V any] struct {
	K K
	V V
}

// Drain reads an iterator to its end and closes it; an error fails the test.
func Drain[K, V any](t testing.TB, it state.KeyValueIterator[K, V]) []KV[K, V] {
	t.Helper()
	var out []KV[K, V]
	for it.Next() {
		out = append(out, KV[K, V]{it.Key(), it.Value()})
	}
	if err := it.Err(); err != nil {
		t.Fatalf("iterate: %v", err)
	}
	if err := it.Close(); err != nil {
		t.Fatalf("close iterator: %v", err)
	}
	return out
}

// DrainRaw reads a backend iterator to its end, copying, and closes it; an
// error fails the test.
func DrainRaw(t testing.TB, it state.Iterator) []state.Change {
	t.Helper()
	var out []state.Change
	for it.Next() {
		out = append(out, state.Change{Key: append([]byte{}, it.Key()...), Value: append([]byte{}, it.Value()...)})
	}
	if err := it.Err(); err != nil {
		t.Fatalf("iterate: %v", err)
	}
	if err := it.Close(); err != nil {
		t.Fatalf("close iterator: %v", err)
	}
	return out
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
