package pageviews

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/examples/pageviews/model"
	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/kgen-dev/kgen/runtime/streamtest"
)

// t0 starts a 5-minute window; view times are given from it.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// windowCount is one final result as the tests compare it: user, the
// window's start and end from t0, and the count.
type windowCount struct {
	User       string
	Start, End time.Duration
	Views      int64
}

func (w windowCount) String() string {
	return fmt.Sprintf("%s[%v,%v)=%d", w.User, w.Start, w.End, w.Views)
}

// TestPageViews counts views per user per window on 1, 4 and 8
// partitions: the views are keyed by page, so a user's views reach the
// task counting them only through the repartition topic, and each window's
// count comes out once, after it closed, with the late views its grace
// allows.
func TestPageViews(t *testing.T) {
	for _, partitions := range []int32{1, 4, 8} {
		t.Run(fmt.Sprintf("%d partitions", partitions), func(t *testing.T) {
			d, err := NewTestDriver(Factories{}, streamtest.Config{Partitions: partitions})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			view := func(user, page string, at time.Duration) {
				t.Helper()
				if err := d.PipePageViews(page, model.PageView{User: user, Page: page}, t0.Add(at)); err != nil {
					t.Fatal(err)
				}
			}
			for i, user := range []string{"alice", "bob", "carol"} {
				for j := range 3 + i { // alice 3 views, bob 4, carol 5 in [0, 5m)
					view(user, fmt.Sprintf("/p%d", j), time.Duration(j)*time.Minute)
				}
				view(user, "/home", 5*time.Minute+10*time.Second) // opens [5m, 10m)
			}
			// Nothing is final yet: no user's stream time passed 5m30s.
			if got := read(t, d); len(got) != 0 {
				t.Fatalf("results before any window closed: %v", got)
			}
			view("alice", "/late", 4*time.Minute) // 10s late, within the 30s grace: counted
			view("alice", "/next", 6*time.Minute) // stream time 6m: [0, 5m) closes for alice
			view("alice", "/too-late", 4*time.Minute+30*time.Second)
			if got, want := d.Driver().Dropped()[stream.DropLateRecord], uint64(1); got != want {
				t.Errorf("late views dropped: %d, want %d", got, want)
			}
			// Stream time is per task: alice's view closed her window, and
			// those of the users her task counts too (all of them on one
			// partition).
			all := read(t, d)
			if !slices.Contains(all, windowCount{"alice", 0, 5 * time.Minute, 4}) {
				t.Fatalf("after alice's window closed: %v, want alice[0s,5m0s)=4 among them", all)
			}
			// A view of each user 20 minutes on closes every window left.
			for _, user := range []string{"alice", "bob", "carol"} {
				view(user, "/bye", 20*time.Minute)
			}
			all = append(all, read(t, d)...)
			sortCounts(all)
			want := []windowCount{
				{"alice", 0, 5 * time.Minute, 4}, {"alice", 5 * time.Minute, 10 * time.Minute, 2},
				{"bob", 0, 5 * time.Minute, 4}, {"bob", 5 * time.Minute, 10 * time.Minute, 1},
				{"carol", 0, 5 * time.Minute, 5}, {"carol", 5 * time.Minute, 10 * time.Minute, 1},
			}
			if !slices.Equal(all, want) {
				t.Fatalf("final counts, each once: %v, want %v", all, want)
			}
			// The store keeps the windows (for their retention), the open
			// ones included.
			ws, err := d.Views()
			if err != nil {
				t.Fatal(err)
			}
			var open []string
			for _, w := range ws {
				if w.Key.StartTime().Equal(t0.Add(20 * time.Minute)) {
					open = append(open, fmt.Sprintf("%s=%d", w.Key.Key, w.Value.Value))
				}
			}
			slices.Sort(open)
			if strings.Join(open, " ") != "alice=1 bob=1 carol=1" {
				t.Errorf("open windows in store views: %v", open)
			}
		})
	}
}

// read returns the final counts written since the last read, sorted by
// user, then window.
func read(t *testing.T, d *TestDriver) []windowCount {
	t.Helper()
	recs, err := d.ReadViewsPerUser()
	if err != nil {
		t.Fatal(err)
	}
	var out []windowCount
	for _, r := range recs {
		if r.Value == nil {
			t.Fatalf("a tombstone for %v: final counts are never deleted", r.Key)
		}
		out = append(out, windowCount{r.Key.Key, r.Key.StartTime().Sub(t0), r.Key.EndTime().Sub(t0), *r.Value})
	}
	sortCounts(out)
	return out
}

// sortCounts sorts by user, then window.
func sortCounts(cs []windowCount) {
	slices.SortFunc(cs, func(a, b windowCount) int {
		if c := strings.Compare(a.User, b.User); c != 0 {
			return c
		}
		return int(a.Start - b.Start)
	})
}
