package opsrepartition

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kgen-dev/kgen/runtime/streamtest"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// TestRepartition pipes lines keyed by line number over four partitions:
// the words, re-keyed, meet in one task each behind the repartition topic,
// so both the count after the groupByKey (which reads in place) and the
// processor's store see every line of a word.
func TestRepartition(t *testing.T) {
	d, err := NewTestDriver(Factories{}, streamtest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	})
	lines := []string{"a", "b", "c", "a", "b", "c", "a", "b", "a", "a", "b", "c"}
	for i, w := range lines {
		if err := d.PipeLines(fmt.Sprintf("line-%d", i), w, t0.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]int64{"a": 5, "b": 4, "c": 3}
	recs, err := d.ReadCounts()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int64{}
	for _, r := range recs {
		counts[r.Key] = *r.Value
	}
	if diff := cmp.Diff(want, counts); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	store, err := d.LastLine()
	if err != nil {
		t.Fatal(err)
	}
	for w, n := range want {
		got, _, err := store.Get(w)
		if err != nil {
			t.Fatal(err)
		}
		if got != fmt.Sprint(n) {
			t.Errorf("processor's count of %q: %q, want %d", w, got, n)
		}
	}
	words, err := d.ReadWords()
	if err != nil {
		t.Fatal(err)
	}
	if len(words) != len(lines) {
		t.Errorf("%d records in words, want %d", len(words), len(lines))
	}
	for _, r := range words {
		if r.Key != r.Value {
			t.Errorf("words: key %q for value %q, want the word", r.Key, r.Value)
		}
	}
}
