package dsl_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/runtime/dsl"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// ssJoinTopo joins the topics "left" and "right" (string keys and values)
// in w, writing "l|r" ("null" for a missing side) to "out".
func ssJoinTopo(kind string, w dsl.JoinWindows) *stream.Topology {
	s := serde.String{}
	topo := stream.NewTopology()
	stream.AddSource(topo, "l", "left", s, s)
	stream.AddSource(topo, "r", "right", s, s)
	str := func(p *string) string {
		if p == nil {
			return "null"
		}
		return *p
	}
	opts := dsl.StreamJoinOptions{}
	switch kind {
	case "inner":
		dsl.JoinStreams(topo, "join", w, s, s, s, opts, func(_ string, l, r string) string { return l + "|" + r }, "l", "r")
	case "left":
		dsl.LeftJoinStreams(topo, "join", w, s, s, s, opts, func(_ string, l string, r *string) string { return l + "|" + str(r) }, "l", "r")
	case "outer":
		dsl.OuterJoinStreams(topo, "join", w, s, s, s, opts, func(_ string, l, r *string) string { return str(l) + "|" + str(r) }, "l", "r")
	}
	stream.AddSink(topo, "out", "out", s, s, "join")
	return topo
}

type ssJoinIn struct {
	topic, key, value string
	at                time.Duration // ms after t0
}

// A stream–stream join in windows of 10ms before and after, grace 5ms, on
// one partition: a pair joins whichever side comes second, stamped with the
// later time; an out-of-order record joins a pending one; a left (outer)
// record without a partner is emitted only once the shared stream time
// passes its time plus after (a right one's: plus before) plus grace, and
// at once when it arrives after that; a partner removes a pending record.
// The timestamps are relative to t0, so the windows never reach below 0.
func TestStreamJoinKinds(t *testing.T) {
	recs := []ssJoinIn{
		{"left", "a", "A1", 0},
		{"right", "a", "a1", 5},  // joins A1
		{"right", "b", "b1", 6},  // alone: outer waits until 21
		{"left", "c", "C1", 20},  // alone for now
		{"left", "a", "A2", 22},  // closes b1 (outer); A2 waits until 37
		{"right", "c", "c1", 18}, // out of order: joins C1, stamped 20
		{"right", "d", "d1", 3},  // its window closed (3+10 < 22): outer emits it at once
		{"left", "e", "E1", 41},  // closes A2
	}
	w := dsl.JoinWindowsOf(10 * ms).Grace(5 * ms)
	for _, tc := range []struct {
		kind string
		want []string
	}{
		{"inner", []string{"a=A1|a1@5", "c=C1|c1@20"}},
		{"left", []string{"a=A1|a1@5", "c=C1|c1@20", "a=A2|null@22"}},
		{"outer", []string{"a=A1|a1@5", "b=null|b1@6", "c=C1|c1@20", "d=null|d1@3", "a=A2|null@22"}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			d := driver(t, ssJoinTopo(tc.kind, w), 1)
			for _, r := range recs {
				pipe(t, d, r.topic, r.key, r.value, r.at)
			}
			same(t, "out", render(d.Output("out"), text), tc.want)
		})
	}
}

// The window's bounds, on one key, so on 1 and 4 partitions alike
// (before 5ms, after 10ms, grace 2ms, outer): a right record exactly before
// or after from a left one joins it, one more does not (and, its window
// already closed, is emitted at once); a pending right record is emitted once
// the stream time passes its time plus before plus grace, not when it
// reaches it. A left record does not look for it as soon as that: as in
// Kafka Streams, the pending records are read only when the earliest one's
// time plus the arriving side's after plus grace has passed.
func TestStreamJoinBounds(t *testing.T) {
	for _, partitions := range []int32{1, 4} {
		t.Run(fmt.Sprint(partitions), func(t *testing.T) {
			w := dsl.JoinWindowsOf(0).Before(5 * ms).After(10 * ms).Grace(2 * ms)
			d := driver(t, ssJoinTopo("outer", w), partitions)
			for _, r := range []ssJoinIn{
				{"left", "k", "L100", 100},
				{"right", "k", "r95", 95},   // 100-5: joins
				{"right", "k", "r94", 94},   // 100-6: alone, window closed (94+5 < 100)
				{"right", "k", "r110", 110}, // 100+10: joins
				{"right", "k", "r111", 111}, // alone: pending until 111+5+2 = 118
				{"left", "k", "L2", 118},    // r111 still open
				{"left", "k", "L3", 119},    // r111 closed, but 111+10+2 >= 119: not read
				{"right", "k", "r2", 119},   // 111+5+2 < 119: emits r111, then joins L2 and L3
			} {
				pipe(t, d, r.topic, r.key, r.value, r.at)
			}
			same(t, "out", render(d.Output("out"), text), []string{
				"k=L100|r95@100", "k=null|r94@94", "k=L100|r110@110",
				"k=null|r111@111", "k=L2|r2@119", "k=L3|r2@119",
			})
		})
	}
}

