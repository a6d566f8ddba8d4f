package main

import (
	"testing"
	"time"

	"github.com/kgen-dev/kgen/bench/internal/protocol"
)

// A source of one record per minute over the hour: a record at an odd
// minute sits on a mark and joins it alone; one at an even minute is a
// minute from the marks on both sides (both ends count), except minute 0,
// which has a mark only after it.
func TestJoinOutputs(t *testing.T) {
	src := &source{Records: 60, FirstTimestampMs: 1_700_000_040_000, SpanMs: time.Hour.Milliseconds()}
	if got, want := src.joinOutputs(), int64(30+1+29*2); got != want {
		t.Fatalf("joinOutputs = %d, want %d", got, want)
	}
	if protocol.RightMarks*2 != 60 {
		t.Fatalf("the marks no longer cover the source's hour two minutes apart: the test's count is stale")
	}
}

func TestJoinsExpectSinkRecords(t *testing.T) {
	for _, c := range []struct {
		w       string
		outputs int64
		want    int64
	}{{protocol.StreamTableJoin, 7, 100}, {protocol.StreamStreamJoin, 7, 7}} {
		exp, err := protocol.Expected(c.w, 100, c.outputs)
		if err != nil || exp.Sink != c.want || exp.Changelog != 0 {
			t.Errorf("Expected(%s, 100, %d) = %+v, %v; want %d sink records, no changelog", c.w, c.outputs, exp, err, c.want)
		}
	}
}
