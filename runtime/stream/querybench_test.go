package stream_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	queryBenchRecords = 500_000
	queryBenchKeys    = 10_000
)

var queryBench struct {
	once   sync.Once
	c      *kafkatest.Cluster
	source string
	err    error
}

// queryBenchSource is a topic of 500,000 records over 10,000 keys, loaded
// once: smaller than the other benchmarks' million so that a run of every
// case stays within a minute.
func queryBenchSource(b *testing.B) (*kafkatest.Cluster, string) {
	queryBench.once.Do(func() {
		tb := &keepAlive{TB: b}
		queryBench.c = kafkatest.New(tb)
		queryBench.source = queryBench.c.CreateTopic(tb, benchPartitions, nil)
		cl := queryBench.c.Client(tb, kgo.ProducerBatchMaxBytes(1<<20))
		recs := make([]*kgo.Record, queryBenchRecords)
		for i := range recs {
			recs[i] = &kgo.Record{Topic: queryBench.source, Key: fmt.Appendf(nil, "key-%d", i%queryBenchKeys), Value: make([]byte, benchValueSize)}
		}
		queryBench.err = cl.ProduceSync(context.Background(), recs...).FirstErr()
	})
	if queryBench.err != nil {
		b.Fatalf("load source topic: %v", queryBench.err)
	}
	return queryBench.c, queryBench.source
}

// BenchmarkCountUnderQueries is BenchmarkCount's workload (a count per key
// in a Pebble store with a changelog) while other goroutines query the
// store: none; 1,000 gets a second; and one goroutine getting as fast as it
// can; each with the store not queryable (a query waits for the unit to let
// it in) and queryable (StoreOptions.Queryable: a query reads while the
// unit processes, under the store's lock). records/s is the processing throughput; served-queries/s and the
// latency of a served query (median and 99th percentile) what the queries
// got once the first one was served (a key of a task not yet assigned is
// not served).
func BenchmarkCountUnderQueries(b *testing.B) {
	c, in := queryBenchSource(b)
	for _, load := range []struct {
		name      string
		workers   int
		every     time.Duration // between one worker's queries; 0: none
		queryable bool          // StoreOptions.Queryable
	}{
		{"none", 0, 0, false}, {"paced-1000qps", 1, time.Millisecond, false}, {"flat-out", 1, 0, false},
		{"queryable-none", 0, 0, true}, {"queryable-paced-1000qps", 1, time.Millisecond, true}, {"queryable-flat-out", 1, 0, true},
	} {
		b.Run(load.name, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				out := c.CreateTopic(&keepAlive{b}, benchPartitions, nil)
				group := fmt.Sprintf("bench-query-%s-%d-%s", load.name, i, out)
				topo := stream.NewTopology()
				stream.AddSource(topo, "in", in, serde.String{}, serde.Bytes{})
				stream.AddProcessor(topo, "count", func() stream.Processor[string, []byte, string, int64] { return &bytesCounter{} }, "in")
				stream.AddKeyValueStore(topo, "counts", serde.String{}, serde.Int64{}, stream.StoreOptions{Persistent: onDisk, Changelog: true, Queryable: load.queryable}, "count")
				stream.AddSink(topo, "out", out, serde.String{}, serde.Int64{}, "count")
				app, err := stream.New(topo, stream.Brokers(c.Seeds()...), stream.AppID(group), stream.StateDir(b.TempDir()),
					stream.Parallelism(1), stream.Logger(testLoggerB()), stream.BufferRecords(benchBuffer()))
				if err != nil {
					b.Fatal(err)
				}
				view, err := stream.QueryKeyValue(app, "counts", serde.String{}, serde.Int64{})
				if err != nil {
					b.Fatal(err)
				}
				var mu sync.Mutex
				var lat []time.Duration
				var first, last time.Time
				measure(b, c, out, queryBenchRecords, func(ctx context.Context) {
					var wg sync.WaitGroup
					for w := range load.workers {
						wg.Go(func() {
							tick := time.NewTicker(max(load.every, time.Nanosecond))
							defer tick.Stop()
							for n := w; ctx.Err() == nil; n++ {
								if load.every > 0 {
									select {
									case <-ctx.Done():
										return
									case <-tick.C:
									}
								}
								start := time.Now()
								if _, _, _, err := view.Get(fmt.Sprintf("key-%d", n%queryBenchKeys)); err == nil {
									d := time.Since(start)
									mu.Lock()
									if first.IsZero() {
										first = start
									}
									last = start.Add(d)
									lat = append(lat, d)
									mu.Unlock()
								}
							}
						})
					}
					if err := app.Run(ctx); err != nil {
						b.Error(err)
					}
					wg.Wait()
				})
				if len(lat) > 1 {
					slices.Sort(lat)
					b.ReportMetric(float64(len(lat))/last.Sub(first).Seconds(), "served-queries/s")
					b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "query-p50-µs")
					b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "query-p99-µs")
				}
			}
		})
	}
}