// Nulls reaching a join (keys and values read with dsl.Nullable): a record
// with a nil key and a value that could go without a partner (left: a left
// record; outer: either) is the joiner's at once, with the nil key; every
// other nil key or value is dropped and counted by reason.
func TestStreamJoinNulls(t *testing.T) {
	ns := dsl.Nullable[string](serde.String{})
	str := func(p *string) string {
		if p == nil {
			return "null"
		}
		return *p
	}
	for _, tc := range []struct {
		kind    string
		want    []string
		dropped map[stream.DropReason]uint64
	}{
		{"inner", nil, map[stream.DropReason]uint64{stream.DropNullKey: 2, stream.DropNullValue: 2}},
		{"left", []string{"=N1|null@1"}, map[stream.DropReason]uint64{stream.DropNullKey: 1, stream.DropNullValue: 2}},
		{"outer", []string{"=N1|null@1", "=null|n1@2"}, map[stream.DropReason]uint64{stream.DropNullValue: 2}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			topo := stream.NewTopology()
			stream.AddSource(topo, "l", "left", ns, ns)
			stream.AddSource(topo, "r", "right", ns, ns)
			w := dsl.JoinWindowsOf(10 * ms)
			switch tc.kind {
			case "inner":
				dsl.JoinStreams(topo, "join", w, ns, ns, ns, dsl.StreamJoinOptions{}, func(_ *string, l, r *string) string { return str(l) + "|" + str(r) }, "l", "r")
			case "left":
				dsl.LeftJoinStreams(topo, "join", w, ns, ns, ns, dsl.StreamJoinOptions{}, func(_ *string, l *string, r **string) string {
					if r != nil {
						return str(l) + "|" + str(*r)
					}
					return str(l) + "|null"
				}, "l", "r")
			case "outer":
				dsl.OuterJoinStreams(topo, "join", w, ns, ns, ns, dsl.StreamJoinOptions{}, func(_ *string, l, r **string) string {
					s := "null"
					if l != nil {
						s = str(*l)
					}
					if r != nil {
						return s + "|" + str(*r)
					}
					return s + "|null"
				}, "l", "r")
			}
			stream.AddSink(topo, "out", "out", ns, serde.Serde[string](serde.String{}), "join")
			d := driver(t, topo, 1)
			for _, r := range []struct {
				topic      string
				key, value []byte
				at         time.Duration
			}{
				{"left", nil, []byte("N1"), 1},
				{"right", nil, []byte("n1"), 2},
				{"left", []byte("a"), nil, 3},
				{"right", []byte("a"), nil, 4},
			} {
				if err := d.Pipe(r.topic, r.key, r.value, nil, t0.Add(r.at*ms)); err != nil {
					t.Fatal(err)
				}
			}
			same(t, "out", render(d.Output("out"), text), tc.want)
			got := d.Dropped()
			for reason, n := range tc.dropped {
				if got[reason] != n {
					t.Errorf("dropped %s: %d, want %d (all: %v)", reason, got[reason], n, got)
				}
			}
			if got[stream.DropNullKey]+got[stream.DropNullValue] != tc.dropped[stream.DropNullKey]+tc.dropped[stream.DropNullValue] {
				t.Errorf("dropped %v, want %v", got, tc.dropped)
			}
		})
	}
}

// Windows Kafka Streams refuses stop the task at Init.
func TestStreamJoinBadWindows(t *testing.T) {
	for _, w := range []dsl.JoinWindows{
		dsl.JoinWindowsOf(0).Before(-5 * ms).After(2 * ms),
		dsl.JoinWindowsOf(5 * ms).Grace(-1 * ms),
	} {
		topo := ssJoinTopo("inner", w)
		d, err := stream.NewLocalDriver(topo, stream.LocalConfig{AppID: "dsl"})
		if err == nil {
			err = d.Pipe("left", []byte("a"), []byte("x"), nil, t0)
			d.Close()
		}
		if err == nil {
			t.Errorf("%+v: no error", w)
		}
	}
}
