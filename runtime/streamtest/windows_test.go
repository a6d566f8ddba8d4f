package streamtest_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/runtime/dsl"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/kgen-dev/kgen/runtime/streamtest"
)

// Windows and Sessions list every partition's windows, each with the end
// its key serde would give it (the stores keep a minute, so the windows
// closed are still there).
func TestWindowsAndSessions(t *testing.T) {
	topo := stream.NewTopology()
	stream.AddSource(topo, "in", "in", serde.String{}, serde.String{})
	dsl.WindowedCount[string, string](topo, "count", "counts", dsl.TumblingWindows(10*time.Second), serde.String{}, dsl.WindowOptions{Retention: time.Minute}, "in")
	dsl.SessionCount[string, string](topo, "sessions", "session-counts", dsl.SessionWindows(5*time.Second), serde.String{}, dsl.WindowOptions{Retention: time.Minute}, "in")
	d, err := streamtest.New(topo, streamtest.Config{Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, r := range []struct {
		key string
		at  int64 // seconds
	}{{"a", 1}, {"b", 2}, {"a", 3}, {"c", 12}, {"a", 14}} {
		if err := streamtest.Pipe(d, "in", serde.String{}, serde.String{}, r.key, "v", time.Unix(r.at, 0)); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := streamtest.Windows[string, state.ValueAndTimestamp[int64]](d, "counts", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range ws {
		got = append(got, fmt.Sprintf("%v=%d", w.Key, w.Value.Value))
	}
	slices.Sort(got)
	if want := []string{"[a@0/10000]=2", "[a@10000/20000]=1", "[b@0/10000]=1", "[c@10000/20000]=1"}; !slices.Equal(got, want) {
		t.Errorf("windows %v, want %v", got, want)
	}
	ss, err := streamtest.Sessions[string, int64](d, "session-counts")
	if err != nil {
		t.Fatal(err)
	}
	got = nil
	for _, s := range ss {
		got = append(got, fmt.Sprintf("%v=%d", s.Key, s.Value))
	}
	slices.Sort(got)
	if want := []string{"[a@1000/3000]=2", "[a@14000/14000]=1", "[b@2000/2000]=1", "[c@12000/12000]=1"}; !slices.Equal(got, want) {
		t.Errorf("sessions %v, want %v", got, want)
	}
	if _, err := streamtest.Windows[string, int64](d, "counts", 10*time.Second); err == nil {
		t.Error("Windows of the wrong value type: no error")
	}
	if _, err := streamtest.Sessions[string, int64](d, "nope"); err == nil {
		t.Error("Sessions of a store that does not exist: no error")
	}
}
