package stream_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// The cost of the task's hot path without a broker (the LocalDriver, an
// in-memory store): what every node call costs shows here, not in the
// broker benchmarks, where fetching and producing dominate.

// wordSplitter forwards each word of a line, keyed by the word.
type wordSplitter struct{}

func (wordSplitter) Process(ctx *stream.Context[[]byte, []byte], r stream.Record[[]byte, []byte]) error {
	for w := range bytes.FieldsSeq(r.Value) {
		ctx.Forward(stream.Record[[]byte, []byte]{Key: w, Value: w, Timestamp: r.Timestamp, Headers: r.Headers})
	}
	return nil
}

// wordCounter counts each word in a store and forwards the new count.
type wordCounter struct {
	store state.KeyValueStore[[]byte, int64]
}

func (c *wordCounter) Init(ctx *stream.Context[[]byte, int64]) (err error) {
	c.store, err = stream.GetKeyValueStore[[]byte, int64](ctx, "words")
	return err
}

func (c *wordCounter) Process(ctx *stream.Context[[]byte, int64], r stream.Record[[]byte, []byte]) error {
	n, _, err := c.store.Get(r.Key)
	if err != nil {
		return err
	}
	n++
	if err := c.store.Put(r.Key, n); err != nil {
		return err
	}
	ctx.Forward(stream.Record[[]byte, int64]{Key: r.Key, Value: n, Timestamp: r.Timestamp, Headers: r.Headers})
	return nil
}

// BenchmarkWordCount: a line of 8 words split, each counted in a store with
// a changelog and written out; per line.
func BenchmarkWordCount(b *testing.B) {
	t := stream.NewTopology()
	stream.AddSource(t, "lines", "lines", serde.Bytes{}, serde.Bytes{})
	stream.AddProcessor(t, "split", func() stream.Processor[[]byte, []byte, []byte, []byte] { return wordSplitter{} }, "lines")
	stream.AddProcessor(t, "count", func() stream.Processor[[]byte, []byte, []byte, int64] { return &wordCounter{} }, "split")
	stream.AddKeyValueStore(t, "words", serde.Bytes{}, serde.Int64{}, stream.StoreOptions{Changelog: true}, "count")
	stream.AddSink(t, "counts", "counts", serde.Bytes{}, serde.Int64{}, "count")
	d, err := stream.NewLocalDriver(t, stream.LocalConfig{})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	lines := make([][]byte, 100)
	for i := range lines {
		lines[i] = fmt.Appendf(nil, "w%d w%d w%d w%d w%d w%d w%d w%d", i, i+1, i+2, i+3, i%7, i%11, i%13, i%17)
	}
	key := []byte("k")
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := d.Pipe("lines", key, lines[i%len(lines)], nil, t0); err != nil {
			b.Fatal(err)
		}
		if i%128 == 0 {
			d.Output("counts")
			d.Changelog("words")
		}
	}
}

// passOn forwards its record unchanged.
type passOn struct{}

func (passOn) Process(ctx *stream.Context[[]byte, []byte], r stream.Record[[]byte, []byte]) error {
	ctx.Forward(r)
	return nil
}

// BenchmarkForward: a chain of 16 processors that forward each record,
// then a sink; per input record, so mostly the cost of 16 node calls.
func BenchmarkForward(b *testing.B) {
	t := stream.NewTopology()
	stream.AddSource(t, "in", "in", serde.Bytes{}, serde.Bytes{})
	parent := "in"
	for i := range 16 {
		name := fmt.Sprintf("p%d", i)
		stream.AddProcessor(t, name, func() stream.Processor[[]byte, []byte, []byte, []byte] { return passOn{} }, parent)
		parent = name
	}
	stream.AddSink(t, "out", "out", serde.Bytes{}, serde.Bytes{}, parent)
	d, err := stream.NewLocalDriver(t, stream.LocalConfig{})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	key, value := []byte("k"), []byte("v")
	headers := []stream.Header{{Key: "h", Value: []byte("x")}}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := d.Pipe("in", key, value, headers, t0); err != nil {
			b.Fatal(err)
		}
		if i%128 == 0 {
			d.Output("out")
		}
	}
}
