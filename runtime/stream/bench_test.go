package stream_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The benchmarks share one cluster and one loaded source topic: loading a
// million records takes longer than processing them.
const (
	benchRecords    = 1_000_000
	benchPartitions = 8
	benchValueSize  = 100
)

var bench struct {
	once   sync.Once
	c      *kafkatest.Cluster
	source string
	err    error
}

func benchSource(b *testing.B) (*kafkatest.Cluster, string) {
	bench.once.Do(func() {
		// The cluster outlives any one benchmark; a fake TB keeps kafkatest's
		// cleanups from running when the first benchmark ends.
		tb := &keepAlive{TB: b}
		bench.c = kafkatest.New(tb)
		bench.source = bench.c.CreateTopic(tb, benchPartitions, nil)
		cl := bench.c.Client(tb, kgo.ProducerBatchMaxBytes(1<<20))
		value := make([]byte, benchValueSize)
		rand.Read(value)
		var wg sync.WaitGroup
		var mu sync.Mutex
		for i := range benchRecords {
			wg.Add(1)
			cl.Produce(context.Background(), &kgo.Record{Topic: bench.source, Key: fmt.Appendf(nil, "key-%d", i%10000), Value: value},
				func(_ *kgo.Record, err error) {
					if err != nil {
						mu.Lock()
						bench.err = err
						mu.Unlock()
					}
					wg.Done()
				})
		}
		wg.Wait()
	})
	if bench.err != nil {
		b.Fatalf("load source topic: %v", bench.err)
	}
	return bench.c, bench.source
}

// keepAlive is a TB whose cleanups never run, for the shared bench cluster.
type keepAlive struct{ testing.TB }

func (keepAlive) Cleanup(func()) {}

// measure runs fn (which must produce benchRecords outputs to out) and
// reports throughput, CPU per record and allocations per record, from the
// start until the output topic's end offsets sum to benchRecords.
func measure(b *testing.B, c *kafkatest.Cluster, out string, want int64, fn func(ctx context.Context)) {
	adm := kadm.NewClient(c.Client(b))
	measureUntil(b, want, func() bool {
		ends, err := adm.ListEndOffsets(context.Background(), out)
		var n int64
		if err == nil {
			ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
		}
		return n >= want
	}, fn)
}

// measureCommitted is measure for transactional runs: output end offsets
// count transaction markers too, so the finish line is the group having
// committed every input offset, which happens with its last transaction.
func measureCommitted(b *testing.B, c *kafkatest.Cluster, in, group string, want int64, fn func(ctx context.Context)) {
	adm := kadm.NewClient(c.Client(b))
	measureUntil(b, want, func() bool {
		offs, err := adm.FetchOffsets(context.Background(), group)
		var n int64
		if err == nil {
			offs.Each(func(o kadm.OffsetResponse) {
				if o.Topic == in && o.Err == nil {
					n += o.At
				}
			})
		}
		return n >= want
	}, fn)
}

