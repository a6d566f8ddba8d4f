package nullable

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/kgen-dev/kgen/runtime/streamtest"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

// kv is a record's key and value, the value "nil" for a tombstone.
func kv(t *testing.T, read func() ([]stream.Record[string, *int64], error)) []string {
	t.Helper()
	recs, err := read()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range recs {
		v := "nil"
		if r.Value != nil {
			v = fmt.Sprint(*r.Value)
		}
		out = append(out, r.Key+"="+v)
	}
	return out
}

func TestNullableSides(t *testing.T) {
	d, err := NewTestDriver(Factories{}, streamtest.Config{Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	})
	// A null key reaches the processor as nil (and is dropped by it); a
	// tombstone as a nil value, written on as a tombstone; an empty key is
	// not a null one.
	for _, e := range []struct {
		key   *string
		value *int64
	}{{nil, ptr[int64](1)}, {ptr("a"), nil}, {ptr("b"), ptr[int64](2)}, {ptr(""), ptr[int64](0)}} {
		if err := d.PipeEvents(e.key, e.value, t0); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{"a=nil", "b=2", "=0"}, kv(t, d.ReadKept)); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"b=2"}, kv(t, d.ReadLarge)); diff != "" {
		t.Errorf("large (-want +got):\n%s", diff)
	}
	// A table reads a nullable value as its rows: a null deletes the row.
	if err := d.PipePrices("x", ptr[int64](5), t0); err != nil {
		t.Fatal(err)
	}
	if err := d.PipePrices("x", nil, t0); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"x=5", "x=nil"}, kv(t, d.ReadChanges)); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
}

// TestGroupingAndTableDropNulls runs on four partitions: the grouping of
// events drops a null key and a tombstone before its count (the count's
// function takes plain values), and the table over rates drops a null key
// at its source; each drop is counted by reason, as Kafka Streams counts
// them in dropped-records.
func TestGroupingAndTableDropNulls(t *testing.T) {
	d, err := NewTestDriver(Factories{}, streamtest.Config{Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	})
	for _, e := range []struct {
		key   *string
		value *int64
	}{{ptr("a"), ptr[int64](1)}, {nil, ptr[int64](2)}, {ptr("a"), nil}, {ptr("b"), ptr[int64](3)}, {ptr("a"), ptr[int64](4)}, {nil, nil}} {
		if err := d.PipeEvents(e.key, e.value, t0); err != nil {
			t.Fatal(err)
		}
	}
	last := map[string]string{}
	for _, s := range kv(t, d.ReadCounts) {
		k, v, _ := strings.Cut(s, "=")
		last[k] = v
	}
	if diff := cmp.Diff(map[string]string{"a": "2", "b": "1"}, last); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	if err := d.PipeRates(ptr("eur"), ptr[int64](7), t0); err != nil {
		t.Fatal(err)
	}
	if err := d.PipeRates(nil, ptr[int64](9), t0); err != nil {
		t.Fatal(err)
	}
	if err := d.DeleteRates(ptr("eur"), t0); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"eur=7", "eur=nil"}, kv(t, d.ReadRated)); diff != "" {
		t.Errorf("rated (-want +got):\n%s", diff)
	}
	// Null keys: two events (one of them a tombstone too: the key is
	// looked at first) and one rate; null values: one event.
	want := map[stream.DropReason]uint64{stream.DropNullKey: 3, stream.DropNullValue: 1}
	if diff := cmp.Diff(want, d.Driver().Dropped()); diff != "" {
		t.Errorf("dropped by reason (-want +got):\n%s", diff)
	}
}
