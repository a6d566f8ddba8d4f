package windows

import (
	"encoding/binary"
	"strconv"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/runtime/dsl"
	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/kgen-dev/kgen/runtime/streamtest"
)

// t0 starts a minute (and every window of the spec): record times are
// given from it.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func ms(d time.Duration) int64 { return t0.Add(d).UnixMilli() }

// result is a windowed output record as the tests compare it.
type result struct {
	Key        string
	Start, End int64
	Value      *int64
}

func results(t *testing.T, read func() ([]stream.Record[dsl.Windowed[string], *int64], error)) []result {
	t.Helper()
	recs, err := read()
	if err != nil {
		t.Fatal(err)
	}
	var out []result
	for _, r := range recs {
		out = append(out, result{r.Key.Key, r.Key.Start, r.Key.End, r.Value})
	}
	return out
}

func n(v int64) *int64 { return &v }

func newDriver(t *testing.T) *TestDriver {
	t.Helper()
	d, err := NewTestDriver(Factories{}, streamtest.Config{StartTime: t0})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func pipe(t *testing.T, d *TestDriver, key string, v int64, ts time.Duration) {
	t.Helper()
	if err := d.PipeClicks(key, v, at(ts)); err != nil {
		t.Fatal(err)
	}
}

func equal(t *testing.T, what string, got, want []result) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d records %v, want %v", what, len(got), show(got), show(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Key != w.Key || g.Start != w.Start || g.End != w.End || (g.Value == nil) != (w.Value == nil) || g.Value != nil && *g.Value != *w.Value {
			t.Fatalf("%s: record %d is %v, want %v (all: %v)", what, i, show(got[i:i+1]), show(want[i:i+1]), show(got))
		}
	}
}

func show(rs []result) []string {
	var out []string
	for _, r := range rs {
		v := "nil"
		if r.Value != nil {
			v = strconv.FormatInt(*r.Value, 10)
		}
		out = append(out, r.Key+"@"+time.UnixMilli(r.Start).Sub(t0).String()+"/"+time.UnixMilli(r.End).Sub(t0).String()+"="+v)
	}
	return out
}

// Tumbling windows with every update, and with final results only: a
// record past a window's end plus grace closes it, in its key's task.
func TestTumbling(t *testing.T) {
	d := newDriver(t)
	pipe(t, d, "alice", 1, 0)
	pipe(t, d, "alice", 1, 20*time.Second)
	pipe(t, d, "bob", 1, 30*time.Second)
	equal(t, "per-minute", results(t, d.ReadPerMinute), []result{
		{"alice", ms(0), ms(time.Minute), n(1)},
		{"alice", ms(0), ms(time.Minute), n(2)},
		{"bob", ms(0), ms(time.Minute), n(1)},
	})
	equal(t, "per-minute-last before the close", results(t, d.ReadPerMinuteLast), nil)
	pipe(t, d, "alice", 1, 65*time.Second) // within the grace: [0, 1m) stays open
	equal(t, "per-minute-last within the grace", results(t, d.ReadPerMinuteLast), nil)
	pipe(t, d, "alice", 1, 71*time.Second) // past 1m + 10s: closes alice's [0, 1m)
	equal(t, "per-minute-last", results(t, d.ReadPerMinuteLast), []result{{"alice", ms(0), ms(time.Minute), n(2)}})
	// the suppressed table of every update emits the same final result
	equal(t, "closed", results(t, d.ReadClosed), []result{{"alice", ms(0), ms(time.Minute), n(2)}})

	// bob's task saw no later record: the wall clock closes its window
	// (idle-close: 1m) for the final count, not for the suppression.
	for range 10 { // the idle check runs every 30s of wall-clock time
		if err := d.AdvanceWallClock(30 * time.Second); err != nil {
			t.Fatal(err)
		}
	}
	equal(t, "per-minute-last after idle", results(t, d.ReadPerMinuteLast), []result{
		{"alice", ms(time.Minute), ms(2 * time.Minute), n(2)},
		{"bob", ms(0), ms(time.Minute), n(1)},
	})
	equal(t, "closed after idle", results(t, d.ReadClosed), nil)

	ws, err := d.MinuteCounts()
	if err != nil {
		t.Fatal(err)
	}
	got := map[result]int64{}
	for _, w := range ws {
		got[result{Key: w.Key.Key, Start: w.Key.Start, End: w.Key.End}] = w.Value.Value
	}
	for k, want := range map[result]int64{
		{Key: "alice", Start: ms(0), End: ms(time.Minute)}:               2,
		{Key: "alice", Start: ms(time.Minute), End: ms(2 * time.Minute)}: 2,
		{Key: "bob", Start: ms(0), End: ms(time.Minute)}:                 1,
	} {
		if got[k] != want {
			t.Errorf("store minute-counts: %v = %d, want %d (all: %v)", k, got[k], want, got)
		}
	}
}

