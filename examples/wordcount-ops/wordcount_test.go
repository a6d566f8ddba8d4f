package wordcountops

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kgen-dev/kgen/examples/wordcount-ops/model"
	"github.com/kgen-dev/kgen/runtime/streamtest"
)

func newDriver(t *testing.T) *TestDriver {
	t.Helper()
	d, err := NewTestDriver(Factories{}, streamtest.Config{})
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

func TestWordCount(t *testing.T) {
	d := newDriver(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, s := range []string{"The cat sat.", "the CAT ran, the dog didn't"} {
		if err := d.PipeSentences("", model.Sentence{Text: s}, t0.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := d.ReadWordCounts()
	if err != nil {
		t.Fatal(err)
	}
	type kv struct {
		Key   string
		Value int64
	}
	var pairs []kv
	for _, r := range got {
		if r.Value == nil {
			t.Fatalf("tombstone for %q: a count is never deleted", r.Key)
		}
		pairs = append(pairs, kv{r.Key, *r.Value})
	}
	want := []kv{
		{"the", 1}, {"cat", 1}, {"sat", 1},
		{"the", 2}, {"cat", 2}, {"ran", 1}, {"the", 3}, {"dog", 1}, {"didn't", 1},
	}
	if diff := cmp.Diff(want, pairs); diff != "" {
		t.Errorf("word counts (-want +got):\n%s", diff)
	}
	// Each output carries the timestamp of the sentence it came from.
	if len(got) > 3 && !got[3].Timestamp.Equal(t0.Add(time.Second)) {
		t.Errorf("timestamp of %v = %v, want %v", got[3], got[3].Timestamp, t0.Add(time.Second))
	}

	counts, err := d.Counts()
	if err != nil {
		t.Fatal(err)
	}
	for word, want := range map[string]int64{"the": 3, "cat": 2, "dog": 1, "missing": 0} {
		row, ok, err := counts.Get(word)
		if err != nil || ok != (want > 0) || row.Value != want {
			t.Errorf("counts[%q] = %d, %v, %v; want %d", word, row.Value, ok, err, want)
		}
	}
}

// On several partitions, as in production: the sentences of every partition
// feed one count per word, through groupBy's repartition topic
// wordcount-ops-by-word-repartition. Without it (a count reading the words
// in the sentences' tasks), each sentence partition's task would keep its own
// count of each word, and this test fails.
func TestWordCountOnFourPartitions(t *testing.T) {
	d, err := NewTestDriver(Factories{}, streamtest.Config{Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	text := []string{"the cat sat on the mat", "the dog sat", "a cat and a dog", "the end"}
	truth := map[string]int64{}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 40 {
		s := text[i%len(text)]
		for _, w := range strings.Fields(s) {
			truth[w]++
		}
		if err := d.PipeSentences(fmt.Sprintf("sentence-%d", i), model.Sentence{Text: s}, t0); err != nil {
			t.Fatal(err)
		}
	}
	got, err := d.ReadWordCounts()
	if err != nil {
		t.Fatal(err)
	}
	last := map[string]int64{}
	for _, r := range got {
		last[r.Key] = max(last[r.Key], *r.Value)
	}
	if diff := cmp.Diff(truth, last); diff != "" {
		t.Fatalf("last count of each word (-want +got):\n%s", diff)
	}
}
