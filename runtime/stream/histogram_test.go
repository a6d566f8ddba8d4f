package stream

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestHistogramBuckets(t *testing.T) {
	var h histogram
	for _, d := range []time.Duration{0, time.Microsecond, 1500 * time.Nanosecond, 2 * time.Microsecond, 3 * time.Microsecond,
		time.Second, 100 * time.Second, -time.Second} {
		h.observe(d)
	}
	s := h.snapshot()
	got := map[time.Duration]uint64{}
	for i, c := range s.Counts {
		if c == 0 {
			continue
		}
		bound := time.Duration(-1) // above the last bound
		if i < len(s.Bounds) {
			bound = s.Bounds[i]
		}
		got[bound] = c
	}
	want := map[time.Duration]uint64{
		time.Microsecond:           3, // 0, 1 µs, and the negative one
		2 * time.Microsecond:       2, // 1.5 µs, 2 µs
		4 * time.Microsecond:       1, // 3 µs
		1048576 * time.Microsecond: 1, // 1 s falls in (0.52 s, 1.05 s]
		-1:                         1, // 100 s is past the last bound (67 s)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("buckets (-want +got):\n%s", diff)
	}
	if s.Count != 8 || s.Sum != time.Second+100*time.Second+7500*time.Nanosecond {
		t.Fatalf("count %d, sum %s", s.Count, s.Sum)
	}
}
