package faults

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/kgen-dev/kgen/runtime/stream"
)

// OutputRecord is one record read from the output topic.
type OutputRecord struct {
	Key       string
	Value     []byte
	Partition int32
	Offset    int64
}

// Report is what Verify found. Counts are of output records unless said
// otherwise.
type Report struct {
	Guarantee  stream.GuaranteeKind
	Keys       int // keys in the truth
	RecordsIn  int // records in the truth
	RecordsOut int // output records read

	// DuplicateOutputs are outputs for a (key, sequence) already output.
	DuplicateOutputs int
	// ExtraCounts are inputs counted more than once in the final
	// aggregates: the sum over keys of the final count above the truth.
	ExtraCounts int
	// AboveOutputs are first outputs of a (key, sequence) whose aggregate
	// counts some input more than once, or one that comes later. After an
	// at-least-once replay every later output of the key is above.
	AboveOutputs int
	// Missing are (key, sequence) pairs of the input never output.
	Missing int
	// Undercounted are outputs whose aggregate lacks an input it must hold:
	// state was lost.
	Undercounted int
	// OutOfOrder are first outputs of a sequence number that come before
	// the first output of a smaller sequence number of the same key.
	OutOfOrder int
	// Malformed are outputs that cannot be decoded or name a key or
	// sequence number the input does not have, or keys output to more than
	// one partition (whose order is then undefined).
	Malformed int
	// FinalWrong counts keys whose last output is not the last sequence
	// number with the true aggregate (at-least-once: an aggregate not below
	// the truth).
	FinalWrong int

	// Problems describes the first problems found.
	Problems []string
}

// maxProblems bounds Report.Problems.
const maxProblems = 20

// Duplicates is D of the summary: repeated outputs, and inputs counted more
// than once in the final aggregates.
func (r *Report) Duplicates() int { return r.DuplicateOutputs + r.ExtraCounts }

// Losses is L of the summary: inputs never output, or missing from state.
func (r *Report) Losses() int { return r.Missing + r.Undercounted }

// Held reports whether the guarantee held: under exactly-once nothing
// duplicated, lost, reordered or malformed and every final aggregate true;
// under at-least-once the same except that duplicates are allowed.
func (r *Report) Held() bool {
	ok := r.Losses() == 0 && r.OutOfOrder == 0 && r.Malformed == 0 && r.FinalWrong == 0
	if r.Guarantee == stream.ExactlyOnce {
		ok = ok && r.Duplicates() == 0 && r.AboveOutputs == 0
	}
	return ok
}

func (r *Report) problem(format string, args ...any) {
	if len(r.Problems) < maxProblems {
		r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
	}
}

// String is the report's lines for the summary.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "records in %d (%d keys), records out %d\n", r.RecordsIn, r.Keys, r.RecordsOut)
	fmt.Fprintf(&b, "duplicates %d (%d repeated outputs, %d inputs counted more than once in the final aggregates)\n",
		r.Duplicates(), r.DuplicateOutputs, r.ExtraCounts)
	fmt.Fprintf(&b, "first outputs above the truth %d (at-least-once: every output of a key after a replay counted twice)\n", r.AboveOutputs)
	fmt.Fprintf(&b, "losses %d (%d inputs never output, %d outputs missing an input from state)\n",
		r.Losses(), r.Missing, r.Undercounted)
	fmt.Fprintf(&b, "out of order %d, malformed %d, keys with a wrong final aggregate %d\n",
		r.OutOfOrder, r.Malformed, r.FinalWrong)
	for _, p := range r.Problems {
		fmt.Fprintf(&b, "  problem: %s\n", p)
	}
	return b.String()
}

// prefix holds the true aggregates of one key after each sequence number:
// prefix[s-1] is the aggregate of its inputs 1..s.
func prefixes(values []int64) []Aggregate {
	out := make([]Aggregate, len(values))
	var a Aggregate
	for i, v := range values {
		a = a.Add(v)
		out[i] = a
	}
	return out
}

// compare says how got relates to the true aggregate want: below when an
// input counted in want is missing from got, above when got counts an input
// more than once or one want does not have.
func compare(got, want Aggregate) (below, above bool) {
	below = got.Count < want.Count || got.Sum < want.Sum || got.Min > want.Min || got.Max < want.Max
	above = !below && got != want
	return below, above
}

