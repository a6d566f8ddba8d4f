package ops

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kgen-dev/kgen/runtime/streamtest"
	"github.com/kgen-dev/kgen/testdata/golden/ops/model"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newDriver(t *testing.T) *TestDriver {
	t.Helper()
	d, err := NewTestDriver(Factories{}, streamtest.Config{Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	})
	return d
}

func TestOperators(t *testing.T) {
	d := newDriver(t)
	// Sentences under many keys, so they land on every partition: the
	// counts are right only because groupBy and groupByKey repartition.
	lines := []string{"The cat sat", "the CAT ran away", "a dog and a cat", "the end"}
	for i := range 20 {
		if err := d.PipeSentences(fmt.Sprintf("s%d", i), model.Sentence{Text: lines[i%len(lines)]}, t0); err != nil {
			t.Fatal(err)
		}
	}
	counts, err := d.ReadWordCounts()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, r := range counts {
		got[r.Key] = *r.Value
	}
	want := map[string]int64{"the": 15, "cat": 15, "sat": 5, "ran": 5, "away": 5, "a": 10, "dog": 5, "and": 5, "end": 5}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("word counts (-want +got):\n%s", diff)
	}
	// The processor reading the count's table updates sees old and new.
	audit, err := d.ReadAudit()
	if err != nil {
		t.Fatal(err)
	}
	if len(audit) != 70 || audit[0].Value != "none->1" {
		t.Errorf("audit: %d records, first %v", len(audit), audit[0])
	}
	// branch, mapValues: only the long words, shouted.
	long, err := d.ReadLongWords()
	if err != nil {
		t.Fatal(err)
	}
	if len(long) != 5 || long[0].Key != "s1" || long[0].Value != "AWAY" {
		t.Errorf("long words: %v, want AWAY 5 times, under the sentence's key", long)
	}
	// map then groupByKey then reduce: the short words' lengths per first
	// letter, summed where all of a letter's words meet.
	totals, err := d.ReadLetterTotals()
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string]int64{}
	for _, r := range totals {
		sums[r.Key] = *r.Value
	}
	wantSums := map[string]int64{"t": 3 * 15, "c": 3 * 15, "s": 15, "r": 15, "a": 1*10 + 3*5, "d": 15, "e": 15}
	if diff := cmp.Diff(wantSums, sums); diff != "" {
		t.Errorf("letter totals (-want +got):\n%s", diff)
	}
	// flatMap, selectKey, filterNot: every word but one-letter ones, keyed
	// by its first letter.
	pairs, err := d.ReadPairs()
	if err != nil {
		t.Fatal(err)
	}
	if len(pairs) != 70-10 {
		t.Errorf("pairs: %d, want 60", len(pairs))
	}
	for _, p := range pairs {
		if p.Value == 1 {
			t.Errorf("filterNot let %v through", p)
		}
	}
}

func TestTable(t *testing.T) {
	d := newDriver(t)
	for _, p := range []struct{ key, name, city string }{
		{"p1", "ann", "oslo"}, {"p2", "bob", "oslo"}, {"p3", "cy", "rome"}, {"p1", "ann", "rome"},
	} {
		if err := d.PipeProfiles(p.key, model.Profile{Name: p.name, City: p.city}, t0); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.DeleteProfiles("p2", t0); err != nil {
		t.Fatal(err)
	}
	// toStream of the table: upserts, and a tombstone for the deletion.
	cp, err := d.ReadProfileCopy()
	if err != nil {
		t.Fatal(err)
	}
	lastCopy := map[string]*model.Profile{}
	for _, r := range cp {
		lastCopy[r.Key] = r.Value
	}
	if lastCopy["p2"] != nil || lastCopy["p1"] == nil || lastCopy["p1"].City != "rome" {
		t.Errorf("profile copy: %v", lastCopy)
	}
	// groupBy of a table, aggregate with adder and subtractor: people per
	// city, ann moved and bob left.
	cc, err := d.ReadCityCounts()
	if err != nil {
		t.Fatal(err)
	}
	perCity := map[string]int64{}
	for _, r := range cc {
		perCity[r.Key] = *r.Value
	}
	if diff := cmp.Diff(map[string]int64{"oslo": 0, "rome": 2}, perCity); diff != "" {
		t.Errorf("people per city (-want +got):\n%s", diff)
	}
	store, err := d.CityStore()
	if err != nil {
		t.Fatal(err)
	}
	v, ok, err := store.Get("rome")
	if err != nil || !ok || v.Value != 2 {
		t.Errorf("city store rome = %v, %v, %v", v, ok, err)
	}
}
