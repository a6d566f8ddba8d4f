package dsl_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/kgen-dev/kgen/runtime/dsl"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// Word count with operators: flatMapValues, then groupBy (a new key, so a
// repartition step), then count, written back to a topic as a stream. The
// sentences carry no key (null), so the source reads keys as serde.Bytes,
// which can say null: with serde.String it would drop every sentence.
func Example() {
	s := serde.String{}
	t := stream.NewTopology()
	stream.AddSource(t, "sentences", "sentences", serde.Bytes{}, s)
	dsl.FlatMapValues(t, "words", func(_ []byte, v string) []string { return strings.Fields(v) }, "sentences")
	dsl.SelectKey(t, "by-word", func(_ []byte, w string) string { return w }, "words")
	stream.AddRepartition(t, "grouped", s, s, stream.RepartitionOptions{}, "by-word")
	dsl.Count[string, string](t, "count", "counts", s, stream.StoreOptions{Changelog: true}, "grouped")
	dsl.ToStream[string, int64](t, "updates", "count")
	stream.AddSink(t, "out", "word-counts", s, dsl.Nullable[int64](serde.Int64{}), "updates")

	d, err := stream.NewLocalDriver(t, stream.LocalConfig{AppID: "wc", Partitions: 4})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close()
	for _, line := range []string{"to be or", "not to be"} {
		if err := d.Pipe("sentences", nil, []byte(line), nil, time.Now()); err != nil {
			fmt.Println(err)
			return
		}
	}
	final := map[string]int64{}
	for _, r := range d.Output("word-counts") {
		final[string(r.Key)], _ = serde.Int64{}.Deserialize(r.Value)
	}
	fmt.Println(final)
	// Output: map[be:2 not:1 or:1 to:2]
}