// Verify checks the output records against the truth under guarantee g.
// Records of one key must all be in one partition; outs may come in any
// order and are ordered by partition and offset here. Under exactly-once
// every sequence number of a key must be output once, in order, with the
// true aggregate of the inputs up to it. Under at-least-once every sequence
// number must be output at least once, first outputs in order, and no
// aggregate may lack an input it must hold; repeats and double counting are
// counted, not failures.
func Verify(truth Truth, outs []OutputRecord, g stream.GuaranteeKind) *Report {
	r := &Report{Guarantee: g, Keys: len(truth), RecordsIn: truth.Records(), RecordsOut: len(outs)}
	outs = slices.Clone(outs)
	slices.SortFunc(outs, func(a, b OutputRecord) int {
		return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
	})
	type keyed struct {
		rec OutputRecord
		out Output
	}
	byKey := map[string][]keyed{}
	partition := map[string]int32{}
	for _, o := range outs {
		out, err := DecodeOutput(o.Value)
		if err != nil {
			r.Malformed++
			r.problem("output %d@%d key %q: %v", o.Partition, o.Offset, o.Key, err)
			continue
		}
		vals, ok := truth[o.Key]
		if !ok || out.Seq < 1 || out.Seq > int64(len(vals)) {
			r.Malformed++
			r.problem("output %d@%d: key %q sequence %d is not in the input", o.Partition, o.Offset, o.Key, out.Seq)
			continue
		}
		if p, ok := partition[o.Key]; ok && p != o.Partition {
			r.Malformed++
			r.problem("output %d@%d: key %q was output to partition %d before", o.Partition, o.Offset, o.Key, p)
			continue
		}
		partition[o.Key] = o.Partition
		byKey[o.Key] = append(byKey[o.Key], keyed{o, out})
	}

	for _, key := range slices.Sorted(func(yield func(string) bool) {
		for k := range truth {
			if !yield(k) {
				return
			}
		}
	}) {
		vals := truth[key]
		want := prefixes(vals)
		recs := byKey[key]
		n := int64(len(vals))
		// present[s]: sequence s is output somewhere; seen[s]: output so far.
		present := make([]bool, n+2)
		for _, k := range recs {
			present[k.out.Seq] = true
		}
		for s := int64(1); s <= n; s++ {
			if !present[s] {
				r.Missing++
				r.problem("key %q: sequence %d of %d never output", key, s, n)
			}
		}
		seen := make([]bool, n+2)
		// next is the smallest sequence number output later but not yet.
		next := int64(1)
		advance := func() {
			for next <= n && (seen[next] || !present[next]) {
				next++
			}
		}
		advance()
		for _, k := range recs {
			s, got := k.out.Seq, k.out.Aggregate
			first := !seen[s]
			below, above := compare(got, want[s-1])
			switch {
			case below:
				r.Undercounted++
				r.problem("key %q: output %d@%d for sequence %d (input %d@%d) has %+v, below the truth %+v",
					key, k.rec.Partition, k.rec.Offset, s, k.out.Partition, k.out.Offset, got, want[s-1])
			case above && first:
				r.AboveOutputs++
				if g == stream.ExactlyOnce {
					r.problem("key %q: output %d@%d for sequence %d (input %d@%d) has %+v, above the truth %+v",
						key, k.rec.Partition, k.rec.Offset, s, k.out.Partition, k.out.Offset, got, want[s-1])
				}
			}
			if !first {
				r.DuplicateOutputs++
				if g == stream.ExactlyOnce {
					r.problem("key %q: output %d@%d repeats sequence %d (input %d@%d)",
						key, k.rec.Partition, k.rec.Offset, s, k.out.Partition, k.out.Offset)
				}
				continue
			}
			if s > next {
				r.OutOfOrder++
				r.problem("key %q: output %d@%d for sequence %d comes before the first output of sequence %d",
					key, k.rec.Partition, k.rec.Offset, s, next)
			}
			seen[s] = true
			advance()
		}
		if len(recs) == 0 {
			r.FinalWrong++
			r.problem("key %q: no output at all (%d inputs)", key, n)
			continue
		}
		last := recs[len(recs)-1].out
		r.ExtraCounts += int(max(0, last.Count-n))
		below, above := compare(last.Aggregate, want[n-1])
		if last.Seq != n || below || (above && g == stream.ExactlyOnce) {
			r.FinalWrong++
			r.problem("key %q: last output is sequence %d with %+v; want sequence %d with %+v",
				key, last.Seq, last.Aggregate, n, want[n-1])
		}
	}
	return r
}
