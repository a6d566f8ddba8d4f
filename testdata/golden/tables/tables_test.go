package tables

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/kgen-dev/kgen/runtime/streamtest"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

// newDriver runs the spec on 4 partitions (products on 2: a foreign-key
// join's tables need not be co-partitioned).
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

// read renders the records of one output as "key:value" (nil: "key:<nil>"),
// sorted by key, in order within a key: keys of several partitions come out
// in task order.
func read[V any](t *testing.T, f func() ([]stream.Record[string, V], error)) string {
	t.Helper()
	recs, err := f()
	must(t, err)
	var out []string
	for _, r := range recs {
		var v any = r.Value
		if p, ok := v.(*string); ok && p != nil {
			v = *p
		}
		if p, ok := v.(*int64); ok && p != nil {
			v = *p
		}
		out = append(out, fmt.Sprintf("%s:%v", r.Key, v))
	}
	slices.SortStableFunc(out, func(a, b string) int {
		return strings.Compare(a[:strings.IndexByte(a, ':')], b[:strings.IndexByte(b, ':')])
	})
	return strings.Join(out, " ")
}

// A stream joined with a global table looks each record up under the key
// its value names, on whatever partition it is: the table holds all of its
// topic everywhere. A deleted row and a key mapped to none ("none") join
// nothing, or nil for the leftJoin.
func TestGlobalJoin(t *testing.T) {
	d := newDriver(t)
	must(t, d.PipeCountries("FR", "France", at(0)))
	must(t, d.PipeCountries("DE", "Germany", at(0)))
	must(t, d.DeleteCountries("DE", at(time.Second)))
	for i, c := range []string{"FR", "DE", "none", "XX", "FR"} {
		must(t, d.PipeOrders(fmt.Sprintf("o%d", i+1), c, at(2*time.Second)))
	}
	if got, want := read(t, d.ReadNamed), "o1:o1@France o5:o5@France"; got != want {
		t.Errorf("join: got %s, want %s", got, want)
	}
	if got, want := read(t, d.ReadMaybeNamed), "o1:o1@France o2:o2@- o3:o3@- o4:o4@- o5:o5@France"; got != want {
		t.Errorf("leftJoin: got %s, want %s", got, want)
	}
	// A later row is seen by later records only.
	must(t, d.PipeCountries("XX", "Xland", at(3*time.Second)))
	must(t, d.PipeOrders("o4", "XX", at(4*time.Second)))
	if got, want := read(t, d.ReadNamed), "o4:o4@Xland"; got != want {
		t.Errorf("join after the table's update: got %s, want %s", got, want)
	}
	// The table's store, as the joins read it: a row, a deleted one, none.
	for _, c := range []struct {
		key, want string
		ok        bool
	}{{"FR", "France", true}, {"XX", "Xland", true}, {"DE", "", false}, {"none", "", false}} {
		got, ok, err := d.CountriesGet(c.key)
		if err != nil || ok != c.ok || got != c.want {
			t.Errorf("CountriesGet(%s) = %q, %v, %v; want %q, %v", c.key, got, ok, err, c.want, c.ok)
		}
	}
}

// A foreign-key join joins each line with the product its value names,
// through its subscription topics: products updated re-join their lines, a
// line deleted or moved to another product is joined anew.
func TestForeignKeyJoin(t *testing.T) {
	d := newDriver(t)
	must(t, d.PipeProducts("p1", 10, at(0)))
	must(t, d.PipeLines("l1", "p1", at(time.Second)))
	must(t, d.PipeLines("l2", "p2", at(time.Second)))
	must(t, d.PipeLines("l3", "none", at(time.Second)))
	must(t, d.PipeProducts("p2", 20, at(2*time.Second)))
	must(t, d.PipeProducts("p1", 11, at(3*time.Second)))
	must(t, d.DeleteLines("l1", at(4*time.Second)))
	must(t, d.PipeLines("l2", "p1", at(5*time.Second)))
	if got, want := read(t, d.ReadPriced), "l1:p1=10 l1:p1=11 l1:<nil> l2:p2=20 l2:p1=11"; got != want {
		t.Errorf("join: got %s, want %s", got, want)
	}
	if got, want := read(t, d.ReadMaybePriced), "l1:p1=10 l1:p1=11 l1:<nil> l2:p2=- l2:p2=20 l2:p1=11 l3:none=-"; got != want {
		t.Errorf("leftJoin: got %s, want %s", got, want)
	}
}

