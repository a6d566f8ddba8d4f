package statetest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
)

// versionedModel is what a versioned store should answer: every version
// ever accepted (nil: a tombstone) by key and timestamp, and the observed
// time. It never forgets: what the history retention hides, its queries
// do not ask for.
type versionedModel struct {
	retention int64
	observed  int64
	m         map[string]map[int64]*string
}

func (m *versionedModel) minLive() int64 {
	if m.observed == math.MinInt64 {
		return math.MinInt64
	}
	return m.observed - m.retention
}

func (m *versionedModel) times(k string) []int64 {
	ts := make([]int64, 0, len(m.m[k]))
	for t := range m.m[k] {
		ts = append(ts, t)
	}
	slices.Sort(ts)
	return ts
}

// put is Kafka Streams' put: refused before observed - retention (checked
// before the time advances), else the version of ts, valid up to the next
// one.
func (m *versionedModel) put(k string, v *string, ts int64) int64 {
	if ts < m.minLive() {
		return state.PutNotPut
	}
	m.observed = max(m.observed, ts)
	if m.m[k] == nil {
		m.m[k] = map[int64]*string{}
	}
	m.m[k][ts] = v
	for _, t := range m.times(k) {
		if t > ts {
			return t
		}
	}
	return state.PutValidToUndefined
}

// asOf is the version valid at asOf; latest asks for the latest.
func (m *versionedModel) asOf(k string, asOf int64, latest bool) (state.VersionedRecord[*string], bool) {
	ts := m.times(k)
	if len(ts) == 0 {
		return state.VersionedRecord[*string]{}, false
	}
	last := ts[len(ts)-1]
	if latest || asOf < m.minLive() {
		// The latest version never expires; nothing else is seen past
		// the history.
		if v := m.m[k][last]; v != nil && (latest || last <= asOf) {
			return state.VersionedRecord[*string]{Value: v, Timestamp: last, ValidTo: state.PutValidToUndefined}, true
		}
		return state.VersionedRecord[*string]{}, false
	}
	i, found := slices.BinarySearch(ts, asOf)
	if !found {
		i--
	}
	if i < 0 || m.m[k][ts[i]] == nil {
		return state.VersionedRecord[*string]{}, false
	}
	r := state.VersionedRecord[*string]{Value: m.m[k][ts[i]], Timestamp: ts[i], ValidTo: state.PutValidToUndefined}
	if i+1 < len(ts) {
		r.ValidTo = ts[i+1]
	}
	return r, true
}

// VersionedModel checks a versioned key-value store over a backend of kind
// against a model of every version, with random puts (out of order,
// some older than the history retention), tombstones, deletes, Get and
// GetAsOf (within the history and past it), written directly and through
// a record cache committed as the runtime does; its changelog (the
// accepted puts, in order, with their timestamps) restored into a new
// backend answers the same, as does a reopened Pebble store, and an
// exactly-once abort leaves it as of the last commit.
func VersionedModel(t *testing.T, kind Kind) {
	for _, path := range writePaths {
		t.Run(path.name, func(t *testing.T) {
			for _, seed := range modelSeeds(t) {
				t.Run(fmt.Sprint(seed), func(t *testing.T) {
					runVersionedModel(t, kind, path.cached, seed, *opsFlag)
				})
			}
		})
	}
}

