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

// The joins are held to issue 19's 5× Kafka Streams' records per CPU
// second: 4× misses it.
func TestJoinTarget(t *testing.T) {
	runs := []runRecord{
		{Workload: protocol.StreamTableJoin, Contender: kgen, Guarantee: "at-least-once", Run: 1, Status: "ok", RecordsPerSec: 100, CPUSecPerMillion: 5, PeakRSSBytes: 100, FirstOutputMs: 10},
		{Workload: protocol.StreamTableJoin, Contender: kstreams, Guarantee: "at-least-once", Run: 1, Status: "ok", RecordsPerSec: 20, CPUSecPerMillion: 20, PeakRSSBytes: 500, FirstOutputMs: 1000},
	}
	o := &options{workloads: []string{protocol.StreamTableJoin}, contenders: allContenders}
	var rep report
	rep.summarize(runs, o, []string{"at-least-once"})
	for _, tg := range rep.Targets {
		if tg.Goal == "kgen ≥ 5× (aim 10×) Kafka Streams' records per CPU second on the joins (issue 19)" {
			if tg.Met || tg.Value != 4 {
				t.Fatalf("join target: %+v, want 4× and missed", tg)
			}
			return
		}
	}
	t.Fatalf("no join target among %+v", rep.Targets)
}