// A versioned table forwards every update its history keeps, one older
// than the key's latest too (out of order), as Kafka Streams' does.
func TestVersionedTable(t *testing.T) {
	d := newDriver(t)
	must(t, d.PipePrices("p1", 1, at(time.Second)))
	must(t, d.PipePrices("p1", 3, at(3*time.Second)))
	must(t, d.PipePrices("p1", 2, at(2*time.Second)))
	must(t, d.DeletePrices("p1", at(4*time.Second)))
	if got, want := read(t, d.ReadPriceLog), "p1:1 p1:3 p1:2 p1:<nil>"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	// The store, as of times before, at and between the versions; the
	// latest is the tombstone of 4 s.
	must(t, d.PipePrices("p2", 7, at(time.Second)))
	undefined := state.PutValidToUndefined
	ms := func(d time.Duration) int64 { return at(d).UnixMilli() }
	for _, c := range []struct {
		key  string
		at   time.Duration // -1: the latest
		want state.VersionedRecord[int64]
		ok   bool
	}{
		{"p1", -1, state.VersionedRecord[int64]{}, false},
		{"p1", 999 * time.Millisecond, state.VersionedRecord[int64]{}, false},
		{"p1", time.Second, state.VersionedRecord[int64]{Value: 1, Timestamp: ms(time.Second), ValidTo: ms(2 * time.Second)}, true},
		{"p1", 2500 * time.Millisecond, state.VersionedRecord[int64]{Value: 2, Timestamp: ms(2 * time.Second), ValidTo: ms(3 * time.Second)}, true},
		{"p1", 3 * time.Second, state.VersionedRecord[int64]{Value: 3, Timestamp: ms(3 * time.Second), ValidTo: ms(4 * time.Second)}, true},
		{"p1", 4 * time.Second, state.VersionedRecord[int64]{}, false},
		{"p2", -1, state.VersionedRecord[int64]{Value: 7, Timestamp: ms(time.Second), ValidTo: undefined}, true},
		{"p2", 5 * time.Second, state.VersionedRecord[int64]{Value: 7, Timestamp: ms(time.Second), ValidTo: undefined}, true},
		{"p3", -1, state.VersionedRecord[int64]{}, false},
	} {
		var got state.VersionedRecord[int64]
		var ok bool
		var err error
		if c.at < 0 {
			got, ok, err = d.PriceHistoryGet(c.key)
		} else {
			got, ok, err = d.PriceHistoryGetAsOf(c.key, at(c.at))
		}
		if err != nil || ok != c.ok || got != c.want {
			t.Errorf("%s as of %v: %+v, %v, %v; want %+v, %v", c.key, c.at, got, ok, err, c.want, c.ok)
		}
	}
}

// TestVersionedJoin: a stream-table join reads a versioned table's row as
// of each trade's time; with grace: 10s the trades wait until the trades'
// stream time is 10 s past them, so they see the out-of-order price of 3 s
// that the join without grace missed, and leave in time order.
func TestVersionedJoin(t *testing.T) {
	d := newDriver(t)
	must(t, d.PipePrices("p1", 10, at(time.Second)))
	must(t, d.PipePrices("p1", 20, at(5*time.Second)))
	must(t, d.PipeTrades("p1", 5, at(500*time.Millisecond))) // before any price
	must(t, d.PipeTrades("p1", 2, at(4*time.Second)))
	must(t, d.PipePrices("p1", 15, at(3*time.Second))) // late: valid from 3 s
	must(t, d.PipeTrades("p1", 3, at(4*time.Second)))
	must(t, d.PipeTrades("p1", 1, at(20*time.Second)))
	must(t, d.PipeTrades("p1", 1, at(40*time.Second)))
	if got, want := read(t, d.ReadTradeValue), "p1:20 p1:45 p1:20 p1:20"; got != want {
		t.Errorf("without grace: got %s, want %s", got, want)
	}
	if got, want := read(t, d.ReadLateTradeValue), "p1:-1 p1:30 p1:45 p1:20"; got != want {
		t.Errorf("with grace: got %s, want %s", got, want)
	}
}
