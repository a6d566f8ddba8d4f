package gen

import (
	"fmt"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/schema"
)

// Durations are written in their largest whole unit, and windows as the
// dsl constructors that make them, grace only where one was given.
func TestWindowsCode(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0"}, {time.Millisecond, "time.Millisecond"}, {1500 * time.Millisecond, "1500 * time.Millisecond"},
		{30 * time.Second, "30 * time.Second"}, {90 * time.Second, "90 * time.Second"}, {5 * time.Minute, "5 * time.Minute"},
		{time.Hour, "time.Hour"}, {36 * time.Hour, "36 * time.Hour"},
	} {
		if got := fmt.Sprintf("%#v", durationCode(tc.d)); got != tc.want {
			t.Errorf("durationCode(%v) = %s, want %s", tc.d, got, tc.want)
		}
	}
	dur := func(d time.Duration) schema.Dur { return schema.Dur{Value: d, Pos: schema.Pos{Line: 1}} }
	for _, tc := range []struct {
		w    schema.Window
		want string
	}{
		{schema.Window{Kind: schema.Str{Value: "tumbling"}, Size: dur(time.Minute)}, "dsl.TumblingWindows(time.Minute)"},
		{schema.Window{Kind: schema.Str{Value: "hopping"}, Size: dur(10 * time.Minute), Advance: dur(5 * time.Minute), Grace: dur(30 * time.Second)},
			"dsl.HoppingWindows(10*time.Minute, 5*time.Minute).Grace(30 * time.Second)"},
		{schema.Window{Kind: schema.Str{Value: "sliding"}, Size: dur(10 * time.Second)}, "dsl.SlidingWindows(10*time.Second, 0)"},
		{schema.Window{Kind: schema.Str{Value: "session"}, Gap: dur(time.Hour), Grace: dur(time.Minute)}, "dsl.SessionWindows(time.Hour).Grace(time.Minute)"},
	} {
		if got := fmt.Sprintf("%#v", windowsCode(&tc.w)); got != tc.want {
			t.Errorf("windowsCode(%v) = %s, want %s", &tc.w, got, tc.want)
		}
	}
}
