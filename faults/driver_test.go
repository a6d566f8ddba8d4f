package faults

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/runtime/stream"
)

func TestScheduleKeepsKillsOutOfTheOutage(t *testing.T) {
	for seed := range uint64(50) {
		d := &driver{
			cfg: Config{Kills: 10, Outage: true, OutageMin: 10 * time.Second, OutageMax: 20 * time.Second, ProduceTime: 2 * time.Minute},
			rng: rand.New(rand.NewPCG(seed, seed)),
		}
		evs, outageFor, err := d.schedule()
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if outageFor < 10*time.Second || outageFor > 20*time.Second {
			t.Fatalf("seed %d: outage of %v, want 10s to 20s", seed, outageFor)
		}
		var kills, outages int
		var outageAt time.Duration
		for i, ev := range evs {
			if i > 0 && ev.at < evs[i-1].at {
				t.Fatalf("seed %d: events out of order: %v after %v", seed, ev.at, evs[i-1].at)
			}
			switch ev.kind {
			case evKill:
				kills++
			case evOutage:
				outages++
				outageAt = ev.at
			}
		}
		if kills != 10 || outages != 1 {
			t.Fatalf("seed %d: %d kills and %d outages, want 10 and 1", seed, kills, outages)
		}
		for _, ev := range evs {
			if ev.kind == evKill && ev.at > outageAt-outageMargin && ev.at < outageAt+outageFor+outageMargin {
				t.Errorf("seed %d: kill at %v falls in the outage at %v for %v", seed, ev.at, outageAt, outageFor)
			}
		}
	}
}

func TestRecovered(t *testing.T) {
	base := map[int32]int64{0: 10, 1: 20}
	tests := []struct {
		name            string
		committed, ends map[int32]int64
		want            bool
	}{
		{"no progress", map[int32]int64{0: 10, 1: 20}, map[int32]int64{0: 50, 1: 50}, false},
		{"one partition moved", map[int32]int64{0: 11, 1: 20}, map[int32]int64{0: 50, 1: 50}, false},
		{"both moved", map[int32]int64{0: 11, 1: 21}, map[int32]int64{0: 50, 1: 50}, true},
		{"idle partition at its end", map[int32]int64{0: 11, 1: 20}, map[int32]int64{0: 50, 1: 20}, true},
	}
	for _, tt := range tests {
		if got := recovered(base, tt.committed, tt.ends); got != tt.want {
			t.Errorf("%s: recovered = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestSummaryLastLine(t *testing.T) {
	r := Verify(handTruth, outputsOf(t, []step{{"a", 1, 0}, {"a", 1, 0}, {"a", 2, 0}, {"a", 4, 0}, {"b", 1, 0}, {"b", 2, 0}}), stream.ExactlyOnce)
	s := &Summary{Guarantee: stream.ExactlyOnce, Kills: 12, Report: r}
	if got, want := s.LastLine(), "faults: 12 kills, 1 duplicates, 1 losses, guarantee exactly-once"; got != want {
		t.Errorf("LastLine = %q, want %q", got, want)
	}
	if s.Held() {
		t.Error("Held() = true for a run with a duplicate and a loss")
	}
	s = &Summary{Guarantee: stream.AtLeastOnce, Kills: 3, Report: Verify(handTruth, outputsOf(t, []step{{"a", 1, 0}, {"a", 1, 0}, {"a", 2, 0}, {"a", 3, 0}, {"a", 4, 0}, {"b", 1, 0}, {"b", 2, 0}}), stream.AtLeastOnce)}
	if !s.Held() {
		t.Errorf("Held() = false for an at-least-once run with only a duplicate: %s", s.Report)
	}
	s.Crashes = []string{"instance i1 exited"}
	if s.Held() {
		t.Error("Held() = true for a run in which an instance crashed")
	}
}

func TestScheduleRefusesNoRoomForKills(t *testing.T) {
	d := &driver{
		cfg: Config{Kills: 2, Outage: true, OutageMin: 10 * time.Second, OutageMax: 10 * time.Second, ProduceTime: 8 * time.Second},
		rng: rand.New(rand.NewPCG(1, 1)),
	}
	if _, _, err := d.schedule(); err == nil {
		t.Fatal("schedule accepted an 8s production around a 10s outage with kills 15s away from it")
	}
}

func TestCommittedPart(t *testing.T) {
	recs, _, err := Workload{Records: 2000, Keys: 50, Skew: 1.2, Seed: 3}.Generate()
	if err != nil {
		t.Fatal(err)
	}
	const partitions = 4
	// Commit the first 100 offsets of every partition but the last, which
	// has nothing committed.
	committed := map[int32]int64{0: 100, 1: 100, 2: 100}
	var outs []OutputRecord
	seen := map[int32]int64{}
	aggs := map[string]Aggregate{}
	for _, r := range recs {
		p := stream.KafkaPartition([]byte(r.Key), partitions)
		aggs[r.Key] = aggs[r.Key].Add(r.Value)
		outs = append(outs, OutputRecord{Key: r.Key, Partition: p, Offset: seen[p],
			Value: AppendOutput(nil, Output{Seq: r.Seq, Aggregate: aggs[r.Key], Partition: p, Offset: seen[p]})})
		seen[p]++
	}
	truth, kept := committedPart(recs, partitions, committed, outs)
	if got, want := truth.Records(), 300; got != want {
		t.Fatalf("committed part holds %d inputs, want %d", got, want)
	}
	if len(kept) != 300 {
		t.Fatalf("kept %d outputs, want the 300 of committed inputs", len(kept))
	}
	if r := Verify(truth, kept, stream.ExactlyOnce); !r.Held() {
		t.Fatalf("the committed part of a clean run does not verify: %s", r)
	}
}
