package streamtest_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/kgen-dev/kgen/runtime/streamtest"
)

// counter counts words in a store and forwards each new count.
type counter struct {
	counts state.KeyValueStore[string, int64]
}

func (c *counter) Init(ctx *stream.Context[string, int64]) (err error) {
	c.counts, err = stream.GetKeyValueStore[string, int64](ctx, "counts")
	return err
}

func (c *counter) Process(ctx *stream.Context[string, int64], r stream.Record[string, string]) error {
	n, _, err := c.counts.Get(r.Value)
	if err != nil {
		return err
	}
	n++
	if err := c.counts.Put(r.Value, n); err != nil {
		return err
	}
	ctx.Forward(stream.Record[string, int64]{Key: r.Value, Value: n})
	return nil
}

// A word count built by hand and tested without a broker.
func Example() {
	t := stream.NewTopology()
	stream.AddSource(t, "lines", "lines", serde.String{}, serde.String{})
	stream.AddProcessor(t, "split", func() stream.Processor[string, string, string, string] {
		return stream.ProcessorFunc[string, string, string, string](func(ctx *stream.Context[string, string], r stream.Record[string, string]) error {
			for _, w := range strings.Fields(r.Value) {
				ctx.Forward(stream.Record[string, string]{Key: r.Key, Value: w})
			}
			return nil
		})
	}, "lines")
	stream.AddProcessor(t, "count", func() stream.Processor[string, string, string, int64] { return &counter{} }, "split")
	stream.AddKeyValueStore(t, "counts", serde.String{}, serde.Int64{}, stream.StoreOptions{Changelog: true}, "count")
	stream.AddSink(t, "out", "counts", serde.String{}, serde.Int64{}, "count")

	d, err := streamtest.New(t, streamtest.Config{})
	if err != nil {
		panic(err)
	}
	defer d.Close()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	streamtest.Pipe(d, "lines", serde.String{}, serde.String{}, "", "to be or not to be", now)
	out, _ := streamtest.Read(d, "counts", serde.String{}, serde.Int64{})
	for _, r := range out {
		fmt.Println(r.Key, r.Value)
	}
	counts, _ := streamtest.KeyValueStore[string, int64](d, "counts")
	n, _, _ := counts.Get("be")
	fmt.Println("store be =", n)
	// Output:
	// to 1
	// be 1
	// or 1
	// not 1
	// to 2
	// be 2
	// store be = 2
}
