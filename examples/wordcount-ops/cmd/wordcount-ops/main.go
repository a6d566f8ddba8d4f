// Command wordcount-ops runs the word count written with operators.
//
// With no -brokers (and no KGEN_BROKERS), or with -brokers dev, it is a self-contained demo: it
// starts the embedded development broker, writes a sample text to topic
// sentences, runs the topology until that input is consumed, prints the
// count of every word and exits. With -brokers it runs until SIGINT or
// SIGTERM, like any generated main.
package main

import (
	"cmp"
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kgen-dev/kgen/examples/wordcount-ops"
	"github.com/kgen-dev/kgen/examples/wordcount-ops/model"
	"github.com/kgen-dev/kgen/runtime/stream"
)

//go:embed sample.txt
var sample string

func processors() wordcountops.Processors { return wordcountops.Factories{} }

func main() {
	var cfg wordcountops.Config
	fs := flag.NewFlagSet(os.Args[0], flag.ExitOnError)
	cfg.RegisterFlags(fs)
	fs.Parse(os.Args[1:])
	if err := cfg.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, "wordcount-ops:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if len(cfg.Brokers) == 0 { // none given, or -brokers dev
		err = demo(ctx, cfg, os.Stdout)
	} else {
		err = wordcountops.Run(ctx, cfg, processors())
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "wordcount-ops:", err)
		os.Exit(1)
	}
}

// demo counts the words of the sample text on the embedded broker.
func demo(ctx context.Context, cfg wordcountops.Config, out io.Writer) error {
	b, err := wordcountops.StartDevBroker()
	if err != nil {
		return err
	}
	defer b.Close()
	cfg.Brokers, cfg.DevBroker = b.Addrs(), false

	cl, err := kgo.NewClient(kgo.SeedBrokers(cfg.Brokers...))
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := produceSample(ctx, cl); err != nil {
		return err
	}
	if err := wordcountops.Run(ctx, cfg, processors(), stream.ExitWhenCaughtUp()); err != nil {
		return err
	}
	counts, err := readCounts(ctx, cl)
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
func produceSample(ctx context.Context, cl *kgo.Client) error {
	var recs []*kgo.Record
	for i, line := range strings.Split(sample, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		v, err := wordcountops.DefaultSerdes().SentencesValue.Serialize(model.Sentence{Text: line})
		if err != nil {
			return err
		}
		recs = append(recs, &kgo.Record{Topic: wordcountops.TopicSentences, Key: fmt.Appendf(nil, "line-%d", i+1), Value: v})
	}
	return cl.ProduceSync(ctx, recs...).FirstErr()
}

// readCounts reads topic word-counts to its end; the last count of a word
// is its total.
func readCounts(ctx context.Context, cl *kgo.Client) (map[string]int64, error) {
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, wordcountops.TopicWordCounts)
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
		kgo.ConsumeTopics(wordcountops.TopicWordCounts), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, err
	}
	defer consumer.Close()
	counts := map[string]int64{}
	serdes := wordcountops.DefaultSerdes()
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
			word, _ := serdes.WordCountsKey.Deserialize(r.Key)
			n, err := serdes.WordCountsValue.Deserialize(r.Value)
			if err != nil {
				return nil, fmt.Errorf("word-counts partition %d offset %d: %w", r.Partition, r.Offset, err)
			}
			counts[word] = max(counts[word], n)
			if end, ok := want[r.Partition]; ok && r.Offset+1 >= end {
				delete(want, r.Partition)
			}
		}
	}
	return counts, nil
}