func measureUntil(b *testing.B, want int64, done func() bool, fn func(ctx context.Context)) {
	var ms0, ms1 runtime.MemStats
	var ru0, ru1 syscall.Rusage
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	start := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	finished := make(chan struct{})
	go func() { defer close(finished); fn(ctx) }()
	for !done() {
		time.Sleep(5 * time.Millisecond)
	}
	elapsed := time.Since(start)
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	runtime.ReadMemStats(&ms1)
	cancel()
	<-finished
	cpu := time.Duration(ru1.Utime.Nano()+ru1.Stime.Nano()-ru0.Utime.Nano()-ru0.Stime.Nano()) * time.Nanosecond
	b.ReportMetric(float64(want)/elapsed.Seconds(), "records/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(want), "cpu-µs/record")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(want), "allocs/record")
	b.ReportMetric(0, "ns/op") // one op is a whole run; records/s is the figure
}

// rawLoop is the physical limit: a franz-go consume→produce loop that
// commits at the end, with no tasks, stores or serdes.
func rawLoop(ctx context.Context, b *testing.B, c *kafkatest.Cluster, in, out, group string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Seeds()...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(in),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	if err != nil {
		b.Error(err)
		return
	}
	defer cl.Close()
	for ctx.Err() == nil {
		fetches := cl.PollFetches(ctx)
		fetches.EachRecord(func(r *kgo.Record) {
			cl.Produce(ctx, &kgo.Record{Topic: out, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}, nil)
		})
	}
}

func passthrough(in, out string) *stream.Topology {
	t := stream.NewTopology()
	stream.AddSource(t, "in", in, serde.Bytes{}, serde.Bytes{})
	stream.AddProcessor(t, "pass", func() stream.Processor[[]byte, []byte, []byte, []byte] {
		return stream.ProcessorFunc[[]byte, []byte, []byte, []byte](func(ctx *stream.Context[[]byte, []byte], r stream.Record[[]byte, []byte]) error {
			ctx.Forward(r)
			return nil
		})
	}, "in")
	stream.AddSink(t, "out", out, serde.Bytes{}, serde.Bytes{}, "pass")
	return t
}

func runKgen(ctx context.Context, b *testing.B, c *kafkatest.Cluster, topo *stream.Topology, appID string, g stream.GuaranteeKind) {
	app, err := stream.New(topo, stream.Brokers(c.Seeds()...), stream.AppID(appID), stream.StateDir(b.TempDir()),
		stream.Parallelism(1), stream.Guarantee(g), stream.Logger(testLoggerB()), stream.BufferRecords(benchBuffer()))
	if err != nil {
		b.Error(err)
		return
	}
	if err := app.Run(ctx); err != nil {
		b.Error(err)
	}
}

// BenchmarkPassthrough compares source→processor→sink on kgen with the raw
// loop, over the same million records, in the same run.
func BenchmarkPassthrough(b *testing.B) {
	c, in := benchSource(b)
	for _, contender := range []string{"raw", "kgen", "kgen-eos"} {
		b.Run(contender, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				out := c.CreateTopic(&keepAlive{b}, benchPartitions, nil)
				group := fmt.Sprintf("bench-%s-%d-%s", contender, i, out)
				switch contender {
				case "raw":
					measure(b, c, out, benchRecords, func(ctx context.Context) { rawLoop(ctx, b, c, in, out, group) })
				case "kgen":
					measure(b, c, out, benchRecords, func(ctx context.Context) {
						runKgen(ctx, b, c, passthrough(in, out), group, stream.AtLeastOnce)
					})
				default:
					measureCommitted(b, c, in, group, benchRecords, func(ctx context.Context) {
						runKgen(ctx, b, c, passthrough(in, out), group, stream.ExactlyOnce)
					})
				}
			}
		})
	}
}

// BenchmarkCount is the stateful workload: a count per key in a Pebble
// store with a changelog, one output per input. Compare its records/s with
// BenchmarkPassthrough/raw.
func BenchmarkCount(b *testing.B) {
	c, in := benchSource(b)
	for _, g := range []stream.GuaranteeKind{stream.AtLeastOnce, stream.ExactlyOnce} {
		b.Run(g.String(), func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				out := c.CreateTopic(&keepAlive{b}, benchPartitions, nil)
				group := fmt.Sprintf("bench-count-%s-%d-%s", g, i, out)
				topo := stream.NewTopology()
				stream.AddSource(topo, "in", in, serde.String{}, serde.Bytes{})
				stream.AddProcessor(topo, "count", func() stream.Processor[string, []byte, string, int64] { return &bytesCounter{} }, "in")
				stream.AddKeyValueStore(topo, "counts", serde.String{}, serde.Int64{}, stream.StoreOptions{Persistent: onDisk, Changelog: true}, "count")
				stream.AddSink(topo, "out", out, serde.String{}, serde.Int64{}, "count")
				run := func(ctx context.Context) { runKgen(ctx, b, c, topo, group, g) }
				if g == stream.ExactlyOnce {
					measureCommitted(b, c, in, group, benchRecords, run)
				} else {
					measure(b, c, out, benchRecords, run)
				}
			}
		})
	}
}

