package main

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kgen-dev/kgen/bench/internal/protocol"
)

type emitted struct {
	key   string
	start int64
	n     int64
	sink  bool
}

func feed(final bool, recs ...[2]any) []emitted {
	w := windows{streamTime: -1, counts: map[int64]map[string]int64{}}
	var out []emitted
	for _, r := range recs {
		rec := &kgo.Record{Key: []byte(r[0].(string)), Timestamp: time.UnixMilli(r[1].(int64))}
		w.add(rec, final, func(key []byte, start, n int64, sink bool) {
			out = append(out, emitted{string(key), start, n, sink})
		})
	}
	return out
}

// Updates: every record's new count to the changelog and the sink; final:
// the changelog as before, and each window once, when the stream time
// passes its end plus the grace, with its last count. A record too late
// for its window is dropped.
func TestWindows(t *testing.T) {
	m, g := protocol.WindowSize.Milliseconds(), protocol.WindowGrace.Milliseconds()
	recs := [][2]any{{"a", int64(1)}, {"a", int64(2)}, {"b", m - 1}, {"a", m + 5}, {"a", m + g - 1}, {"b", m + g}, {"a", int64(3)}}
	up := feed(false, recs...)
	wantUp := []emitted{
		{"a", 0, 1, false}, {"a", 0, 1, true}, {"a", 0, 2, false}, {"a", 0, 2, true},
		{"b", 0, 1, false}, {"b", 0, 1, true}, {"a", m, 1, false}, {"a", m, 1, true},
		{"a", m, 2, false}, {"a", m, 2, true}, {"b", m, 1, false}, {"b", m, 1, true},
	}
	if !slices.Equal(up, wantUp) {
		t.Errorf("updates:\n got %v\nwant %v", up, wantUp)
	}
	fin := feed(true, recs...)
	var sinks []string
	changelog := 0
	for _, e := range fin {
		if e.sink {
			sinks = append(sinks, fmt.Sprintf("%s@%d=%d", e.key, e.start, e.n))
		} else {
			changelog++
		}
	}
	slices.Sort(sinks)
	if want := []string{"a@0=2", "b@0=1"}; !slices.Equal(sinks, want) || changelog != 6 {
		t.Errorf("final: sink %v, %d changelog records; want %v, 6", sinks, changelog, want)
	}
}
