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

// Session is one session read from a session store.
type Session struct {
	Key        string
	Start, End int64
	Value      string
}

// DrainSessions reads a session iterator to its end and closes it.
func DrainSessions(t testing.TB, it state.SessionIterator[string, *string]) []Session {
	t.Helper()
	var out []Session
	for it.Next() {
		v := "<nil>"
		if it.Value() != nil {
			v = *it.Value()
		}
		out = append(out, Session{it.Key(), it.Start(), it.End(), v})
	}
	if err := it.Err(); err != nil {
		t.Fatalf("iterate: %v", err)
	}
	if err := it.Close(); err != nil {
		t.Fatalf("close iterator: %v", err)
	}
	return out
}

// sessionModel is the reference session store: a map of every live
// session, with the store's expiry rules.
type sessionModel struct {
	retention, interval int64
	observed            int64
	m                   map[sessionModelKey]string
}

type sessionModelKey struct {
	k          string
	start, end int64
}

// bytes is k's changelog key: serialized key ‖ end ‖ start.
func (k sessionModelKey) bytes() []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64([]byte(k.k), uint64(k.end)), uint64(k.start))
}

func (m *sessionModel) minLive() int64 {
	if m.observed < 0 {
		return 0
	}
	return max(m.observed-m.retention+1, 0)
}

// put applies a Put (v nil: a Remove); it returns whether the session was
// expired, and the changelog record the store must log (nil for none).
func (m *sessionModel) put(k string, start, end int64, v *string) (expired bool, logged *state.Change) {
	m.observed = max(m.observed, end)
	mk := sessionModelKey{k, start, end}
	if end < m.minLive() {
		return v != nil, nil
	}
	if v == nil {
		delete(m.m, mk)
		return false, &state.Change{Key: mk.bytes()}
	}
	m.m[mk] = *v
	return false, &state.Change{Key: mk.bytes(), Value: []byte(*v)}
}

// sessions returns the live sessions accepted by keep, by segment, then
// changelog key bytes.
func (m *sessionModel) sessions(keep func(k sessionModelKey) bool) []Session {
	var keys []sessionModelKey
	for k := range m.m {
		if k.end >= m.minLive() && keep(k) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b sessionModelKey) int {
		return cmp.Or(cmp.Compare(a.end/m.interval, b.end/m.interval), bytes.Compare(a.bytes(), b.bytes()))
	})
	var out []Session
	for _, k := range keys {
		out = append(out, Session{k.k, k.start, k.end, m.m[k]})
	}
	return out
}

// SessionModel runs random operations against session stores over
// backends of kind, written directly and through a record cache, and
// compares every result with a model that expires sessions as the store
// must; it restores the store from its changelog now and then and goes on
// with the restored one.
func SessionModel(t *testing.T, kind Kind) {
	for _, path := range writePaths {
		t.Run(path.name, func(t *testing.T) {
			for _, seed := range modelSeeds(t) {
				t.Run(fmt.Sprint(seed), func(t *testing.T) {
					runSessionModel(t, kind, path.cached, seed, *opsFlag)
				})
			}
		})
	}
}

