package faults

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// step is one output of a hand-made run: key, the input sequence number it
// answers and how many inputs the state had counted, beyond the truth
// (extra > 0: double counted; extra < 0: lost from state).
type step struct {
	key   string
	seq   int64
	extra int
}

var handTruth = Truth{
	"a": {5, 3, 9, 1},
	"b": {2, 7},
}

// outputsOf builds output records for steps: key a in partition 0, b in 1,
// offsets in the order given. The aggregate of a step is the true one after
// seq, with extra copies of the input at seq added, or |extra| inputs
// dropped (the latest ones first).
func outputsOf(t *testing.T, steps []step) []OutputRecord {
	t.Helper()
	var outs []OutputRecord
	offsets := map[int32]int64{}
	for _, s := range steps {
		vals := handTruth[s.key]
		counted := append([]int64(nil), vals[:s.seq]...)
		for range s.extra {
			counted = append(counted, vals[s.seq-1])
		}
		if s.extra < 0 {
			counted = counted[:len(counted)+s.extra]
		}
		var agg Aggregate
		for _, v := range counted {
			agg = agg.Add(v)
		}
		p := int32(0)
		if s.key == "b" {
			p = 1
		}
		v := AppendOutput(nil, Output{Seq: s.seq, Aggregate: agg, Partition: p, Offset: s.seq - 1})
		outs = append(outs, OutputRecord{Key: s.key, Value: v, Partition: p, Offset: offsets[p]})
		offsets[p]++
	}
	return outs
}

// counts is the part of a Report the tests compare.
type counts struct {
	DuplicateOutputs, ExtraCounts, AboveOutputs, Missing, Undercounted, OutOfOrder, Malformed, FinalWrong int
	Held                                                                                                  bool
}

func countsOf(r *Report) counts {
	return counts{r.DuplicateOutputs, r.ExtraCounts, r.AboveOutputs, r.Missing, r.Undercounted, r.OutOfOrder, r.Malformed, r.FinalWrong, r.Held()}
}

func TestVerify(t *testing.T) {
	clean := []step{{"a", 1, 0}, {"b", 1, 0}, {"a", 2, 0}, {"a", 3, 0}, {"b", 2, 0}, {"a", 4, 0}}
	tests := []struct {
		name  string
		steps []step
		g     stream.GuaranteeKind
		want  counts
	}{
		{"clean exactly-once", clean, stream.ExactlyOnce, counts{Held: true}},
		{"clean at-least-once", clean, stream.AtLeastOnce, counts{Held: true}},
		{
			// A replay after a crash: sequence 2 and 3 output again, the
			// state having counted them already.
			"replay under exactly-once",
			[]step{{"a", 1, 0}, {"a", 2, 0}, {"a", 3, 0}, {"a", 2, 2}, {"a", 3, 2}, {"a", 4, 2}, {"b", 1, 0}, {"b", 2, 0}},
			stream.ExactlyOnce,
			counts{DuplicateOutputs: 2, ExtraCounts: 2, AboveOutputs: 1, FinalWrong: 1},
		},
		{
			"replay under at-least-once",
			[]step{{"a", 1, 0}, {"a", 2, 0}, {"a", 3, 0}, {"a", 2, 2}, {"a", 3, 2}, {"a", 4, 2}, {"b", 1, 0}, {"b", 2, 0}},
			stream.AtLeastOnce,
			counts{DuplicateOutputs: 2, ExtraCounts: 2, AboveOutputs: 1, Held: true},
		},
		{
			// The same output record twice: a producer retry without
			// idempotence, say.
			"duplicate output",
			[]step{{"a", 1, 0}, {"a", 2, 0}, {"a", 2, 0}, {"a", 3, 0}, {"a", 4, 0}, {"b", 1, 0}, {"b", 2, 0}},
			stream.ExactlyOnce,
			counts{DuplicateOutputs: 1},
		},
		{
			// The state counted input 2 twice, yet every sequence number
			// is output once.
			"double counted in state",
			[]step{{"a", 1, 0}, {"a", 2, 1}, {"a", 3, 1}, {"a", 4, 1}, {"b", 1, 0}, {"b", 2, 0}},
			stream.ExactlyOnce,
			counts{ExtraCounts: 1, AboveOutputs: 3, FinalWrong: 1},
		},
		{
			"lost output",
			[]step{{"a", 1, 0}, {"a", 2, 0}, {"a", 4, 0}, {"b", 1, 0}, {"b", 2, 0}},
			stream.AtLeastOnce,
			counts{Missing: 1},
		},
		{
			// Output 3 is there but the state forgot input 2 before it.
			"lost state",
			[]step{{"a", 1, 0}, {"a", 2, 0}, {"a", 3, -1}, {"a", 4, -1}, {"b", 1, 0}, {"b", 2, 0}},
			stream.AtLeastOnce,
			counts{Undercounted: 2, FinalWrong: 1},
		},
		{
			"out of order",
			[]step{{"a", 1, 0}, {"a", 3, 0}, {"a", 2, 0}, {"a", 4, 0}, {"b", 1, 0}, {"b", 2, 0}},
			stream.AtLeastOnce,
			counts{OutOfOrder: 1},
		},
		{
			"last output not the last sequence",
			[]step{{"a", 1, 0}, {"a", 2, 0}, {"a", 3, 0}, {"a", 4, 0}, {"a", 3, 1}, {"b", 1, 0}, {"b", 2, 0}},
			stream.AtLeastOnce,
			counts{DuplicateOutputs: 1, FinalWrong: 1},
		},
		{
			"key without output",
			[]step{{"a", 1, 0}, {"a", 2, 0}, {"a", 3, 0}, {"a", 4, 0}},
			stream.AtLeastOnce,
			counts{Missing: 2, FinalWrong: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Verify(handTruth, outputsOf(t, tt.steps), tt.g)
			if diff := cmp.Diff(tt.want, countsOf(r)); diff != "" {
				t.Errorf("counts (-want +got):\n%s\nproblems: %q", diff, r.Problems)
			}
		})
	}
}