// Hopping windows: each record counts in size/advance windows.
func TestHopping(t *testing.T) {
	d := newDriver(t)
	pipe(t, d, "alice", 3, 90*time.Second)
	// windows of 5m every 1m holding 1m30s: those starting from 3m before
	// t0 to 1m after
	equal(t, "trending", results(t, d.ReadTrending), []result{
		{"alice", ms(-3 * time.Minute), ms(2 * time.Minute), n(3)},
		{"alice", ms(-2 * time.Minute), ms(3 * time.Minute), n(3)},
		{"alice", ms(-time.Minute), ms(4 * time.Minute), n(3)},
		{"alice", ms(0), ms(5 * time.Minute), n(3)},
		{"alice", ms(time.Minute), ms(6 * time.Minute), n(3)},
	})
	// the final counts: a window closes at its end (no grace)
	equal(t, "trending-final before", results(t, d.ReadTrendingFinal), nil)
	pipe(t, d, "alice", 1, 4*time.Minute)
	equal(t, "trending-final", results(t, d.ReadTrendingFinal), []result{
		{"alice", ms(-3 * time.Minute), ms(2 * time.Minute), n(1)},
		{"alice", ms(-2 * time.Minute), ms(3 * time.Minute), n(1)},
		{"alice", ms(-time.Minute), ms(4 * time.Minute), n(1)}, // 4m is its end: not in it
	})
}

// Session windows: records within the gap make one session, and a record
// bridging two sessions merges them (the merger), deleting the old ones.
func TestSessions(t *testing.T) {
	d := newDriver(t)
	pipe(t, d, "alice", 1, 0)
	pipe(t, d, "alice", 2, 35*time.Second) // more than the 30s gap: a second session
	pipe(t, d, "alice", 4, 20*time.Second) // within the gap of both: merges them
	equal(t, "visits", results(t, d.ReadVisits), []result{
		{"alice", ms(0), ms(0), n(1)},
		{"alice", ms(35 * time.Second), ms(35 * time.Second), n(2)},
		{"alice", ms(0), ms(0), nil},
		{"alice", ms(35 * time.Second), ms(35 * time.Second), nil},
		{"alice", ms(0), ms(35 * time.Second), n(7)},
	})
	ss, err := d.SessionSums()
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 1 || ss[0].Key.Start != ms(0) || ss[0].Key.End != ms(35*time.Second) || ss[0].Value != 7 {
		t.Errorf("store session-sums: %+v, want one session 0s/35s = 7", ss)
	}
	// session-n, with no grace, closed the session at 0s once stream time
	// passed 0s plus the 30s gap (at 35s), so the record at 20s merged only
	// with the one at 35s; each final count is emitted as its session
	// closes.
	pipe(t, d, "alice", 1, 2*time.Minute)
	equal(t, "visit-totals", results(t, d.ReadVisitTotals), []result{
		{"alice", ms(0), ms(0), n(1)},
		{"alice", ms(20 * time.Second), ms(35 * time.Second), n(2)},
	})
}

