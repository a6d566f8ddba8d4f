package dsl

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Windows of the windowed aggregations, as Kafka Streams 4.4 defines them.
// Times are epoch milliseconds, as record timestamps on the wire; a window
// never starts before 0 (Kafka Streams makes none).
//
// Every window has a grace period: how long after its end, in the
// operator's stream time, a late record still counts. The operator's stream
// time is the largest timestamp that reached it (stream.ObservedTime: only
// the records that reach the operator move it, and it survives restarts);
// a window closes when that time passes its end plus the grace, and a
// record for a closed window is dropped (stream.DropLateRecord, counted and
// logged at debug level). The grace is 0 unless set (Kafka Streams'
// ofSizeWithNoGrace).

// TimeWindows are fixed-size windows that start every advance: tumbling
// (advance = size, each record in one window) or hopping (advance < size,
// each record in size/advance windows). A window holds the records with
// start <= timestamp < start+size, and closes once the stream time reaches
// start+size+grace (Kafka Streams' TimeWindows).
type TimeWindows struct {
	size, advance, grace int64 // milliseconds
}

// TumblingWindows are back-to-back windows of the given size.
func TumblingWindows(size time.Duration) TimeWindows {
	return TimeWindows{size: size.Milliseconds(), advance: size.Milliseconds()}
}

// HoppingWindows are windows of the given size that start every advance
// (0 < advance <= size).
func HoppingWindows(size, advance time.Duration) TimeWindows {
	return TimeWindows{size: size.Milliseconds(), advance: advance.Milliseconds()}
}

// Grace returns w with grace period g.
func (w TimeWindows) Grace(g time.Duration) TimeWindows { w.grace = g.Milliseconds(); return w }

// Size is the windows' size.
func (w TimeWindows) Size() time.Duration { return time.Duration(w.size) * time.Millisecond }

// GracePeriod is the windows' grace period.
func (w TimeWindows) GracePeriod() time.Duration { return time.Duration(w.grace) * time.Millisecond }

func (w TimeWindows) check() error {
	switch {
	case w.size <= 0:
		return fmt.Errorf("time windows: size %dms is not positive", w.size)
	case w.advance <= 0 || w.advance > w.size:
		return fmt.Errorf("time windows: advance %dms must be positive and at most the size %dms", w.advance, w.size)
	case w.grace < 0:
		return fmt.Errorf("time windows: grace %dms is negative", w.grace)
	}
	return nil
}

// starts returns the starts of the windows that hold a record at ts, in
// increasing order: every multiple of advance in (ts-size, ts], none below
// 0 (Kafka Streams' TimeWindows.windowsFor).
func (w TimeWindows) starts(ts int64) []int64 {
	if ts < 0 {
		return nil
	}
	first := max(0, ts-w.size+w.advance) / w.advance * w.advance
	out := make([]int64, 0, (ts-first)/w.advance+1)
	for s := first; s <= ts; s += w.advance {
		out = append(out, s)
	}
	return out
}

// anyStart says whether a window starts in [lo, hi]: a multiple of advance
// there (lo >= 0).
func (w TimeWindows) anyStart(lo, hi int64) bool {
	return (lo+w.advance-1)/w.advance*w.advance <= hi
}

// end is the end of the window that starts at start (exclusive), capped at
// the largest time as Kafka Streams caps it.
func (w TimeWindows) end(start int64) int64 { return addCapped(start, w.size) }

// SlidingWindowSpec are Kafka Streams' SlidingWindows (KIP-450): a window
// of a fixed time difference that slides with the records. Each record at t
// makes, per key, the window [t-difference, t] (its left window, holding
// it and the records up to difference before it) and, when a later record
// lies within difference after it, [t+1, t+1+difference] (its right
// window); so every distinct set of records that lie within difference of
// each other gets exactly one window, and nothing else. Both ends are
// inclusive. Records earlier than difference after 0 share the window
// [0, difference]. A window closes once the stream time passes its end plus
// grace.
type SlidingWindowSpec struct {
	diff, grace int64 // milliseconds
}

