package joinsrekeyed

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/kgen-dev/kgen/runtime/streamtest"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// newDriver runs the spec on 4 partitions (orders on its own 3): a key
// joined in another task than its partner's would find nothing to join.
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

// joined reads an output topic as sorted "key=value" lines.
func joined(t *testing.T, f func() ([]stream.Record[string, string], error)) []string {
	t.Helper()
	recs, err := f()
	must(t, err)
	var out []string
	for _, r := range recs {
		out = append(out, r.Key+"="+r.Value)
	}
	slices.Sort(out)
	return out
}

func check(t *testing.T, what string, got, want []string) {
	t.Helper()
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n got %s\nwant %s", what, strings.Join(got, " "), strings.Join(want, " "))
	}
}

const n = 40 // keys: spread over 4 partitions, several land apart from their partner

// Orders keyed by customer, re-keyed by order id, each join its payment:
// every order is paid, though an order and its payment were on partitions
// picked by different keys (and orders has 3 partitions, payments 4).
func TestRekeyedLeftSide(t *testing.T) {
	d := newDriver(t)
	var want []string
	for i := range n {
		must(t, d.PipeOrders(fmt.Sprintf("c%d", i%7), fmt.Sprintf("o%d", i), t0.Add(time.Second)))
		want = append(want, fmt.Sprintf("o%d=o%d|%d", i, i, 10*i))
	}
	for i := range n {
		must(t, d.PipePayments(fmt.Sprintf("o%d", i), int64(10*i), t0.Add(2*time.Second)))
	}
	check(t, "paid", joined(t, d.ReadPaidOut), want)
}

// Both sides re-keyed, by selectKey and by map: each value's left and
// right records meet.
func TestRekeyedBothSides(t *testing.T) {
	d := newDriver(t)
	var want []string
	for i := range n {
		must(t, d.PipeLefts(fmt.Sprintf("l%d", i), fmt.Sprintf("v%d", i), t0.Add(time.Second)))
		must(t, d.PipeRights(fmt.Sprintf("r%d", i), fmt.Sprintf("v%d", i), t0.Add(time.Second)))
		want = append(want, fmt.Sprintf("v%d=v%d|r%d", i, i, i))
	}
	check(t, "both", joined(t, d.ReadBothOut), want)
}

// A click re-keyed by its user looks the user up in the users table.
func TestRekeyedStreamTable(t *testing.T) {
	d := newDriver(t)
	for i := range n {
		must(t, d.PipeUsers(fmt.Sprintf("u%d", i), fmt.Sprintf("name%d", i), t0))
	}
	var want []string
	for i := range n {
		must(t, d.PipeClicks(fmt.Sprintf("k%d", i), fmt.Sprintf("u%d", i), t0.Add(time.Second)))
		want = append(want, fmt.Sprintf("u%d=u%d@name%d", i, i, i))
	}
	check(t, "with-user", joined(t, d.ReadUserOut), want)
}

// A processor that re-keys (rekeys: true) feeds a join, one child at a
// time (ForwardToSwapped names the repartition topic's sink): each record
// meets its new key's row.
func TestRekeyedByProcessor(t *testing.T) {
	d := newDriver(t)
	for i := range n {
		must(t, d.PipeUsers(fmt.Sprintf("u%d", i), fmt.Sprintf("name%d", i), t0))
	}
	var want, copies []string
	for i := range n {
		must(t, d.PipeSwaps(fmt.Sprintf("s%d", i), fmt.Sprintf("u%d", i), t0.Add(time.Second)))
		want = append(want, fmt.Sprintf("u%d=s%d@name%d", i, i, i))
		copies = append(copies, fmt.Sprintf("s%d=u%d", i, i))
	}
	check(t, "swapped", joined(t, d.ReadSwapOut), want)
	check(t, "swap-copy", joined(t, d.ReadSwapCopy), copies)
}
