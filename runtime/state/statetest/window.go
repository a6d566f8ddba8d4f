package statetest

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
)

// Window is one window read from a window store.
type Window struct {
	Key   string
	Start int64
	Value string
}

// DrainWindows reads a window iterator to its end and closes it.
func DrainWindows(t testing.TB, it state.WindowIterator[string, *string]) []Window {
	t.Helper()
	var out []Window
	for it.Next() {
		v := "<nil>"
		if it.Value() != nil {
			v = *it.Value()
		}
		out = append(out, Window{it.Key(), it.Start(), v})
	}
	if err := it.Err(); err != nil {
		t.Fatalf("iterate: %v", err)
	}
	if err := it.Close(); err != nil {
		t.Fatalf("close iterator: %v", err)
	}
	return out
}

// windowModel is the reference window store: a map of every live window,
// with the store's expiry rules.
type windowModel struct {
	retention, interval int64
	dups                bool
	observed            int64
	seq                 uint32
	m                   map[windowModelKey]string
}

type windowModelKey struct {
	k     string
	start int64
	seq   uint32
}

// bytes is k's changelog key: serialized key ‖ start ‖ sequence number.
func (k windowModelKey) bytes() []byte {
	return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64([]byte(k.k), uint64(k.start)), k.seq)
}

func (m *windowModel) minLive() int64 {
	if m.observed < 0 {
		return 0
	}
	return max(m.observed-m.retention+1, 0)
}

// put applies a Put; it returns whether the window was expired, and the
// changelog record the store must log (nil for none).
func (m *windowModel) put(k string, v *string, start int64) (expired bool, logged *state.Change) {
	if v == nil && m.dups {
		return false, nil
	}
	m.observed = max(m.observed, start)
	if start < m.minLive() {
		return v != nil, nil
	}
	var seq uint32
	if m.dups {
		m.seq++
		seq = m.seq
	}
	key := windowModelKey{k, start, seq}.bytes()
	if v == nil {
		delete(m.m, windowModelKey{k, start, 0})
		return false, &state.Change{Key: key}
	}
	m.m[windowModelKey{k, start, seq}] = *v
	return false, &state.Change{Key: key, Value: []byte(*v)}
}

// windows returns the live windows accepted by keep, ordered as FetchAll
// orders them: by segment, then changelog key bytes.
func (m *windowModel) windows(keep func(k windowModelKey) bool) []Window {
	var keys []windowModelKey
	for k := range m.m {
		if k.start >= m.minLive() && keep(k) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b windowModelKey) int {
		return cmp.Or(cmp.Compare(a.start/m.interval, b.start/m.interval), bytes.Compare(a.bytes(), b.bytes()))
	})
	var out []Window
	for _, k := range keys {
		out = append(out, Window{k.k, k.start, m.m[k]})
	}
	return out
}

// WindowModel runs random operations against window stores over backends
// of kind, written directly and through a record cache, with and without
// duplicates, and compares every result with a model that expires windows
// as the store must; it restores the store from its changelog now and
// then and goes on with the restored one.
func WindowModel(t *testing.T, kind Kind) {
	for _, path := range writePaths {
		for _, dups := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/dups=%v", path.name, dups), func(t *testing.T) {
				for _, seed := range modelSeeds(t) {
					t.Run(fmt.Sprint(seed), func(t *testing.T) {
						runWindowModel(t, kind, path.cached, dups, seed, *opsFlag)
					})
				}
			})
		}
	}
}