func TestVerifyMalformed(t *testing.T) {
	outs := outputsOf(t, []step{{"a", 1, 0}, {"a", 2, 0}, {"a", 3, 0}, {"a", 4, 0}, {"b", 1, 0}, {"b", 2, 0}})
	outs = append(outs,
		OutputRecord{Key: "a", Value: []byte("short"), Partition: 0, Offset: 100},
		OutputRecord{Key: "zz", Value: AppendOutput(nil, Output{Seq: 1}), Partition: 0, Offset: 101},
		OutputRecord{Key: "a", Value: AppendOutput(nil, Output{Seq: 9}), Partition: 0, Offset: 102},
		OutputRecord{Key: "b", Value: outs[len(outs)-1].Value, Partition: 3, Offset: 0},
	)
	r := Verify(handTruth, outs, stream.ExactlyOnce)
	if diff := cmp.Diff(counts{Malformed: 4}, countsOf(r)); diff != "" {
		t.Errorf("counts (-want +got):\n%s\nproblems: %q", diff, r.Problems)
	}
}

func TestWorkloadIsDeterministicAndSkewed(t *testing.T) {
	w := Workload{Records: 20_000, Keys: 1000, Skew: 1.1, Seed: 7}
	recs, truth, err := w.Generate()
	if err != nil {
		t.Fatal(err)
	}
	again, _, err := w.Generate()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(recs, again); diff != "" {
		t.Fatalf("same workload generated different records (-first +second):\n%s", diff)
	}
	if truth.Records() != w.Records {
		t.Fatalf("truth holds %d records, want %d", truth.Records(), w.Records)
	}
	next := map[string]int64{}
	for i, r := range recs {
		next[r.Key]++
		if r.Seq != next[r.Key] {
			t.Fatalf("record %d: key %s sequence %d, want %d", i, r.Key, r.Seq, next[r.Key])
		}
	}
	// Zipf: the most frequent key holds far more than an even share.
	if top, even := len(truth[keyName(0)]), w.Records/w.Keys; top < 10*even {
		t.Errorf("most frequent key has %d records, want at least 10x the even share %d", top, even)
	}
}

func TestRecordEncodings(t *testing.T) {
	in := Input{Seq: 42, Value: -7}
	if got, err := DecodeInput(AppendInput(nil, in)); err != nil || got != in {
		t.Errorf("input round trip = %+v, %v; want %+v", got, err, in)
	}
	out := Output{Seq: 3, Aggregate: Aggregate{Count: 3, Sum: 10, Min: 1, Max: 6}, Partition: 5, Offset: 1 << 40}
	if got, err := DecodeOutput(AppendOutput(nil, out)); err != nil || got != out {
		t.Errorf("output round trip = %+v, %v; want %+v", got, err, out)
	}
	if _, err := DecodeOutput(make([]byte, 10)); err == nil {
		t.Error("DecodeOutput accepted 10 bytes")
	}
}
