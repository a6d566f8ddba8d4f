package dsl

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// The windows a timestamp falls in, as Kafka Streams' TimeWindows.windowsFor:
// every start that is a multiple of advance in (ts-size, ts], none below 0.
func TestTimeWindowStarts(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		w    TimeWindows
		ts   int64
		want []int64
	}{
		{TumblingWindows(10 * ms), 0, []int64{0}},
		{TumblingWindows(10 * ms), 9, []int64{0}},
		{TumblingWindows(10 * ms), 10, []int64{10}},
		{TumblingWindows(10 * ms), 25, []int64{20}},
		{HoppingWindows(10*ms, 5*ms), 0, []int64{0}},
		{HoppingWindows(10*ms, 5*ms), 4, []int64{0}},
		{HoppingWindows(10*ms, 5*ms), 5, []int64{0, 5}},
		{HoppingWindows(10*ms, 5*ms), 9, []int64{0, 5}},
		{HoppingWindows(10*ms, 5*ms), 10, []int64{5, 10}},
		{HoppingWindows(10*ms, 3*ms), 10, []int64{3, 6, 9}},
		{HoppingWindows(10*ms, 3*ms), 2, []int64{0}},
		{TumblingWindows(10 * ms), -1, nil},
	} {
		if got := c.w.starts(c.ts); !slices.Equal(got, c.want) {
			t.Errorf("size %d advance %d, ts %d: starts %v, want %v", c.w.size, c.w.advance, c.ts, got, c.want)
		}
	}
}

// Property: over random sizes, advances and times, the windows given are
// exactly the windows [s, s+size) with s a multiple of advance, s >= 0, that
// hold ts.
func TestTimeWindowStartsProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		size := 1 + rng.Int64N(50)
		w := HoppingWindows(time.Duration(size)*time.Millisecond, time.Duration(1+rng.Int64N(size))*time.Millisecond)
		ts := rng.Int64N(300)
		var want []int64
		for s := int64(0); s <= ts; s += w.advance {
			if s <= ts && ts < s+w.size {
				want = append(want, s)
			}
		}
		if got := w.starts(ts); !slices.Equal(got, want) {
			t.Fatalf("size %d advance %d ts %d: %v, want %v", w.size, w.advance, ts, got, want)
		}
	}
}

func TestWindowChecks(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		name string
		err  error
	}{
		{"zero size", TumblingWindows(0).check()},
		{"advance over size", HoppingWindows(10*ms, 11*ms).check()},
		{"zero advance", HoppingWindows(10*ms, 0).check()},
		{"negative grace", TumblingWindows(10 * ms).Grace(-ms).check()},
		{"sliding zero", SlidingWindows(0, 0).check()},
		{"session zero gap", SessionWindows(0).check()},
		{"idle without final", WindowOptions{IdleClose: time.Second}.check()},
		{"unknown emit", WindowOptions{Emit: 7}.check()},
	} {
		if c.err == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
	for _, err := range []error{
		TumblingWindows(10 * ms).Grace(5 * ms).check(), HoppingWindows(10*ms, 10*ms).check(),
		SlidingWindows(ms, 0).check(), SessionWindows(ms).Grace(ms).check(),
		WindowOptions{Emit: EmitFinal, IdleClose: time.Second}.check(),
	} {
		if err != nil {
			t.Errorf("refused: %v", err)
		}
	}
}

func TestMergeSessions(t *testing.T) {
	for _, c := range []struct {
		ts    int64
		found []session
		want  session
	}{
		{5, nil, session{5, 5}},
		{5, []session{{1, 3}}, session{1, 5}},
		{5, []session{{1, 3}, {7, 9}}, session{1, 9}},
		{5, []session{{4, 6}}, session{4, 6}},
	} {
		if got := mergeSessions(c.ts, c.found); got != c.want {
			t.Errorf("ts %d with %v: %v, want %v", c.ts, c.found, got, c.want)
		}
	}
}

func TestTimeWindowAnyStart(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 2000 {
		w := HoppingWindows(time.Duration(10+rng.Int64N(20))*time.Millisecond, time.Duration(1+rng.Int64N(10))*time.Millisecond)
		lo := rng.Int64N(100)
		hi := lo + rng.Int64N(15) - 2
		want := false
		for s := int64(0); s <= hi; s += w.advance {
			if s >= lo {
				want = true
			}
		}
		if got := w.anyStart(lo, hi); got != want {
			t.Fatalf("advance %d, [%d, %d]: %v, want %v", w.advance, lo, hi, got, want)
		}
	}
}
