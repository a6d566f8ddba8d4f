package nullable

import (
	"fmt"
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
