package dsl_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kgen-dev/kgen/runtime/dsl"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// TestVersionedTable checks a versioned table source: every stored update
// is forwarded (a tombstone too), an out-of-order one (into the history,
// where the store answers it as of its time) marked OutOfOrder with the
// still-current latest value as Old, as Kafka Streams forwards it with
// isLatest false (oracle case versioned-table); one older than the
// history retention is neither stored nor forwarded, and is counted; a
// null key is dropped and counted.
func TestVersionedTable(t *testing.T) {
	ns := dsl.Nullable[string](serde.String{})
	topo := stream.NewTopology()
	dsl.VersionedTable(topo, "table", "in", ns, serde.String{}, "vt", 100*time.Millisecond, stream.StoreOptions{Changelog: true})
	dsl.ToStream[*string, string](topo, "updates", "table")
	var changes []string
	stream.AddProcessor(topo, "changes", func() stream.Processor[*string, dsl.Change[string], *string, string] {
		return changeRecorder{&changes}
	}, "table")
	stream.AddSink(topo, "out", "out", ns, ns, "updates")
	d, _ := nullDriver(t, topo, 1)
	at := func(k, v []byte, ms int64) {
		t.Helper()
		if err := d.Pipe("in", k, v, nil, t0.Add(time.Duration(ms)*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	}
	at([]byte("a"), []byte("1"), 100)
	at([]byte("a"), []byte("2"), 200)
	at([]byte("a"), []byte("0"), 150) // out of order, in the history: not forwarded
	at([]byte("a"), []byte("x"), 50)  // older than 200 - 100: dropped
	at(nil, []byte("n"), 210)         // null key: dropped
	at([]byte("a"), nil, 220)         // tombstone: forwarded
	same(t, "updates", render(d.Output("out"), text), []string{"a=1@100", "a=2@200", "a=0@150", "a=-@220"})
	same(t, "changes", changes, []string{"nil→1", "1→2", "2→0 out of order", "2→nil"})
	if diff := cmp.Diff(map[stream.DropReason]uint64{stream.DropNullKey: 1, stream.DropExpiredVersion: 1}, d.Dropped()); diff != "" {
		t.Errorf("dropped (-want +got):\n%s", diff)
	}
	// The store's changelog: each accepted put, with its time.
	var logged []string
	for _, r := range d.Changelog("vt") {
		v := "-"
		if r.Value != nil {
			v = string(r.Value)
		}
		logged = append(logged, fmt.Sprintf("%s=%s@%d", r.Key, v, r.Timestamp.Sub(t0).Milliseconds()))
	}
	same(t, "changelog", logged, []string{"a=1@100", "a=2@200", "a=0@150", "a=-@220"})
	s := d.Store("vt").(state.VersionedKeyValueStore[*string, *string])
	a := "a"
	base := t0.UnixMilli()
	for _, c := range []struct {
		asOf int64
		want string // "" for none
	}{{base + 120, "1"}, {base + 170, "0"}, {base + 210, "2"}, {base + 230, ""}} {
		got, ok, err := s.GetAsOf(&a, c.asOf)
		if err != nil {
			t.Fatal(err)
		}
		if (c.want == "") != !ok || (ok && *got.Value != c.want) {
			t.Errorf("GetAsOf(a, %d) = %v, %v; want %q", c.asOf-base, got, ok, c.want)
		}
	}
}

// changeRecorder writes each Change it is given as old→new.
type changeRecorder struct{ out *[]string }

func (changeRecorder) Init(*stream.Context[*string, string]) error { return nil }

func (c changeRecorder) Process(_ *stream.Context[*string, string], r stream.Record[*string, dsl.Change[string]]) error {
	s := func(v *string) string {
		if v == nil {
			return "nil"
		}
		return *v
	}
	line := s(r.Value.Old) + "→" + s(r.Value.New)
	if r.Value.OutOfOrder {
		line += " out of order"
	}
	*c.out = append(*c.out, line)
	return nil
}
