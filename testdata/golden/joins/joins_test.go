package joins

import (
	"slices"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/kgen-dev/kgen/runtime/streamtest"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

// newDriver runs the spec on 4 partitions: a key joined in the wrong task
// would find nothing to join.
func newDriver(t *testing.T) *TestDriver {
	t.Helper()
	d, err := NewTestDriver(Factories{}, streamtest.Config{StartTime: t0, Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// kv is an output record as the tests compare it.
type kv struct{ Key, Value string }

func read[V any](t *testing.T, f func() ([]stream.Record[string, V], error), val func(V) string) []kv {
	t.Helper()
	recs, err := f()
	must(t, err)
	var out []kv
	for _, r := range recs {
		out = append(out, kv{r.Key, val(r.Value)})
	}
	// Keys of several partitions come out in task order: compare as sets
	// per key, in order within a key.
	slices.SortStableFunc(out, func(a, b kv) int {
		switch {
		case a.Key < b.Key:
			return -1
		case a.Key > b.Key:
			return 1
		}
		return 0
	})
	return out
}

func str(v string) string { return v }

func ptr(v *string) string {
	if v == nil {
		return "<tombstone>"
	}
	return *v
}

func check(t *testing.T, what string, got, want []kv) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n got %v\nwant %v", what, got, want)
	}
}

func TestStreamStreamJoins(t *testing.T) {
	d := newDriver(t)
	keys := []string{"a", "b", "c", "d", "e", "f"}
	for _, k := range keys {
		must(t, d.PipeClicks(k, 1, at(10*time.Second)))
	}
	// a's view within 5s before (inner and outer join it; the left join
	// looks 2s back only); b's 8s after (only the left join's 10s after
	// reaches it); the others have none.
	must(t, d.PipeViews("a", "va", at(7*time.Second)))
	must(t, d.PipeViews("b", "vb", at(18*time.Second)))
	check(t, "inner", read(t, d.ReadInnerSs, str), []kv{{"a", "1|va"}})
	check(t, "left before its windows close", read(t, d.ReadLeftSs, str), []kv{{"b", "1|vb"}})
	// b's view at 18s moved b's stream time past its click's window (10s
	// give or take 5s, no grace): the click is out unmatched first.
	check(t, "outer, b's click window closed", read(t, d.ReadOuterSs, str), []kv{{"a", "1|va"}, {"b", "1|-"}})
	// Stream time far ahead on every partition closes every window: the
	// unmatched records come out, each once, with nil for the missing side.
	for _, k := range keys {
		must(t, d.PipeViews(k, "late", at(time.Hour)))
	}
	read(t, d.ReadInnerSs, str)
	var left []kv
	for _, k := range keys {
		if k != "b" {
			left = append(left, kv{k, "1|-"})
		}
	}
	check(t, "left, windows closed", read(t, d.ReadLeftSs, str), left)
	outer := []kv{{"b", "-|vb"}}
	for _, k := range keys[2:] {
		outer = append(outer, kv{k, "1|-"})
	}
	check(t, "outer, windows closed", read(t, d.ReadOuterSs, str), outer)
}

func TestStreamTableJoins(t *testing.T) {
	d := newDriver(t)
	for _, k := range []string{"a", "b", "c", "d"} {
		must(t, d.PipeUsers(k, "user-"+k, at(0)))
	}
	for _, k := range []string{"a", "b", "c", "d", "x"} {
		must(t, d.PipeClicks(k, 2, at(time.Second)))
	}
	must(t, d.DeleteUsers("a", at(2*time.Second)))
	must(t, d.PipeClicks("a", 3, at(3*time.Second)))
	check(t, "inner", read(t, d.ReadInnerSt, str), []kv{{"a", "2@user-a"}, {"b", "2@user-b"}, {"c", "2@user-c"}, {"d", "2@user-d"}})
	check(t, "left", read(t, d.ReadLeftSt, str), []kv{{"a", "2@user-a"}, {"a", "3@-"}, {"b", "2@user-b"}, {"c", "2@user-c"}, {"d", "2@user-d"}, {"x", "2@-"}})
}

func TestTableTableJoins(t *testing.T) {
	d := newDriver(t)
	must(t, d.PipePrices("a", 10, at(0)))
	must(t, d.PipeStock("a", 5, at(time.Second)))
	must(t, d.PipeStock("b", 7, at(time.Second)))
	must(t, d.DeletePrices("a", at(2*time.Second)))
	check(t, "inner", read(t, d.ReadInnerTt, ptr), []kv{{"a", "10x5"}, {"a", "<tombstone>"}})
	check(t, "left", read(t, d.ReadLeftTt, ptr), []kv{{"a", "10x-"}, {"a", "10x5"}, {"a", "<tombstone>"}})
	check(t, "outer", read(t, d.ReadOuterTt, ptr), []kv{{"a", "10x-"}, {"a", "10x5"}, {"a", "-x5"}, {"b", "-x7"}})
}

// TestRekeyedJoin: views keyed by their value meet the clicks of that key in
// one task, through the repartition topic, whatever partition they came from.
func TestRekeyedJoin(t *testing.T) {
	d := newDriver(t)
	for _, k := range []string{"p", "q", "r", "s"} {
		must(t, d.PipeViews(k, "user-"+k, at(time.Second)))
	}
	for _, k := range []string{"p", "q", "r", "s"} {
		must(t, d.PipeClicks("user-"+k, 1, at(2*time.Second)))
	}
	check(t, "rekeyed", read(t, d.ReadRekeyedSs, str), []kv{{"user-p", "1|user-p"}, {"user-q", "1|user-q"}, {"user-r", "1|user-r"}, {"user-s", "1|user-s"}})
}
