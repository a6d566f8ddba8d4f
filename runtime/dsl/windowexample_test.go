package dsl_test

import (
	"fmt"
	"time"

	"github.com/kgen-dev/kgen/runtime/dsl"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// Clicks per user per minute, each minute's count once when the minute
// closes (10 s of grace for late clicks), written with Kafka Streams'
// windowed key bytes and partitioned by the user alone.
func ExampleWindowedCount() {
	s := serde.String{}
	w := dsl.TumblingWindows(time.Minute).Grace(10 * time.Second)
	keys := dsl.WindowedKey(s, w)
	t := stream.NewTopology()
	stream.AddSource(t, "clicks", "clicks", s, s)
	dsl.WindowedCount[string, string](t, "per-minute", "clicks-per-minute", w, s,
		dsl.WindowOptions{Store: stream.StoreOptions{Changelog: true}, Emit: dsl.EmitFinal}, "clicks")
	dsl.ToStream[dsl.Windowed[string], int64](t, "results", "per-minute")
	stream.AddSinkWith(t, "out", "clicks-per-minute", keys, dsl.Nullable[int64](serde.Int64{}),
		stream.SinkConfig[dsl.Windowed[string], *int64]{Partitioner: dsl.WindowedPartitioner[string, *int64](s)}, "results")

	d, err := stream.NewLocalDriver(t, stream.LocalConfig{AppID: "clicks"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close()
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		user string
		sec  int
	}{{"ann", 5}, {"bob", 20}, {"ann", 50}, {"ann", 65}, {"bob", 62}, {"ann", 55}, {"ann", 71}, {"ann", 58}} {
		if err := d.Pipe("clicks", []byte(c.user), []byte("click"), nil, at.Add(time.Duration(c.sec)*time.Second)); err != nil {
			fmt.Println(err)
			return
		}
	}
	for _, r := range d.Output("clicks-per-minute") {
		k, _ := keys.Deserialize(r.Key)
		n, _ := serde.Int64{}.Deserialize(r.Value)
		fmt.Printf("%s %s-%s: %d\n", k.Key, k.StartTime().UTC().Format("15:04"), k.EndTime().UTC().Format("15:04"), n)
	}
	fmt.Println("late:", d.Dropped()[stream.DropLateRecord])
	// Output:
	// ann 12:00-12:01: 3
	// bob 12:00-12:01: 1
	// late: 1
}