func runVersionedModel(t *testing.T, kind Kind, cached bool, seed uint64, ops int) {
	r := rand.New(rand.NewPCG(seed, seed^0x2545f4914f6cdd1d))
	keys := randomKeys(r)[:10] // few keys, so a key has many versions
	key := func() string { return keys[r.IntN(len(keys))] }
	const retention = 300
	sk := state.VersionedKind(retention * time.Millisecond)
	log := &Recorder{}
	w := newWritePath("", cached, sk, kind.Open(t), log)
	open := func() state.VersionedKeyValueStore[string, *string] {
		// A versioned store logs itself, through a cache too.
		return state.NewVersionedKeyValueStore("versioned", w.backend(), serde.String{}, NullableString{}, retention*time.Millisecond, log)
	}
	s := open()
	m := &versionedModel{retention: retention, observed: math.MinInt64, m: map[string]map[int64]*string{}}
	var wantLog []state.Change
	committed := struct {
		log  int
		want int
		m    versionedModel
	}{}
	snapshot := func() {
		committed.log, committed.want = len(log.Changes), len(wantLog)
		cp := map[string]map[int64]*string{}
		for k, vs := range m.m {
			cp[k] = map[int64]*string{}
			for t, v := range vs {
				cp[k][t] = v
			}
		}
		committed.m = versionedModel{retention: m.retention, observed: m.observed, m: cp}
	}
	commit := func() error {
		if err := w.commit(); err != nil {
			return err
		}
		snapshot()
		return nil
	}
	snapshot()

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
	// when draws a time near the observed time: mostly in the history,
	// sometimes past it, sometimes ahead.
	when := func() int64 {
		base := max(m.observed, 1000)
		if r.IntN(4) == 0 {
			return base + int64(r.IntN(80))
		}
		return base - int64(r.IntN(420))
	}
	same := func(what string, want state.VersionedRecord[*string], wantOK bool, got state.VersionedRecord[*string], ok bool) {
		t.Helper()
		if ok != wantOK || (ok && (*got.Value != *want.Value || got.Timestamp != want.Timestamp || got.ValidTo != want.ValidTo)) {
			fail("%s = %s, %v; want %s, %v (observed %d)", what, show(got), ok, show(want), wantOK, m.observed)
		}
	}
	checkAll := func(what string) {
		t.Helper()
		for _, k := range keys {
			want, wantOK := m.asOf(k, 0, true)
			got, ok, err := s.Get(k)
			check("get", err)
			same(fmt.Sprintf("%s: Get(%q)", what, k), want, wantOK, got, ok)
			for _, t := range m.times(k) {
				for _, at := range []int64{t - 1, t, t + 1} {
					want, wantOK := m.asOf(k, at, false)
					got, ok, err := s.GetAsOf(k, at)
					check("get as of", err)
					same(fmt.Sprintf("%s: GetAsOf(%q, %d)", what, k, at), want, wantOK, got, ok)
				}
			}
		}
		got, err := s.ObservedTime()
		check("observed time", err)
		if got != m.observed {
			fail("%s: ObservedTime = %d, want %d", what, got, m.observed)
		}
	}

	for op = 0; op < ops; op++ {
		log.Time = int64(5000 + op) // the processed record's time, which the store must not use
		switch n := r.IntN(100); {
		case n < 40:
			k, ts := key(), when()
			var v *string
			if r.IntN(8) != 0 {
				s := randomValue(r)
				v = &s
			}
			want := m.put(k, v, ts)
			got, err := s.Put(k, v, ts)
			check("put", err)
			if got != want {
				fail("Put(%q, %s, %d) = %d, want %d", k, str(v), ts, got, want)
			}
			if want != state.PutNotPut {
				c := state.Change{Key: []byte(k), Timestamp: ts}
				if v != nil {
					c.Value = []byte(*v)
				}
				wantLog = append(wantLog, c)
			}
		case n < 46:
			k, ts := key(), when()
			var want state.VersionedRecord[*string]
			var wantOK bool
			if ts >= m.minLive() {
				want, wantOK = m.asOf(k, ts, false)
				m.put(k, nil, ts)
				wantLog = append(wantLog, state.Change{Key: []byte(k), Timestamp: ts})
			}
			got, ok, err := s.Delete(k, ts)
			check("delete", err)
			same(fmt.Sprintf("Delete(%q, %d)", k, ts), want, wantOK, got, ok)
		case n < 56:
			k := key()
			want, wantOK := m.asOf(k, 0, true)
			got, ok, err := s.Get(k)
			check("get", err)
			same(fmt.Sprintf("Get(%q)", k), want, wantOK, got, ok)
		case n < 76:
			k, at := key(), when()-int64(r.IntN(100))
			want, wantOK := m.asOf(k, at, false)
			got, ok, err := s.GetAsOf(k, at)
			check("get as of", err)
			same(fmt.Sprintf("GetAsOf(%q, %d)", k, at), want, wantOK, got, ok)
		case n < 86:
			check("commit", commit())
		case n < 89:
			// The store is lost: it is restored from its changelog, and
			// the restored one goes on.
			check("commit", commit())
			if diff := gocmp.Diff(wantLog, log.Changes); diff != "" {
				fail("changelog (-want +got):\n%s", diff)
			}
			w.reset(restoreLog(t, r, kind, sk, log.Changes))
			s = open()
			checkAll("after restore")
		case n < 91:
			if kind.Reopen != nil {
				check("commit", commit())
				w.reset(kind.Reopen(t, w.b))
				s = open()
				checkAll("after reopen")
			}
		default:
			// An exactly-once abort: what the cache holds is dropped with
			// the transaction's changelog records, and the store is as of
			// the last commit.
			if cached && r.IntN(3) == 0 {
				w.cache.Discard()
				log.Changes = log.Changes[:committed.log]
				wantLog = wantLog[:committed.want]
				*m = committed.m
				snapshot()
				checkAll("after abort")
			}
		}
		if w.full {
			check("commit", commit())
		}
	}
	check("commit", commit())
	checkAll("at the end")
	if diff := gocmp.Diff(wantLog, log.Changes); diff != "" {
		fail("changelog (-want +got):\n%s", diff)
	}
	w.reset(restoreLog(t, r, kind, sk, log.Changes))
	s = open()
	checkAll("after the last restore")
}

func str(v *string) string {
	if v == nil {
		return "null"
	}
	return fmt.Sprintf("%q", *v)
}

func show(r state.VersionedRecord[*string]) string {
	return fmt.Sprintf("%s@[%d,%d)", str(r.Value), r.Timestamp, r.ValidTo)
}