// SlidingWindows are sliding windows of the given time difference and grace
// period.
func SlidingWindows(difference, grace time.Duration) SlidingWindowSpec {
	return SlidingWindowSpec{diff: difference.Milliseconds(), grace: grace.Milliseconds()}
}

// Difference is the windows' time difference (their size).
func (w SlidingWindowSpec) Difference() time.Duration {
	return time.Duration(w.diff) * time.Millisecond
}

// GracePeriod is the windows' grace period.
func (w SlidingWindowSpec) GracePeriod() time.Duration {
	return time.Duration(w.grace) * time.Millisecond
}

func (w SlidingWindowSpec) check() error {
	switch {
	case w.diff <= 0:
		return fmt.Errorf("sliding windows: time difference %dms is not positive", w.diff)
	case w.grace < 0:
		return fmt.Errorf("sliding windows: grace %dms is negative", w.grace)
	}
	return nil
}

// SessionWindowSpec are Kafka Streams' SessionWindows: per key, records
// at most gap apart (|t1-t2| <= gap) belong to one session, which spans
// from its first record's time to its last's, both inclusive (a session
// of one record starts and ends at its time). A record that bridges two
// sessions merges them: the aggregates are combined by the user's merger,
// and each session replaced is deleted (a tombstone downstream). A session
// closes once the stream time passes its end plus gap plus grace: until
// then a record may still extend it.
type SessionWindowSpec struct {
	gap, grace int64 // milliseconds
}

// SessionWindows are session windows with the given inactivity gap.
func SessionWindows(gap time.Duration) SessionWindowSpec {
	return SessionWindowSpec{gap: gap.Milliseconds()}
}

// Grace returns w with grace period g.
func (w SessionWindowSpec) Grace(g time.Duration) SessionWindowSpec {
	w.grace = g.Milliseconds()
	return w
}

// Gap is the sessions' inactivity gap.
func (w SessionWindowSpec) Gap() time.Duration { return time.Duration(w.gap) * time.Millisecond }

// GracePeriod is the sessions' grace period.
func (w SessionWindowSpec) GracePeriod() time.Duration {
	return time.Duration(w.grace) * time.Millisecond
}

func (w SessionWindowSpec) check() error {
	switch {
	case w.gap <= 0:
		return fmt.Errorf("session windows: gap %dms is not positive", w.gap)
	case w.grace < 0:
		return fmt.Errorf("session windows: grace %dms is negative", w.grace)
	}
	return nil
}

// session is one session window: both ends inclusive.
type session struct{ start, end int64 }

// mergeSessions returns the session a record at ts makes together with the
// existing sessions it falls within gap of (those whose end >= ts-gap and
// whose start <= ts+gap: what a session store's FindSessions(key, ts-gap,
// ts+gap) returns): the smallest window holding all of them and ts.
func mergeSessions(ts int64, found []session) session {
	s := session{ts, ts}
	for _, f := range found {
		s.start = min(s.start, f.start)
		s.end = max(s.end, f.end)
	}
	return s
}

// addCapped is a+b, or the largest int64 where that overflows.
func addCapped(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// Emit says when a windowed aggregation forwards its results.
type Emit int

const (
	// EmitUpdates forwards every update of a window as it happens (Kafka
	// Streams' EmitStrategy.onWindowUpdate with the record cache off): the
	// default.
	EmitUpdates Emit = iota
	// EmitFinal forwards each window once, when it closes (Kafka Streams'
	// EmitStrategy.onWindowClose): the stream time must pass its end plus
	// grace, so an input that goes quiet emits nothing until another record
	// arrives, unless WindowOptions.IdleClose lets the wall clock close it.
	EmitFinal
)

func (e Emit) String() string {
	switch e {
	case EmitUpdates:
		return "updates"
	case EmitFinal:
		return "final"
	}
	return fmt.Sprintf("Emit(%d)", int(e))
}

var errEmit = errors.New("unknown emit strategy")
