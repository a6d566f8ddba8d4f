package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kgen-dev/kgen/bench/internal/protocol"
)

// A window closes when its partition's largest timestamp reaches its end
// plus the grace: not a moment before, and another partition's time does
// not close it.
func TestWindowsOf(t *testing.T) {
	size, grace := protocol.WindowSize.Milliseconds(), protocol.WindowGrace.Milliseconds()
	src := &source{windows: map[window]int64{
		{"a", 0}:    3, // partition 0, ends at size: closed once time reaches size+grace
		{"a", size}: 1, // partition 0, still open
		{"b", 0}:    2, // partition 1, whose time stops just short
		{"c", 0}:    1, // partition 2, no record seen there: open
	}}
	partOf := map[string]int32{"a": 0, "b": 1, "c": 2}
	maxTs := map[int32]int64{0: size + grace, 1: size + grace - 1}
	src.windowsOf(partOf, maxTs)
	want := map[window]bool{{"a", 0}: true}
	if diff := cmp.Diff(want, src.closed, cmp.AllowUnexported(window{})); diff != "" {
		t.Errorf("closed windows (-want +got):\n%s", diff)
	}
	if src.Windows != 4 || src.ClosedWindows != 1 {
		t.Errorf("Windows, ClosedWindows = %d, %d; want 4, 1", src.Windows, src.ClosedWindows)
	}
}

// The output check catches a wrong count, a missing window, a window
// emitted twice or emitted before it closed, and a window that never was.
func TestCompareWindows(t *testing.T) {
	truth := map[window]int64{{"a", 0}: 2, {"b", 0}: 1, {"a", 60_000}: 1}
	closed := map[window]bool{{"a", 0}: true, {"b", 0}: true}
	once := func(ws ...window) map[window]int {
		m := map[window]int{}
		for _, w := range ws {
			m[w]++
		}
		return m
	}
	for _, tc := range []struct {
		name  string
		final bool
		last  map[window]int64
		seen  map[window]int
		ok    bool
	}{
		{"updates right", false, map[window]int64{{"a", 0}: 2, {"b", 0}: 1, {"a", 60_000}: 1}, nil, true},
		{"updates short", false, map[window]int64{{"a", 0}: 1, {"b", 0}: 1, {"a", 60_000}: 1}, nil, false},
		{"updates missing", false, map[window]int64{{"a", 0}: 2, {"b", 0}: 1}, nil, false},
		{"updates extra", false, map[window]int64{{"a", 0}: 2, {"b", 0}: 1, {"a", 60_000}: 1, {"c", 0}: 1}, nil, false},
		{"final right", true, map[window]int64{{"a", 0}: 2, {"b", 0}: 1}, once(window{"a", 0}, window{"b", 0}), true},
		{"final twice", true, map[window]int64{{"a", 0}: 2, {"b", 0}: 1}, once(window{"a", 0}, window{"a", 0}, window{"b", 0}), false},
		{"final open window", true, map[window]int64{{"a", 0}: 2, {"b", 0}: 1, {"a", 60_000}: 1}, once(window{"a", 0}, window{"b", 0}, window{"a", 60_000}), false},
		{"final missing", true, map[window]int64{{"a", 0}: 2}, once(window{"a", 0}), false},
	} {
		bad := compareWindows(tc.last, tc.seen, tc.final, truth, closed)
		if (len(bad) == 0) != tc.ok {
			t.Errorf("%s: differences %q, want ok=%v", tc.name, bad, tc.ok)
		}
	}
}