// Sliding windows with final results: a window closes once stream time
// passes its end plus grace.
func TestSliding(t *testing.T) {
	d := newDriver(t)
	pipe(t, d, "alice", 1, 20*time.Second)
	pipe(t, d, "alice", 2, 25*time.Second)
	equal(t, "near before the close", results(t, d.ReadNear), nil)
	// every update, in Kafka Streams' order: the first record's window,
	// then the second's: the first record's right window it made, and its
	// own left window
	equal(t, "near-updates", results(t, d.ReadNearUpdates), []result{
		{"alice", ms(10 * time.Second), ms(20 * time.Second), n(1)},
		{"alice", ms(20*time.Second + time.Millisecond), ms(30*time.Second + time.Millisecond), n(1)},
		{"alice", ms(15 * time.Second), ms(25 * time.Second), n(2)},
	})
	pipe(t, d, "alice", 0, time.Minute) // past 25s + 5s grace
	equal(t, "near", results(t, d.ReadNear), []result{
		{"alice", ms(10 * time.Second), ms(20 * time.Second), n(1)},
		{"alice", ms(15 * time.Second), ms(25 * time.Second), n(3)},
		{"alice", ms(20*time.Second + time.Millisecond), ms(30*time.Second + time.Millisecond), n(2)},
	})
}

// The time-limit suppression emits early when its buffer is full, the
// earliest first, and the rest once the limit passed.
func TestSuppressTimeLimit(t *testing.T) {
	d := newDriver(t)
	pipe(t, d, "alice", 1, 90*time.Second) // five hopping windows in a buffer of two
	equal(t, "limited, full", results(t, d.ReadLimited), []result{
		{"alice", ms(-3 * time.Minute), ms(2 * time.Minute), n(1)},
		{"alice", ms(-2 * time.Minute), ms(3 * time.Minute), n(1)},
		{"alice", ms(-time.Minute), ms(4 * time.Minute), n(1)},
	})
	pipe(t, d, "alice", 1, 10*time.Minute) // past the 30s limit of the two held
	got := map[int64]bool{}
	for _, r := range results(t, d.ReadLimited) {
		got[r.Start] = true
	}
	if !got[ms(0)] || !got[ms(time.Minute)] {
		t.Fatalf("limited: the windows held (starts 0s and 1m) were not emitted past the time limit: %v", got)
	}
}

// A windowed topic another application wrote is read with Kafka Streams'
// windowed key serde: the key, then the window's start (the end from the
// windows' size, 1m), and written on with it.
func TestReadWindowed(t *testing.T) {
	d := newDriver(t)
	key := dsl.Windowed[string]{Key: "alice", Start: ms(0), End: ms(time.Minute)}
	if err := d.PipeRemoteMinutes(key, 7, at(0)); err != nil {
		t.Fatal(err)
	}
	// Kafka Streams' bytes: "alice" then the start, 8 bytes big-endian.
	raw := append([]byte("alice"), 0, 0, 0, 0, 0, 0, 0, 0)
	binary.BigEndian.PutUint64(raw[5:], uint64(ms(time.Hour)))
	if err := d.Driver().PipeRaw(TopicRemoteMinutes, raw, []byte{0, 0, 0, 0, 0, 0, 0, 9}, at(time.Hour)); err != nil {
		t.Fatal(err)
	}
	recs, err := d.ReadRelayed()
	if err != nil {
		t.Fatal(err)
	}
	var got []result
	for _, r := range recs {
		got = append(got, result{r.Key.Key, r.Key.Start, r.Key.End, n(r.Value)})
	}
	equal(t, "relayed", got, []result{
		{"alice", ms(0), ms(time.Minute), n(7)},
		{"alice", ms(time.Hour), ms(time.Hour + time.Minute), n(9)},
	})
	if err := d.PipeRemoteSessions(dsl.Windowed[string]{Key: "bob", Start: ms(0), End: ms(time.Second)}, 1, at(time.Second)); err != nil {
		t.Fatal(err)
	}
}
