package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestStatOf(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want *stat
	}{
		{nil, nil},
		{[]float64{3}, &stat{3, 3, 3}},
		{[]float64{5, 1, 3}, &stat{3, 1, 5}},
		{[]float64{4, 1, 3, 2}, &stat{2.5, 1, 4}},
	} {
		if diff := cmp.Diff(tc.want, statOf(tc.in)); diff != "" {
			t.Errorf("statOf(%v) (-want +got):\n%s", tc.in, diff)
		}
	}
}

func TestRatiosAndTargets(t *testing.T) {
	runs := []runRecord{
		{Workload: "passthrough", Contender: raw, Guarantee: "at-least-once", Run: 1, Status: "ok", RecordsPerSec: 100, CPUSecPerMillion: 2, PeakRSSBytes: 100, FirstOutputMs: 10},
		{Workload: "passthrough", Contender: kgen, Guarantee: "at-least-once", Run: 1, Status: "ok", RecordsPerSec: 90, CPUSecPerMillion: 2, PeakRSSBytes: 100, FirstOutputMs: 10},
		{Workload: "passthrough", Contender: kgen, Guarantee: "at-least-once", Run: 2, Status: "failed", Error: "sink topic holds 3 records, want 4"},
		{Workload: "passthrough", Contender: kstreams, Guarantee: "at-least-once", Run: 1, Status: "ok", RecordsPerSec: 30, CPUSecPerMillion: 8, PeakRSSBytes: 500, FirstOutputMs: 1000},
	}
	o := &options{workloads: []string{"passthrough"}, contenders: allContenders}
	var rep report
	rep.summarize(runs, o, []string{"at-least-once"})
	k := rep.entry("passthrough", kgen, "at-least-once")
	if k.Status != "partial" || k.OK != 1 || k.Runs != 2 || k.RecordsPerSec.Median != 90 {
		t.Errorf("kgen entry: status %s, %d/%d ok, median %v; want partial, 1/2, 90 (the failed run left out)", k.Status, k.OK, k.Runs, k.RecordsPerSec.Median)
	}
	want := []ratios{
		{Workload: "passthrough", Guarantee: "at-least-once", Versus: raw, RecordsPerSec: 0.9, RecordsPerCPUSec: 1, PeakRSS: 1, FirstOutput: 1},
		{Workload: "passthrough", Guarantee: "at-least-once", Versus: kstreams, RecordsPerSec: 3, RecordsPerCPUSec: 4, PeakRSS: 0.2, FirstOutput: 0.01},
	}
	if diff := cmp.Diff(want, rep.Ratios); diff != "" {
		t.Errorf("ratios (-want +got):\n%s", diff)
	}
	met := map[string]bool{}
	for _, tg := range rep.Targets {
		met[tg.Goal] = tg.Met
	}
	if !met["kgen ≥ 0.85× raw throughput on passthrough"] || !met["kgen ≤ 1/4 of Kafka Streams' peak RSS"] {
		t.Errorf("targets: %+v", rep.Targets)
	}
}

// An operator workload is compared with kgen's processor form of it, and
// with Kafka Streams' DSL, against issue 11's targets.
func TestOperatorFormRatios(t *testing.T) {
	runs := []runRecord{
		{Workload: "passthrough", Contender: kgen, Guarantee: "at-least-once", Run: 1, Status: "ok", RecordsPerSec: 100, CPUSecPerMillion: 2, PeakRSSBytes: 100, FirstOutputMs: 10},
		{Workload: "ops-passthrough", Contender: kgen, Guarantee: "at-least-once", Run: 1, Status: "ok", RecordsPerSec: 85, CPUSecPerMillion: 2.5, PeakRSSBytes: 100, FirstOutputMs: 10},
		{Workload: "ops-passthrough", Contender: kstreams, Guarantee: "at-least-once", Run: 1, Status: "ok", RecordsPerSec: 30, CPUSecPerMillion: 15, PeakRSSBytes: 500, FirstOutputMs: 1000},
	}
	o := &options{workloads: []string{"passthrough", "ops-passthrough"}, contenders: allContenders}
	var rep report
	rep.summarize(runs, o, []string{"at-least-once"})
	var got *ratios
	for i := range rep.Ratios {
		if rep.Ratios[i].Versus == processorForm {
			got = &rep.Ratios[i]
		}
	}
	if got == nil || got.Workload != "ops-passthrough" || got.RecordsPerSec != 0.85 || got.RecordsPerCPUSec != 0.8 {
		t.Fatalf("processor-form ratio: %+v, want ops-passthrough at 0.85× throughput and 0.8× records per CPU second", got)
	}
	met := map[string]bool{}
	for _, tg := range rep.Targets {
		met[tg.Goal] = tg.Met
	}
	if m, ok := met["operator form ≥ 0.9× the processor form's throughput (issue 11)"]; !ok || m {
		t.Errorf("0.85× the processor form: target present %v, met %v; want present and missed", ok, m)
	}
	if m, ok := met["operator form ≥ 5× Kafka Streams' DSL records per CPU second (issue 11)"]; !ok || !m {
		t.Errorf("6× Kafka Streams: target present %v, met %v; want present and met", ok, m)
	}
}
