// Package wordcountdemo is what the demo mains of the two word-count
// examples (examples/wordcount, with processors, and examples/wordcount-ops,
// with operators) share: a sample text written to the sentences topic, the
// application run until it has consumed it, and every word's count read back
// and printed.
package wordcountdemo

import (
	"cmp"
	"context"
	_ "embed"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

//go:embed sample.txt
var sample string

// Topics names the application's input and output topics, and how their
// records are written and read.
type Topics struct {
	Sentences string
	// Encode makes the value of a sentences record from a line of text.
	Encode func(text string) ([]byte, error)
	Counts string
	// Decode reads a word and its count from a counts record.
	Decode func(key, value []byte) (string, int64, error)
}

// Run writes each line of the sample text to t.Sentences on brokers, calls
// run (which must return once the application has consumed its input), and
// prints every word's count to out, the most frequent first.
func Run(ctx context.Context, brokers []string, t Topics, run func(context.Context) error, out io.Writer) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := produceSample(ctx, cl, t); err != nil {
		return err
	}
	if err := run(ctx); err != nil {
		return err
	}
	counts, err := readCounts(ctx, cl, t)
	if err != nil {
		return err
	}
	type wc struct {
		word string
		n    int64
	}
	var all []wc
	for w, n := range counts {
		all = append(all, wc{w, n})
	}
	slices.SortFunc(all, func(a, b wc) int { return cmp.Or(cmp.Compare(b.n, a.n), cmp.Compare(a.word, b.word)) })
	for _, c := range all {
		fmt.Fprintf(out, "%-12s %d\n", c.word, c.n)
	}
	return nil
}

// produceSample writes each line of the sample text as a sentence.
func produceSample(ctx context.Context, cl *kgo.Client, t Topics) error {
	var recs []*kgo.Record
	for i, line := range strings.Split(sample, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		v, err := t.Encode(line)
		if err != nil {
			return err
		}
		recs = append(recs, &kgo.Record{Topic: t.Sentences, Key: fmt.Appendf(nil, "line-%d", i+1), Value: v})
	}
	return cl.ProduceSync(ctx, recs...).FirstErr()
}

// readCounts reads the counts topic to its end; the last count of a word is
// its total.
func readCounts(ctx context.Context, cl *kgo.Client, t Topics) (map[string]int64, error) {
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, t.Counts)
	if err != nil {
		return nil, err
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
		}
	})
	consumer, err := kgo.NewClient(kgo.SeedBrokers(cl.OptValue(kgo.SeedBrokers).([]string)...),
		kgo.ConsumeTopics(t.Counts), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, err
	}
	defer consumer.Close()
	counts := map[string]int64{}
	for len(want) > 0 {
		fetches := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var ferr error
		fetches.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return nil, ferr
		}
		for _, r := range fetches.Records() {
			word, n, err := t.Decode(r.Key, r.Value)
			if err != nil {
				return nil, fmt.Errorf("%s partition %d offset %d: %w", t.Counts, r.Partition, r.Offset, err)
			}
			counts[word] = max(counts[word], n)
			if end, ok := want[r.Partition]; ok && r.Offset+1 >= end {
				delete(want, r.Partition)
			}
		}
	}
	return counts, nil
}
