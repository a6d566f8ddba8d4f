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

// DropNulls in front of a count over a topic whose keys and values may be
// null: the count takes plain strings, and the records with a null key or a
// null value are dropped and counted by reason, as Kafka Streams'
// aggregations drop them.
func ExampleDropNulls() {
	s := serde.String{}
	ns := dsl.Nullable[string](s)
	t := stream.NewTopology()
	stream.AddSource(t, "clicks", "clicks", ns, ns)
	dsl.DropNulls(t, "non-null", dsl.Deref[string], dsl.Deref[string], "clicks")
	dsl.Count[string, string](t, "count", "counts", s, stream.StoreOptions{}, "non-null")
	dsl.ToStream[string, int64](t, "updates", "count")
	stream.AddSink(t, "out", "click-counts", s, dsl.Nullable[int64](serde.Int64{}), "updates")

	d, err := stream.NewLocalDriver(t, stream.LocalConfig{AppID: "clicks", Partitions: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close()
	for _, r := range []struct{ k, v []byte }{{[]byte("ann"), []byte("home")}, {nil, []byte("home")}, {[]byte("ann"), nil}, {[]byte("ann"), []byte("cart")}} {
		if err := d.Pipe("clicks", r.k, r.v, nil, time.Now()); err != nil {
			fmt.Println(err)
			return
		}
	}
	for _, r := range d.Output("click-counts") {
		n, _ := serde.Int64{}.Deserialize(r.Value)
		fmt.Printf("%s=%d\n", r.Key, n)
	}
	fmt.Println(d.Dropped())
	// Output:
	// ann=1
	// ann=2
	// map[null-key:1 null-value:1]
}
