package statetest

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
)

var (
	seedFlag = flag.Uint64("state.seed", 0, "run the model tests with only this seed")
	opsFlag  = flag.Int("state.ops", 400, "operations per model test run")
)

// modelSeeds are fixed seeds, so a run is reproducible, plus one from the
// clock, so that runs over time explore more; -state.seed replays one.
func modelSeeds(t *testing.T) []uint64 {
	if *seedFlag != 0 {
		return []uint64{*seedFlag}
	}
	seeds := []uint64{1, 2, 3, 4, 5, 6, 7, 8}
	if testing.Short() {
		seeds = seeds[:2]
	}
	return append(seeds, uint64(time.Now().UnixNano()))
}

// RunModel runs random sequences of operations against backends of kind,
// through the typed store and directly, and compares every result with a
// map: one subtest per seed (see modelSeeds), of -state.ops operations.
func RunModel(t *testing.T, kind Kind) {
	for _, seed := range modelSeeds(t) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			RunModelSeed(t, kind, seed, *opsFlag)
		})
	}
}

// model is the reference: a map, with keys sorted on demand (Go compares
// strings bytewise, as the backends do).
type model map[string]string

func (m model) between(from, to *string) []KV[string, string] {
	var out []KV[string, string]
	for _, k := range slices.Sorted(mapsKeys(m)) {
		if (from == nil || k >= *from) && (to == nil || k < *to) {
			out = append(out, KV[string, string]{k, m[k]})
		}
	}
	return out
}

func mapsKeys(m model) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func randomKeys(r *rand.Rand) []string {
	keys := []string{"", "a", "a\x00", "ab", "b", "\xff", "\xff\xff", "ü"}
	const alphabet = "ab\x00\xffz"
	for len(keys) < 40 {
		n := r.IntN(6)
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		keys = append(keys, string(b))
	}
	return keys
}

func randomValue(r *rand.Rand) string {
	if r.IntN(8) == 0 {
		return "" // an empty value is a value, not a delete
	}
	return fmt.Sprintf("v%d", r.IntN(1000))
}

