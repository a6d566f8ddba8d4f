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