func runSessionModel(t *testing.T, kind Kind, cached bool, seed uint64, ops int) {
	r := rand.New(rand.NewPCG(seed, seed^0x2545f4914f6cdd1d))
	keys := randomKeys(r)[:12]
	key := func() string { return keys[r.IntN(len(keys))] }
	// Retention below a minute: the store's segments are of a minute, as
	// Kafka Streams', so times move by seconds.
	const retention = 150_000
	sk := state.SessionKind(retention * time.Millisecond)
	log := &Recorder{}
	w := newWritePath("", cached, sk, kind.Open(t), log)
	open := func() state.SessionStore[string, *string] {
		return state.NewSessionStore("model", w.backend(), serde.String{}, NullableString{}, retention*time.Millisecond, w.logger())
	}
	s := open()
	m := &sessionModel{retention: retention, interval: 75_000, observed: -1, m: map[sessionModelKey]string{}}
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
	compare := func(what string, want, got []Session) {
		t.Helper()
		if diff := gocmp.Diff(want, got); diff != "" {
			fail("%s (-want +got):\n%s", what, diff)
		}
	}
	// session draws a session near the observed time; existing ones are
	// drawn often, so removals and overwrites find something.
	session := func() (string, int64, int64) {
		if len(m.m) > 0 && r.IntN(3) == 0 {
			all := m.sessions(func(sessionModelKey) bool { return true })
			if len(all) > 0 {
				e := all[r.IntN(len(all))]
				return e.Key, e.Start, e.End
			}
		}
		var end int64
		if r.IntN(4) == 0 {
			end = max(0, m.observed+int64(r.IntN(40_000)))
		} else {
			end = max(0, m.observed-int64(r.IntN(200_000)))
		}
		return key(), max(0, end-int64(r.IntN(30_000))), end
	}
	bound := func() int64 { return max(0, m.observed-int64(r.IntN(250_000))) }

	for op = 0; op < ops; op++ {
		log.Time = int64(1000 + op)
		switch n := r.IntN(100); {
		case n < 40:
			k, st, end := session()
			var v *string
			var err error
			if r.IntN(5) != 0 {
				str := randomValue(r)
				v = &str
				err = s.Put(k, st, end, v)
			} else if r.IntN(2) == 0 {
				err = s.Put(k, st, end, nil)
			} else {
				err = s.Remove(k, st, end)
			}
			wantExpired, logged := m.put(k, st, end, v)
			expired, other := isExpired(err)
			if other || expired != wantExpired {
				fail("Put(%q, %d, %d, %v) at observed time %d: %v; want expired %v", k, st, end, v, m.observed, err, wantExpired)
			}
			if logged != nil && !cached {
				logged.Timestamp = log.Time
				wantLog = append(wantLog, *logged)
			}
		case n < 48:
			k, st, end := session()
			got, ok, err := s.Fetch(k, st, end)
			check("fetch", err)
			want, wantOK := m.m[sessionModelKey{k, st, end}]
			wantOK = wantOK && end >= m.minLive()
			if ok != wantOK || (ok && (got == nil || *got != want)) {
				fail("Fetch(%q, %d, %d) = %v, %v; want %q, %v", k, st, end, got, ok, want, wantOK)
			}
		case n < 62:
			k, earliestEnd, latestStart := key(), bound(), bound()
			if r.IntN(2) == 0 {
				latestStart = m.observed + 1000
			}
			want := m.sessions(func(mk sessionModelKey) bool {
				return mk.k == k && mk.end >= earliestEnd && mk.start <= latestStart
			})
			it, err := s.FindSessions(k, earliestEnd, latestStart)
			check("find sessions", err)
			compare(fmt.Sprintf("FindSessions(%q, %d, %d)", k, earliestEnd, latestStart), want, DrainSessions(t, it))
			it, err = s.BackwardFindSessions(k, earliestEnd, latestStart)
			check("backward find sessions", err)
			slices.Reverse(want)
			compare(fmt.Sprintf("BackwardFindSessions(%q, %d, %d)", k, earliestEnd, latestStart), want, DrainSessions(t, it))
		case n < 66:
			k := key()
			it, err := s.FetchSessions(k)
			check("fetch sessions", err)
			compare(fmt.Sprintf("FetchSessions(%q)", k), m.sessions(func(mk sessionModelKey) bool { return mk.k == k }), DrainSessions(t, it))
		case n < 68:
			lo := bound()
			hi := lo + int64(r.IntN(150_000))
			it, err := s.FindSessionsByEnd(lo, hi)
			check("find sessions by end", err)
			compare(fmt.Sprintf("FindSessionsByEnd(%d, %d)", lo, hi), m.sessions(func(mk sessionModelKey) bool { return mk.end >= lo && mk.end <= hi }), DrainSessions(t, it))
		case n < 70:
			it, err := s.All()
			check("all", err)
			compare("All", m.sessions(func(sessionModelKey) bool { return true }), DrainSessions(t, it))
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
			// Restoring opens a backend: a few per run are enough.
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
			compare("All after restore", m.sessions(func(sessionModelKey) bool { return true }), DrainSessions(t, it))
		case n < 86:
			if kind.Reopen != nil {
				check("commit", w.commit())
				w.reset(kind.Reopen(t, w.b))
				s = open()
			}
		}
		if w.full {
			check("commit", w.commit())
		}
	}
	check("commit", w.commit())
	it, err := s.All()
	check("all", err)
	compare("final contents", m.sessions(func(sessionModelKey) bool { return true }), DrainSessions(t, it))
}