// RunModelSeed runs the model test of RunModel once: ops operations drawn
// from seed.
func RunModelSeed(t *testing.T, kind Kind, seed uint64, ops int) {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	keys := randomKeys(r)
	key := func() string { return keys[r.IntN(len(keys))] }

	b := kind.Open(t)
	log := &Recorder{}
	s := state.NewKeyValueStore("model", b, serde.String{}, serde.String{}, log)
	m := model{}
	var wantLog []state.Change

	op := 0
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d (replay with -state.seed=%d), op %d: %s", seed, seed, op, fmt.Sprintf(format, args...))
	}
	check := func(what string, err error) {
		t.Helper()
		if err != nil {
			fail("%s: %v", what, err)
		}
	}
	put := func(k, v string) {
		check("put", s.Put(k, v))
		m[k] = v
		wantLog = append(wantLog, state.Change{Key: []byte(k), Value: []byte(v), Timestamp: log.Time})
	}
	del := func(k string) {
		check("delete", s.Delete(k))
		delete(m, k)
		wantLog = append(wantLog, state.Change{Key: []byte(k), Value: nil, Timestamp: log.Time})
	}

	// bounds draws a range for the backend: each end a key or unbounded.
	bounds := func() (from, to *string, fb, tb []byte) {
		if r.IntN(2) == 0 {
			k := key()
			from, fb = &k, []byte(k)
		}
		if r.IntN(2) == 0 {
			k := key()
			to, tb = &k, []byte(k)
		}
		return from, to, fb, tb
	}

	for op = 0; op < ops; op++ {
		log.Time = int64(op) // the changelog records carry the record's time
		switch n := r.IntN(100); {
		case n < 26:
			put(key(), randomValue(r))
		case n < 28:
			// A range drop, which is not logged.
			from, to, fb, tb := bounds()
			check("delete range", b.(state.RangeDeleter).DeleteRange(fb, tb))
			for _, e := range m.between(from, to) {
				delete(m, e.K)
			}
		case n < 43:
			k := key()
			got, ok, err := s.Get(k)
			check("get", err)
			want, wantOK := m[k]
			if got != want || ok != wantOK {
				fail("Get(%q) = %q, %v; want %q, %v", k, got, ok, want, wantOK)
			}
		case n < 53:
			del(key())
		case n < 63:
			k, v := key(), randomValue(r)
			got, existed, err := s.PutIfAbsent(k, v)
			check("put if absent", err)
			if old, ok := m[k]; ok {
				if !existed || got != old {
					fail("PutIfAbsent(%q) = %q, %v; want %q, true", k, got, existed, old)
				}
			} else {
				if existed || got != "" {
					fail("PutIfAbsent(%q) = %q, %v; want \"\", false", k, got, existed)
				}
				m[k] = v
				wantLog = append(wantLog, state.Change{Key: []byte(k), Value: []byte(v), Timestamp: log.Time})
			}
		case n < 71:
			from, to := key(), key()
			it, err := s.Range(from, to)
			check("range", err)
			if diff := cmp.Diff(m.between(&from, &to), Drain(t, it)); diff != "" {
				fail("Range(%q, %q) (-want +got):\n%s", from, to, diff)
			}
		case n < 75:
			it, err := s.All()
			check("all", err)
			if diff := cmp.Diff(m.between(nil, nil), Drain(t, it)); diff != "" {
				fail("All (-want +got):\n%s", diff)
			}
		case n < 81:
			// The backend directly, with unbounded ends.
			from, to, fb, tb := bounds()
			it, err := b.Range(fb, tb)
			check("backend range", err)
			var want []state.Change
			for _, e := range m.between(from, to) {
				want = append(want, state.Change{Key: []byte(e.K), Value: []byte(e.V)})
			}
			if diff := cmp.Diff(want, DrainRaw(t, it)); diff != "" {
				fail("backend Range(%q, %q) (-want +got):\n%s", fb, tb, diff)
			}
		case n < 84:
			got, err := s.ApproximateCount()
			check("count", err)
			if kind.ExactCount && got != int64(len(m)) {
				fail("ApproximateCount = %d, want %d", got, len(m))
			}
			if got < 0 {
				fail("ApproximateCount = %d, want >= 0", got)
			}
		case n < 88:
			// Restoration: applied in order, not logged.
			changes := make([]state.Change, 1+r.IntN(8))
			for i := range changes {
				k := key()
				changes[i].Key = []byte(k)
				if r.IntN(3) == 0 {
					delete(m, k)
				} else {
					v := randomValue(r)
					changes[i].Value = []byte(v)
					m[k] = v
				}
			}
			check("apply batch", b.(state.Restorer).ApplyBatch(changes))
		case n < 91:
			check("flush", b.Flush())
		case n < 92:
			if kind.Reopen != nil {
				b = kind.Reopen(t, b)
				s = state.NewKeyValueStore("model", b, serde.String{}, serde.String{}, log)
			}
		default:
			// Writes while an iterator is open are not seen by it.
			want := m.between(nil, nil)
			it, err := s.All()
			check("all", err)
			var got []KV[string, string]
			for it.Next() {
				got = append(got, KV[string, string]{it.Key(), it.Value()})
				if len(got) == 1 {
					put(fmt.Sprintf("new%d", op), "x")
					del(key())
				}
			}
			check("iterate", it.Err())
			check("close iterator", it.Close())
			if diff := cmp.Diff(want, got); diff != "" {
				fail("All while writing (-want +got):\n%s", diff)
			}
		}
		if len(log.Changes) != len(wantLog) {
			fail("changelog has %d changes, want %d", len(log.Changes), len(wantLog))
		}
	}
	if diff := cmp.Diff(wantLog, log.Changes); diff != "" {
		fail("changelog (-want +got):\n%s", diff)
	}
	it, err := s.All()
	check("all", err)
	if diff := cmp.Diff(m.between(nil, nil), Drain(t, it)); diff != "" {
		fail("final contents (-want +got):\n%s", diff)
	}
}
