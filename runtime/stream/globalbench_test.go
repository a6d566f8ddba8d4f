package stream_test

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// BenchmarkGlobalTableReady fills a 4-partition topic with 1,000,000 rows
// (100-byte values, every key distinct) and measures, in the same run, how
// fast a plain franz-go consumer reads it and how fast an App's global table
// over it is ready (every row applied, before any unit starts): the ratio
// is the global table's cost over the physical limit. The App's time
// includes its startup (metadata, offsets). The table is in memory, and
// then on disk (global-table-pebble, from empty).
func BenchmarkGlobalTableReady(b *testing.B) {
	c := kafkatest.New(b)
	table, orders, out := c.CreateTopic(b, 4, nil), c.CreateTopic(b, 1, nil), c.CreateTopic(b, 1, nil)
	cl := c.Client(b, kgo.ProducerBatchMaxBytes(1<<20))
	value := make([]byte, benchValueSize)
	var wg sync.WaitGroup
	for i := range benchRecords {
		wg.Add(1)
		cl.Produce(context.Background(), &kgo.Record{Topic: table, Key: fmt.Appendf(nil, "key-%07d", i), Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				b.Error(err)
			}
			wg.Done()
		})
	}
	wg.Wait()
	for _, contender := range []string{"raw-read", "global-table", "global-table-pebble"} {
		b.Run(contender, func(b *testing.B) {
			// records/s over every iteration: one alone varies too much
			// on a shared machine.
			var took, cpu time.Duration
			for b.Loop() {
				start, cpuStart := time.Now(), processCPU(b)
				if contender == "raw-read" {
					rd, err := kgo.NewClient(kgo.SeedBrokers(c.Seeds()...), kgo.ConsumeTopics(table), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
					if err != nil {
						b.Fatal(err)
					}
					for n := 0; n < benchRecords; {
						n += rd.PollFetches(context.Background()).NumRecords()
					}
					took += time.Since(start)
					cpu += processCPU(b) - cpuStart
					rd.Close()
					continue
				}
				topo := stream.NewTopology()
				var opts stream.StoreOptions
				if contender == "global-table-pebble" {
					opts.Persistent = onDisk
				}
				stream.AddGlobalTable(topo, "rows", table, serde.String{}, serde.Bytes{}, opts)
				stream.AddSource(topo, "orders", orders, serde.String{}, serde.String{})
				stream.AddSink(topo, "out", out, serde.String{}, serde.String{}, "orders")
				app, err := stream.New(topo, stream.Brokers(c.Seeds()...), stream.AppID(fmt.Sprintf("bench-global-%s-%d", table, time.Now().UnixNano())),
					stream.StateDir(b.TempDir()), stream.Parallelism(1), stream.Logger(testLoggerB()))
				if err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- app.Run(ctx) }()
				for app.Stats().GlobalApplied < benchRecords {
					time.Sleep(5 * time.Millisecond)
				}
				took += time.Since(start)
				cpu += processCPU(b) - cpuStart
				cancel()
				if err := <-done; err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*benchRecords)/took.Seconds(), "records/s")
			// The process's CPU time (the in-process broker's included)
			// varies less than the wall time on a shared machine.
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*benchRecords), "cpu-ns/record")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// processCPU returns the CPU time the process has used so far.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