// BenchmarkKVPut is make bench's kv-put: each record put under its key in
// a Pebble store with a changelog, no output. It ends when every record is
// processed.
func BenchmarkKVPut(b *testing.B) {
	c, in := benchSource(b)
	for i := 0; b.Loop(); i++ {
		group := fmt.Sprintf("bench-kvput-%d-%s", i, in)
		var processed atomic.Int64
		topo := stream.NewTopology()
		stream.AddSource(topo, "in", in, serde.Bytes{}, serde.Bytes{})
		stream.AddProcessor(topo, "put", func() stream.Processor[[]byte, []byte, []byte, []byte] {
			return &bytesPutter{n: &processed}
		}, "in")
		stream.AddKeyValueStore(topo, "kv", serde.Bytes{}, serde.Bytes{}, stream.StoreOptions{Persistent: onDisk, Changelog: true}, "put")
		measureUntil(b, benchRecords, func() bool { return processed.Load() >= benchRecords }, func(ctx context.Context) {
			runKgen(ctx, b, c, topo, group, stream.AtLeastOnce)
		})
	}
}

type bytesPutter struct {
	n     *atomic.Int64
	store state.KeyValueStore[[]byte, []byte]
}

func (p *bytesPutter) Init(ctx *stream.Context[[]byte, []byte]) (err error) {
	p.store, err = stream.GetKeyValueStore[[]byte, []byte](ctx, "kv")
	return err
}

func (p *bytesPutter) Process(_ *stream.Context[[]byte, []byte], r stream.Record[[]byte, []byte]) error {
	p.n.Add(1)
	return p.store.Put(r.Key, r.Value)
}

type bytesCounter struct{ keyCounter }

func (c *bytesCounter) Process(ctx *stream.Context[string, int64], r stream.Record[string, []byte]) error {
	return c.keyCounter.Process(ctx, stream.Record[string, string]{Key: r.Key})
}

func testLoggerB() *slogLogger {
	if os.Getenv("KGEN_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return discardLogger
}

// BenchmarkRestore restores a 1,000,000-entry changelog into a Pebble store
// and, in the same run, reads the same topic with a plain consumer: the
// ratio of the two is restoration's overhead over the physical limit.
func BenchmarkRestore(b *testing.B) {
	c, _ := benchSource(b)
	tb := &keepAlive{b}
	in := c.CreateTopic(tb, 1, nil)
	out := c.CreateTopic(tb, 1, nil)
	appID := "bench-restore-" + in
	changelog := appID + "-counts-changelog"
	compact := "compact"
	adm := kadm.NewClient(c.Client(tb))
	if _, err := adm.CreateTopic(context.Background(), 1, -1, map[string]*string{"cleanup.policy": &compact}, changelog); err != nil {
		b.Fatal(err)
	}
	cl := c.Client(tb, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(1<<20))
	var wg sync.WaitGroup
	for i := range benchRecords {
		v, _ := serde.Int64{}.Serialize(int64(i))
		wg.Add(1)
		cl.Produce(context.Background(), &kgo.Record{Topic: changelog, Key: fmt.Appendf(nil, "key-%07d", i), Value: v}, func(_ *kgo.Record, err error) {
			if err != nil {
				b.Error(err)
			}
			wg.Done()
		})
	}
	wg.Wait()

	for _, contender := range []string{"raw-read", "restore"} {
		b.Run(contender, func(b *testing.B) {
			for b.Loop() {
				start := time.Now()
				if contender == "raw-read" {
					rd, err := kgo.NewClient(kgo.SeedBrokers(c.Seeds()...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{changelog: {0: kgo.NewOffset().AtStart()}}))
					if err != nil {
						b.Fatal(err)
					}
					n := 0
					for n < benchRecords {
						n += rd.PollFetches(context.Background()).NumRecords()
					}
					rd.Close()
				} else {
					app, err := stream.New(countTopology(in, out, onDisk), stream.Brokers(c.Seeds()...),
						stream.AppID(appID), stream.StateDir(b.TempDir()), stream.Parallelism(1), stream.Logger(testLoggerB()))
					if err != nil {
						b.Fatal(err)
					}
					ctx, cancel := context.WithCancel(context.Background())
					done := make(chan error, 1)
					go func() { done <- app.Run(ctx) }()
					for app.Stats().Restored < benchRecords {
						time.Sleep(5 * time.Millisecond)
					}
					b.ReportMetric(float64(benchRecords)/time.Since(start).Seconds(), "records/s")
					cancel()
					if err := <-done; err != nil {
						b.Fatal(err)
					}
					continue
				}
				b.ReportMetric(float64(benchRecords)/time.Since(start).Seconds(), "records/s")
			}
			b.ReportMetric(0, "ns/op")
		})
	}
}