func runWindowModel(t *testing.T, kind Kind, cached, dups bool, seed uint64, ops int) {
	r := rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d))
	keys := randomKeys(r)[:12] // few keys, so a key has several windows
	key := func() string { return keys[r.IntN(len(keys))] }
	opt := state.WindowStoreOptions{
		WindowSize:       100 * time.Millisecond,
		Retention:        300 * time.Millisecond,
		SegmentInterval:  100 * time.Millisecond,
		RetainDuplicates: dups,
	}
	sk := state.WindowKind(opt)
	log := &Recorder{}
	w := newWritePath("", cached, sk, kind.Open(t), log)
	open := func() state.WindowStore[string, *string] {
		return state.NewWindowStore("model", w.backend(), serde.String{}, NullableString{}, opt, w.logger())
	}
	s := open()
	m := &windowModel{retention: 300, interval: 100, dups: dups, observed: -1, m: map[windowModelKey]string{}}
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
	// start draws a window start near the observed time: mostly live,
	// sometimes expired, sometimes ahead.
	start := func() int64 {
		if r.IntN(4) == 0 {
			return max(0, m.observed+int64(r.IntN(80)))
		}
		return max(0, m.observed-int64(r.IntN(420)))
	}
	span := func() (int64, int64) {
		from := max(0, m.observed-int64(r.IntN(500)))
		if r.IntN(10) == 0 {
			from = 0
		}
		return from, from + int64(r.IntN(400))
	}
	compare := func(what string, want, got []Window) {
		t.Helper()
		if diff := gocmp.Diff(want, got); diff != "" {
			fail("%s (-want +got):\n%s", what, diff)
		}
	}

	for op = 0; op < ops; op++ {
		log.Time = int64(1000 + op)
		switch n := r.IntN(100); {
		case n < 35:
			k, st := key(), start()
			var v *string
			if r.IntN(8) != 0 {
				s := randomValue(r)
				v = &s
			}
			wantExpired, logged := m.put(k, v, st)
			expired, other := isExpired(s.Put(k, v, st))
			if other || expired != wantExpired {
				fail("Put(%q, %v, %d) at observed time %d: expired %v (error other than expiry: %v), want expired %v", k, v, st, m.observed, expired, other, wantExpired)
			}
			if logged != nil && !cached {
				logged.Timestamp = log.Time
				wantLog = append(wantLog, *logged)
			}
		case n < 45:
			k, st := key(), start()
			got, ok, err := s.Fetch(k, st)
			check("fetch", err)
			want := m.windows(func(mk windowModelKey) bool { return mk.k == k && mk.start == st })
			switch {
			case len(want) == 0 && ok:
				it, _ := s.FetchRange(k, 0, 1<<40)
				fail("Fetch(%q, %d) = %v, want none; observed %d; store %v; model %v", k, st, *got, m.observed, DrainWindows(t, it), m.windows(func(mk windowModelKey) bool { return mk.k == k }))
			case len(want) > 0 && (!ok || got == nil || *got != want[0].Value):
				fail("Fetch(%q, %d) = %v, %v; want %q", k, st, got, ok, want[0].Value)
			}
		case n < 58:
			k := key()
			from, to := span()
			want := m.windows(func(mk windowModelKey) bool { return mk.k == k && mk.start >= from && mk.start <= to })
			it, err := s.FetchRange(k, from, to)
			check("fetch range", err)
			compare(fmt.Sprintf("FetchRange(%q, %d, %d)", k, from, to), want, DrainWindows(t, it))
			it, err = s.BackwardFetchRange(k, from, to)
			check("backward fetch range", err)
			slices.Reverse(want)
			compare(fmt.Sprintf("BackwardFetchRange(%q, %d, %d)", k, from, to), want, DrainWindows(t, it))
		case n < 66:
			from, to := span()
			it, err := s.FetchAll(from, to)
			check("fetch all", err)
			compare(fmt.Sprintf("FetchAll(%d, %d)", from, to), m.windows(func(mk windowModelKey) bool { return mk.start >= from && mk.start <= to }), DrainWindows(t, it))
		case n < 70:
			it, err := s.All()
			check("all", err)
			compare("All", m.windows(func(windowModelKey) bool { return true }), DrainWindows(t, it))
		case n < 73:
			got, err := s.ObservedTime()
			check("observed time", err)
			if got != m.observed {
				fail("ObservedTime = %d, want %d", got, m.observed)
			}
		case n < 82:
			check("commit", w.commit())
			check("segments", checkSegmentsDropped(w.backend(), m.observed, m.retention, m.interval))
		case n < 84:
			// The store is lost: it is restored from its changelog, and
			// the restored one goes on.
			check("commit", w.commit())
			if !cached {
				if diff := gocmp.Diff(wantLog, log.Changes); diff != "" {
					fail("changelog (-want +got):\n%s", diff)
				}
			}
			w.reset(restoreLog(t, r, kind, sk, log.Changes))
			s = open()
			check("segments after restore", checkSegmentsDropped(w.backend(), m.observed, m.retention, m.interval))
			got, err := s.ObservedTime()
			check("observed time", err)
			if got != m.observed {
				fail("ObservedTime after restore = %d, want %d", got, m.observed)
			}
			it, err := s.All()
			check("all", err)
			compare("All after restore", m.windows(func(windowModelKey) bool { return true }), DrainWindows(t, it))
		case n < 86:
			if kind.Reopen != nil {
				check("commit", w.commit())
				w.reset(kind.Reopen(t, w.b))
				s = open()
			}
		default:
			// An exactly-once abort: what the cache holds is dropped, and
			// the store is as of the last commit.
			if cached && r.IntN(3) == 0 {
				check("commit", w.commit())
				pre := m.windows(func(windowModelKey) bool { return true })
				v := "aborted"
				check("put", s.Put(key(), &v, m.observed+500)) // time jumps, and segments expire
				w.cache.Discard()
				it, err := s.All()
				check("all", err)
				compare("All after abort", pre, DrainWindows(t, it))
				got, err := s.ObservedTime()
				check("observed time", err)
				if got != m.observed {
					fail("ObservedTime after abort = %d, want %d", got, m.observed)
				}
			}
		}
		if w.full {
			check("commit", w.commit())
		}
	}
	check("commit", w.commit())
	it, err := s.All()
	check("all", err)
	compare("final contents", m.windows(func(windowModelKey) bool { return true }), DrainWindows(t, it))
}
