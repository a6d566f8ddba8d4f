package opskeyed

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/kgen-dev/kgen/runtime/streamtest"
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

// lastValues is the last value written for each key.
func lastValues[V any](t *testing.T, read func() ([]stream.Record[string, *V], error)) map[string]V {
	t.Helper()
	recs, err := read()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]V{}
	for _, r := range recs {
		if r.Value == nil {
			t.Fatalf("tombstone for %q", r.Key)
		}
		out[r.Key] = *r.Value
	}
	return out
}

func TestGroupings(t *testing.T) {
	d := newDriver(t)
	users := []string{"ann", "bob", "bot-1", "cy", "dee", "ed"}
	for i := range 30 {
		user, page := users[i%len(users)], fmt.Sprintf("page-%d", i%5)
		if err := d.PipeClicks(user, page, t0.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	// Counted where the clicks are: the key never changed.
	counts := lastValues(t, d.ReadCounts)
	if diff := cmp.Diff(map[string]int64{"ann": 5, "bob": 5, "cy": 5, "dee": 5, "ed": 5}, counts); diff != "" {
		t.Errorf("clicks per user (-want +got):\n%s", diff)
	}
	// Re-keyed by page by a processor: each page's first user, found only
	// because all clicks on a page meet in one task.
	firsts := lastValues(t, d.ReadFirsts)
	want := map[string]string{"page-0": "ann", "page-1": "bob", "page-2": "bot-1", "page-3": "cy", "page-4": "dee"}
	if diff := cmp.Diff(want, firsts); diff != "" {
		t.Errorf("first user per page (-want +got):\n%s", diff)
	}
}

func TestTableAggregations(t *testing.T) {
	d := newDriver(t)
	for _, p := range []struct {
		item  string
		price int64
	}{{"pen", 2}, {"ink", 30}, {"desk", 300}, {"lamp", 80}, {"lamp", 120}} {
		if err := d.PipePrices(p.item, p.price, t0); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.DeletePrices("ink", t0); err != nil {
		t.Fatal(err)
	}
	// lamp moved from cheap to dear; ink was deleted.
	if diff := cmp.Diff(map[string]int64{"cheap": 1, "dear": 2}, lastValues(t, d.ReadBySize)); diff != "" {
		t.Errorf("items per band (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int64{"cheap": 2, "dear": 420}, lastValues(t, d.ReadSums)); diff != "" {
		t.Errorf("price sum per band (-want +got):\n%s", diff)
	}
}

// TestNullsOnNonNullableTopics pipes a null key and a tombstone, typed, to
// topics whose sides cannot say null: the sources drop both, count them by
// reason, and nothing reaches a count or a table (Kafka Streams drops them
// at the aggregation and at the table source).
func TestNullsOnNonNullableTopics(t *testing.T) {
	d := newDriver(t)
	for _, pipe := range []func() error{
		func() error { return d.PipeClicks("ann", "page-1", t0) },
		func() error { return d.PipeClicksNullKey("page-2", t0.Add(time.Second)) },
		func() error { return d.PipeClicksTombstone("ann", t0.Add(2*time.Second)) },
		func() error { return d.PipeClicksTombstone("bob", t0.Add(3*time.Second)) },
		func() error { return d.PipePricesNullKey(120, t0.Add(4*time.Second)) },
	} {
		if err := pipe(); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(map[string]int64{"ann": 1}, lastValues(t, d.ReadCounts)); diff != "" {
		t.Errorf("clicks per user (-want +got):\n%s", diff)
	}
	if got := lastValues(t, d.ReadBySize); len(got) != 0 {
		t.Errorf("a null-key price reached the table: %v", got)
	}
	want := map[stream.DropReason]uint64{stream.DropNullKey: 2, stream.DropNullValue: 2}
	if diff := cmp.Diff(want, d.Driver().Dropped()); diff != "" {
		t.Errorf("dropped records by reason (-want +got):\n%s", diff)
	}
}
