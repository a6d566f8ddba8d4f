// Command wordcount runs the word count application.
//
// With no -brokers (and no KGEN_BROKERS), or with -brokers dev, it is a self-contained demo: it
// starts the embedded development broker, writes a sample text to topic
// sentences, runs the topology until that input is consumed, prints the
// count of every word and exits. With -brokers it runs until SIGINT or
// SIGTERM, like any generated main.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/kgen-dev/kgen/examples/internal/wordcountdemo"
	"github.com/kgen-dev/kgen/examples/wordcount"
	"github.com/kgen-dev/kgen/examples/wordcount/model"
	"github.com/kgen-dev/kgen/runtime/appmain"
	"github.com/kgen-dev/kgen/runtime/stream"
)

func processors() wordcount.Processors { return wordcount.Factories{} }

// about heads the usage -h prints.
const about = "With no -brokers (and no KGEN_BROKERS), counts the words of a sample text on the embedded\n" +
	"broker, prints the counts and exits; with -brokers, runs until SIGINT or SIGTERM."

func main() {
	var cfg wordcount.Config
	fs := flag.NewFlagSet("wordcount", flag.ContinueOnError)
	cfg.RegisterFlags(fs)
	if code, done := appmain.ParseFlags(fs, os.Args[1:], os.Stderr, about); done {
		os.Exit(code)
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, "wordcount:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if len(cfg.Brokers) == 0 { // none given, or -brokers dev
		err = demo(ctx, cfg, os.Stdout)
	} else {
		err = wordcount.Run(ctx, cfg, processors())
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "wordcount:", err)
		os.Exit(1)
	}
}

// demo counts the words of the sample text on the embedded broker.
func demo(ctx context.Context, cfg wordcount.Config, out io.Writer) error {
	b, err := wordcount.StartDevBroker()
	if err != nil {
		return err
	}
	defer b.Close()
	cfg.Brokers, cfg.DevBroker = b.Addrs(), false
	serdes := wordcount.DefaultSerdes()
	topics := wordcountdemo.Topics{
		Sentences: wordcount.TopicSentences,
		Encode:    func(text string) ([]byte, error) { return serdes.SentencesValue.Serialize(model.Sentence{Text: text}) },
		Counts:    wordcount.TopicWordCounts,
		Decode: func(key, value []byte) (string, int64, error) {
			word, _ := serdes.WordCountsKey.Deserialize(key)
			n, err := serdes.WordCountsValue.Deserialize(value)
			return word, n, err
		},
	}
	return wordcountdemo.Run(ctx, cfg.Brokers, topics, func(ctx context.Context) error {
		return wordcount.Run(ctx, cfg, processors(), stream.ExitWhenCaughtUp())
	}, out)
}
