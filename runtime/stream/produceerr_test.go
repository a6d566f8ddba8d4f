package stream_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// The production error policy (Kafka Streams' ProductionExceptionHandler)
// applies to an output refused before the producer (larger than its limit)
// and to one the broker rejects (larger than the topic's
// max.message.bytes): Fail names the output topic and the input record,
// LogAndContinue drops the output and counts it, DeadLetter sends the input
// record's original bytes with the cause.
func TestProductionErrorPolicy(t *testing.T) {
	const topicLimit = "4000"
	for _, where := range []struct {
		name string
		size int
	}{
		{"producer", 2 << 20}, // past the producer's 1 MB limit: refused at the sink
		{"broker", 10_000},    // past the topic's max.message.bytes: rejected by the broker
	} {
		for _, policy := range []string{"fail", "continue", "dead-letter"} {
			t.Run(where.name+"/"+policy, func(t *testing.T) {
				c := kafkatest.New(t)
				in := c.CreateTopic(t, 1, nil)
				limit := topicLimit
				out := c.CreateTopic(t, 2, map[string]*string{"max.message.bytes": &limit})
				dlq := c.CreateTopic(t, 1, nil)
				produceAll(t, c.Client(t), []*kgo.Record{
					// The big output goes to another partition of out than the
					// others: a broker rejects a whole batch.
					{Topic: in, Key: []byte("a"), Value: []byte("small")},
					{Topic: in, Key: []byte("d"), Value: []byte("big")},
					{Topic: in, Key: []byte("a"), Value: []byte("after")},
				})
				topo := stream.NewTopology()
				stream.AddSource(topo, "in", in, serde.String{}, serde.String{})
				stream.AddProcessor(topo, "inflate", func() stream.Processor[string, string, string, string] {
					return stream.ProcessorFunc[string, string, string, string](func(ctx *stream.Context[string, string], r stream.Record[string, string]) error {
						if r.Value == "big" {
							r.Value = incompressible(where.size) // compressed, still past the limit
						}
						ctx.Forward(r)
						return nil
					})
				}, "in")
				stream.AddSink(topo, "out", out, serde.String{}, serde.String{}, "inflate")
				opts := []stream.Option{stream.Brokers(c.Seeds()...), stream.AppID("prod-" + in), stream.StateDir(t.TempDir()),
					stream.Parallelism(1), stream.Logger(testLogger(t)), stream.ExitWhenCaughtUp()}
				switch policy {
				case "continue":
					opts = append(opts, stream.OnProduceError(stream.LogAndContinue()))
				case "dead-letter":
					opts = append(opts, stream.OnProduceError(stream.DeadLetter(dlq)))
				}
				app, err := runApp(t, topo, opts...)
				if policy == "fail" {
					var perr *stream.ProduceError
					if !errors.As(err, &perr) || perr.Topic != out || perr.SourceTopic != in || perr.SourceOffset != 1 || !errors.Is(err, kerr.MessageTooLarge) {
						t.Fatalf("Run error = %v, want a ProduceError for %s from input %s@1 wrapping MESSAGE_TOO_LARGE", err, out, in)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				var values []string
				for _, r := range c.ReadToEnd(t, out) {
					values = append(values, fmt.Sprintf("%.8s(%d bytes)", r.Value, len(r.Value)))
				}
				if strings.Join(values, ",") != "small(5 bytes),after(5 bytes)" {
					t.Fatalf("outputs %v, want small and after (the big one dropped, nothing else)", values)
				}
				st := app.Stats()
				dead := c.ReadToEnd(t, dlq)
				switch policy {
				case "continue":
					if st.Skipped != 1 || len(dead) != 0 {
						t.Fatalf("skipped %d, dead letters %d; want 1 and 0", st.Skipped, len(dead))
					}
				case "dead-letter":
					if st.DeadLettered != 1 || len(dead) != 1 || string(dead[0].Value) != "big" {
						t.Fatalf("dead-lettered %d, dead letters %v; want the input record big", st.DeadLettered, dead)
					}
					hdr := map[string]string{}
					for _, h := range dead[0].Headers {
						hdr[h.Key] = string(h.Value)
					}
					if hdr["kgen.source.topic"] != in || hdr["kgen.source.offset"] != "1" || !strings.Contains(hdr["kgen.error"], out) {
						t.Fatalf("dead letter headers %v: want the input's coordinates and an error naming %s", hdr, out)
					}
				}
			})
		}
	}
}

// incompressible is n characters that compression cannot shrink much.
func incompressible(n int) string {
	b := make([]byte, n/2)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return hex.EncodeToString(b)
}

// A dead letter for an output the broker rejected is made in the producer's
// callback, while the failed record still holds its slot in the producer's
// buffer: sent from there, it failed with ErrMaxBuffered whenever the
// buffer was full (the normal state of a producer-bound unit) and stopped
// the app. Here the buffer holds one record, under both guarantees; the
// dead letter must still arrive, and the records after it too.
func TestDeadLetterWithAFullProducerBuffer(t *testing.T) {
	for _, g := range []stream.GuaranteeKind{stream.AtLeastOnce, stream.ExactlyOnce} {
		t.Run(g.String(), func(t *testing.T) {
			c := kafkatest.New(t)
			in := c.CreateTopic(t, 1, nil)
			limit := "4000"
			out := c.CreateTopic(t, 1, map[string]*string{"max.message.bytes": &limit})
			dlq := c.CreateTopic(t, 1, nil)
			var recs []*kgo.Record
			for i := range 40 {
				v := fmt.Sprint(i)
				if i == 20 {
					v = "big"
				}
				recs = append(recs, &kgo.Record{Topic: in, Key: []byte("k"), Value: []byte(v)})
			}
			produceAll(t, c.Client(t), recs)
			topo := stream.NewTopology()
			stream.AddSource(topo, "in", in, serde.String{}, serde.String{})
			stream.AddProcessor(topo, "inflate", func() stream.Processor[string, string, string, string] {
				return stream.ProcessorFunc[string, string, string, string](func(ctx *stream.Context[string, string], r stream.Record[string, string]) error {
					if r.Value == "big" {
						r.Value = incompressible(10_000)
					}
					ctx.Forward(r)
					return nil
				})
			}, "in")
			stream.AddSink(topo, "out", out, serde.String{}, serde.String{}, "inflate")
			app, err := runApp(t, topo, stream.Brokers(c.Seeds()...), stream.AppID("dlq-full-"+in), stream.StateDir(t.TempDir()),
				stream.Parallelism(1), stream.Guarantee(g), stream.Logger(testLogger(t)), stream.ExitWhenCaughtUp(),
				stream.OnProduceError(stream.DeadLetter(dlq)), stream.ClientOpts(kgo.MaxBufferedRecords(1)))
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			dead := c.ReadToEnd(t, dlq, kafkatest.ReadCommitted())
			if len(dead) != 1 || string(dead[0].Value) != "big" || app.Stats().DeadLettered != 1 {
				t.Fatalf("%d dead letters (stats: %d), want the one input record big", len(dead), app.Stats().DeadLettered)
			}
			if got := len(c.ReadToEnd(t, out, kafkatest.ReadCommitted())); got != 39 {
				t.Fatalf("%d outputs, want the 39 small ones", got)
			}
		})
	}
}

// bigValue is the largest value a producer with franz-go's default limit
// (1,000,012 bytes a batch) sends in a record with a short key: the input
// near the size limit of the issue.
const bigValue = 999_850

// A dead letter is the input plus kgen's headers: for an input near the
// producer's limit it is over it. It used to fail, and a failed dead letter
// stopped the app with an error naming no record ("from a punctuation"); a
// restart read the same records and failed again, dead-lettering the
// earlier poison records once more each time. Now it is sent truncated,
// with a header saying what was kept, and the app goes on: under both
// guarantees, for a record that fails in a processor and for one whose
// output is too large.
func TestDeadLetterOfAnInputNearTheSizeLimit(t *testing.T) {
	for _, g := range []stream.GuaranteeKind{stream.AtLeastOnce, stream.ExactlyOnce} {
		for _, path := range []string{"process", "produce"} {
			t.Run(g.String()+"/"+path, func(t *testing.T) {
				c := kafkatest.New(t)
				in, out, dlq := c.CreateTopic(t, 2, nil), c.CreateTopic(t, 2, nil), c.CreateTopic(t, 2, nil)
				big := []byte("poison " + strings.Repeat("x", bigValue-len("poison ")))
				var recs []*kgo.Record
				for i := range 10 {
					v := []byte(fmt.Sprintf("v%d", i))
					switch i {
					case 3:
						v = []byte("poison small")
					case 8:
						v = big
					}
					recs = append(recs, &kgo.Record{Topic: in, Partition: 0, Key: fmt.Appendf(nil, "k%d", i), Value: v})
				}
				produceAll(t, c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner())), recs)
				topo := stream.NewTopology()
				stream.AddSource(topo, "sentences", in, serde.String{}, serde.String{})
				stream.AddProcessor(topo, "check", func() stream.Processor[string, string, string, string] {
					return stream.ProcessorFunc[string, string, string, string](func(ctx *stream.Context[string, string], r stream.Record[string, string]) error {
						if strings.HasPrefix(r.Value, "poison") {
							if path == "process" {
								return errors.New("poison record")
							}
							r.Value += strings.Repeat("!", 200) // past the producer's limit
						}
						ctx.Forward(r)
						return nil
					})
				}, "sentences")
				stream.AddSink(topo, "out", out, serde.String{}, serde.String{}, "check")
				opts := []stream.Option{stream.Brokers(c.Seeds()...), stream.AppID("dlq-big-" + in), stream.StateDir(t.TempDir()),
					stream.Parallelism(1), stream.Guarantee(g), stream.Logger(testLogger(t)), stream.ExitWhenCaughtUp()}
				if path == "process" {
					opts = append(opts, stream.OnProcessError(stream.DeadLetter(dlq)))
				} else {
					opts = append(opts, stream.OnProduceError(stream.DeadLetter(dlq)))
				}
				app, err := runApp(t, topo, opts...)
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				// The small poison record's output fits: only a processing
				// error dead-letters it.
				wantDead := map[string]int{"process": 2, "produce": 1}[path]
				if n := app.Stats().DeadLettered; n != uint64(wantDead) {
					t.Errorf("dead-lettered %d, want %d", n, wantDead)
				}
				dead := c.ReadToEnd(t, dlq, kafkatest.ReadCommitted())
				slices.SortFunc(dead, func(a, b *kgo.Record) int {
					return strings.Compare(header(a, "kgen.source.offset"), header(b, "kgen.source.offset"))
				})
				if len(dead) != wantDead {
					t.Fatalf("%d dead letters, want %d", len(dead), wantDead)
				}
				if small := dead[0]; wantDead == 2 && (string(small.Value) != "poison small" || header(small, "kgen.source.offset") != "3" || header(small, "kgen.truncated") != "") {
					t.Errorf("first dead letter %.20q offset %s truncated %q: want the whole input at offset 3", small.Value, header(small, "kgen.source.offset"), header(small, "kgen.truncated"))
				}
				d := dead[wantDead-1]
				kept := len(d.Value)
				want := fmt.Sprintf("key=2/2 value=%d/%d headers=0/0", kept, len(big))
				if header(d, "kgen.source.offset") != "8" || header(d, "kgen.source.topic") != in || string(d.Key) != "k8" ||
					!bytes.HasPrefix(big, d.Value) || kept >= len(big) || kept < len(big)-4096 || header(d, "kgen.truncated") != want {
					t.Errorf("big dead letter: key %q, %d value bytes, headers %v; want the input's key, a prefix of its value, kgen.truncated=%q",
						d.Key, kept, headerMap(d), want)
				}
				if !strings.Contains(header(d, "kgen.error"), "poison record") && !strings.Contains(header(d, "kgen.error"), out) {
					t.Errorf("kgen.error %q says nothing of the cause", header(d, "kgen.error"))
				}
				if got := len(c.ReadToEnd(t, out, kafkatest.ReadCommitted())); got != 10-wantDead {
					t.Errorf("%d outputs, want the %d others", got, 10-wantDead)
				}
			})
		}
	}
}

func header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

func headerMap(r *kgo.Record) map[string]string {
	m := map[string]string{}
	for _, h := range r.Headers {
		if len(h.Value) > 80 {
			m[h.Key] = string(h.Value[:80]) + "..."
		} else {
			m[h.Key] = string(h.Value)
		}
	}
	return m
}

// A dead-letter topic's own max.message.bytes bounds its dead letters too:
// read at start, it truncates them before the producer. A limit lowered
// while the app runs makes the broker refuse one; it is then sent as a
// reference to its input (kgen's headers only) instead of stopping the app.
func TestDeadLetterFitsTheTopicLimit(t *testing.T) {
	for _, tc := range []struct {
		when string
		g    stream.GuaranteeKind
	}{{"at start", stream.AtLeastOnce}, {"lowered while running", stream.AtLeastOnce}, {"lowered while running", stream.ExactlyOnce}} {
		when := tc.when
		t.Run(when+"/"+tc.g.String(), func(t *testing.T) {
			c := kafkatest.New(t)
			in, out := c.CreateTopic(t, 1, nil), c.CreateTopic(t, 1, nil)
			limit := "4000"
			var dlqConfigs map[string]*string
			if when == "at start" {
				dlqConfigs = map[string]*string{"max.message.bytes": &limit}
			}
			dlq := c.CreateTopic(t, 1, dlqConfigs)
			produceAll(t, c.Client(t), []*kgo.Record{
				{Topic: in, Key: []byte("a"), Value: []byte("fine")},
				{Topic: in, Key: []byte("b"), Value: []byte("poison " + incompressible(10_000)), Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte("t1")}}},
				{Topic: in, Key: []byte("c"), Value: []byte("fine")},
			})
			adm := c.Admin(t)
			topo := stream.NewTopology()
			stream.AddSource(topo, "in", in, serde.String{}, serde.String{})
			stream.AddProcessor(topo, "check", func() stream.Processor[string, string, string, string] {
				return stream.ProcessorFunc[string, string, string, string](func(ctx *stream.Context[string, string], r stream.Record[string, string]) error {
					if !strings.HasPrefix(r.Value, "poison") {
						ctx.Forward(r)
						return nil
					}
					if when != "at start" {
						lowerMaxMessageBytes(t, adm, dlq, limit)
					}
					return errors.New("poison record")
				})
			}, "in")
			stream.AddSink(topo, "out", out, serde.String{}, serde.String{}, "check")
			app, err := runApp(t, topo, stream.Brokers(c.Seeds()...), stream.AppID("dlq-limit-"+in), stream.StateDir(t.TempDir()),
				stream.Parallelism(1), stream.Guarantee(tc.g), stream.Logger(testLogger(t)), stream.ExitWhenCaughtUp(), stream.OnProcessError(stream.DeadLetter(dlq)))
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			dead := c.ReadToEnd(t, dlq, kafkatest.ReadCommitted())
			if len(dead) != 1 || app.Stats().DeadLettered != 1 {
				t.Fatalf("%d dead letters (stats %d), want 1", len(dead), app.Stats().DeadLettered)
			}
			d := dead[0]
			if header(d, "kgen.source.offset") != "1" || !strings.Contains(header(d, "kgen.error"), "poison record") {
				t.Fatalf("dead letter headers %v: want the input's offset 1 and the cause", headerMap(d))
			}
			var want string
			if when == "at start" {
				if len(d.Value) < 3000 || len(d.Value) > 4000 || string(d.Key) != "b" || header(d, "trace") != "t1" {
					t.Fatalf("dead letter: key %q, %d value bytes, headers %v: want the key, the input's headers and the value cut to fit 4000 bytes", d.Key, len(d.Value), headerMap(d))
				}
				want = fmt.Sprintf("key=1/1 value=%d/10007 headers=1/1", len(d.Value))
			} else {
				if d.Key != nil || d.Value != nil || header(d, "trace") != "" {
					t.Fatalf("dead letter: key %q, %d value bytes, headers %v: want a reference (kgen's headers only)", d.Key, len(d.Value), headerMap(d))
				}
				want = "key=0/1 value=0/10007 headers=0/1"
			}
			if got := header(d, "kgen.truncated"); got != want {
				t.Fatalf("kgen.truncated %q, want %q", got, want)
			}
		})
	}
}

// Dead letters that each fit their topic's max.message.bytes were batched
// by the producer up to its own limit (1 MB), and the broker refused the
// whole batch: every one of them became a reference. The producer's batches
// for a topic are bounded by the topic's limit, read at start, so each
// dead letter arrives with what fits of its input.
func TestDeadLettersBatchedWithinTheTopicLimit(t *testing.T) {
	c := kafkatest.New(t)
	in, out := c.CreateTopic(t, 1, nil), c.CreateTopic(t, 1, nil)
	limit := "4000"
	dlq := c.CreateTopic(t, 1, map[string]*string{"max.message.bytes": &limit})
	var recs []*kgo.Record
	for i := range 20 {
		recs = append(recs, &kgo.Record{Topic: in, Key: []byte("b"), Value: []byte(fmt.Sprintf("poison %d %s", i, incompressible(10_000)))})
	}
	produceAll(t, c.Client(t), recs)
	topo := stream.NewTopology()
	stream.AddSource(topo, "in", in, serde.String{}, serde.String{})
	stream.AddProcessor(topo, "check", func() stream.Processor[string, string, string, string] {
		return stream.ProcessorFunc[string, string, string, string](func(*stream.Context[string, string], stream.Record[string, string]) error {
			return errors.New("poison record")
		})
	}, "in")
	stream.AddSink(topo, "out", out, serde.String{}, serde.String{}, "check")
	_, err := runApp(t, topo, stream.Brokers(c.Seeds()...), stream.AppID("dlq-batch-"+in), stream.StateDir(t.TempDir()),
		stream.Parallelism(1), stream.Logger(testLogger(t)), stream.ExitWhenCaughtUp(), stream.OnProcessError(stream.DeadLetter(dlq)))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	dead := c.ReadToEnd(t, dlq)
	if len(dead) != 20 {
		t.Fatalf("%d dead letters, want 20", len(dead))
	}
	for _, d := range dead {
		if len(d.Value) < 3000 {
			t.Fatalf("dead letter of offset %s: %d value bytes, kgen.truncated %q; want the value cut to fit 4000 bytes, not a reference",
				header(d, "kgen.source.offset"), len(d.Value), header(d, "kgen.truncated"))
		}
	}
}

// lowerMaxMessageBytes sets topic's max.message.bytes and waits until the
// broker reports it.
func lowerMaxMessageBytes(t *testing.T, adm *kadm.Client, topic, limit string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "max.message.bytes", Value: &limit}}, topic); err != nil {
		t.Errorf("alter %s: %v", topic, err)
		return
	}
	for ctx.Err() == nil {
		rcs, err := adm.DescribeTopicConfigs(ctx, topic)
		if err == nil {
			if rc, err := rcs.On(topic, nil); err == nil {
				for _, c := range rc.Configs {
					if c.Key == "max.message.bytes" && c.Value != nil && *c.Value == limit {
						return
					}
				}
			}
		}
		time.Sleep(20 * time.Millisecond) // poll interval, bounded by ctx
	}
	t.Errorf("max.message.bytes of %s never became %s", topic, limit)
}

// A punctuation's output that cannot be produced has no input record to
// dead-letter: under DeadLetter the app stops, and its error says why the
// policy did not apply instead of leaving the reader to guess.
func TestPunctuationOutputTooLargeUnderDeadLetter(t *testing.T) {
	c := kafkatest.New(t)
	in, out, dlq := c.CreateTopic(t, 1, nil), c.CreateTopic(t, 1, nil), c.CreateTopic(t, 1, nil)
	topo := stream.NewTopology()
	stream.AddSource(topo, "in", in, serde.String{}, serde.String{})
	stream.AddProcessor(topo, "tick", func() stream.Processor[string, string, string, string] { return bigTicker{} }, "in")
	stream.AddSink(topo, "out", out, serde.String{}, serde.String{}, "tick")
	_, err := runApp(t, topo, stream.Brokers(c.Seeds()...), stream.AppID("punct-big-"+in), stream.StateDir(t.TempDir()),
		stream.Parallelism(1), stream.Logger(testLogger(t)), stream.OnProduceError(stream.DeadLetter(dlq)))
	var perr *stream.ProduceError
	if !errors.As(err, &perr) || perr.SourceTopic != "" || !strings.Contains(err.Error(), "from a punctuation") ||
		!strings.Contains(err.Error(), "a punctuation's output has no input record to dead-letter") {
		t.Fatalf("Run: %v, want a ProduceError from a punctuation saying why it was not dead-lettered", err)
	}
}

type bigTicker struct{}

func (bigTicker) Init(ctx *stream.Context[string, string]) error {
	ctx.Schedule(10*time.Millisecond, stream.WallClock, func(time.Time) error {
		ctx.Forward(stream.Record[string, string]{Key: "k", Value: strings.Repeat("x", 2<<20)})
		return nil
	})
	return nil
}

func (bigTicker) Process(*stream.Context[string, string], stream.Record[string, string]) error {
	return nil
}

// What a restart does with records dead-lettered after the last commit,
// when a later record stops the app (here one that fails to deserialize,
// under Fail): the restart begins at the last commit, meets the poison
// record again and dead-letters it again, then stops at the same record.
// Under at-least-once every such restart adds a copy of the dead letter;
// under exactly-once each stop aborts the transaction that held it, so a
// read_committed reader sees none until a run gets past the failure, and
// then one.
func TestDeadLettersAfterAFailedRun(t *testing.T) {
	for _, g := range []stream.GuaranteeKind{stream.AtLeastOnce, stream.ExactlyOnce} {
		t.Run(g.String(), func(t *testing.T) {
			c := kafkatest.New(t)
			in, out, dlq := c.CreateTopic(t, 1, nil), c.CreateTopic(t, 1, nil), c.CreateTopic(t, 1, nil)
			produceAll(t, c.Client(t), []*kgo.Record{
				{Topic: in, Key: []byte("k"), Value: []byte(`"fine"`)},
				{Topic: in, Key: []byte("k"), Value: []byte(`"poison"`)},
				{Topic: in, Key: []byte("k"), Value: []byte(`not json`)},
			})
			topo := stream.NewTopology()
			stream.AddSource(topo, "in", in, serde.String{}, serde.JSON[string]{})
			stream.AddProcessor(topo, "check", func() stream.Processor[string, string, string, string] {
				return stream.ProcessorFunc[string, string, string, string](func(ctx *stream.Context[string, string], r stream.Record[string, string]) error {
					if r.Value == "poison" {
						return errors.New("poison record")
					}
					ctx.Forward(r)
					return nil
				})
			}, "in")
			stream.AddSink(topo, "out", out, serde.String{}, serde.String{}, "check")
			appID := "dlq-restart-" + in
			for run := range 2 {
				_, err := runApp(t, topo, stream.Brokers(c.Seeds()...), stream.AppID(appID), stream.StateDir(t.TempDir()),
					stream.Parallelism(1), stream.Guarantee(g), stream.Logger(testLogger(t)), stream.OnProcessError(stream.DeadLetter(dlq)))
				var rerr *stream.RecordError
				if !errors.As(err, &rerr) || !rerr.Deserialize || rerr.Offset != 2 {
					t.Fatalf("run %d: %v, want a deserialization error at offset 2", run, err)
				}
			}
			want := map[stream.GuaranteeKind]int{stream.AtLeastOnce: 2, stream.ExactlyOnce: 0}[g]
			if got := len(c.ReadToEnd(t, dlq, kafkatest.ReadCommitted())); got != want {
				t.Fatalf("%d dead letters after two failed runs, want %d", got, want)
			}
			// A run that gets past the failure (the record skipped) commits
			// one more.
			if _, err := runApp(t, topo, stream.Brokers(c.Seeds()...), stream.AppID(appID), stream.StateDir(t.TempDir()),
				stream.Parallelism(1), stream.Guarantee(g), stream.Logger(testLogger(t)), stream.OnProcessError(stream.DeadLetter(dlq)),
				stream.OnDeserializeError(stream.LogAndContinue()), stream.ExitWhenCaughtUp()); err != nil {
				t.Fatalf("run past the failure: %v", err)
			}
			if got := len(c.ReadToEnd(t, dlq, kafkatest.ReadCommitted())); got != want+1 {
				t.Fatalf("%d dead letters after a run that got through, want %d", got, want+1)
			}
		})
	}
}

// An app may produce to topics whose configs it may not describe: reading
// their max.message.bytes at start then keeps the producer's limit, with a
// warning, instead of retrying until the startup timeout and failing.
func TestTopicLimitsNotDescribable(t *testing.T) {
	acls := []kfake.ACL{
		{Resource: kmsg.ACLResourceTypeTopic, Name: "*", Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationAll, Allow: true},
		{Resource: kmsg.ACLResourceTypeGroup, Name: "*", Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationAll, Allow: true},
		{Resource: kmsg.ACLResourceTypeCluster, Name: "kafka-cluster", Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationAll, Allow: true},
		{Resource: kmsg.ACLResourceTypeTopic, Name: "out", Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationDescribeConfigs},
		{Resource: kmsg.ACLResourceTypeTopic, Name: "dlq", Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationDescribeConfigs},
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.EnableACLs(), kfake.Superuser("PLAIN", "admin", "admin"),
		kfake.User("PLAIN", "app", "app", acls...), kfake.SeedTopics(1, "in", "out", "dlq"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	auth := kgo.SASL(plain.Auth{User: "app", Pass: "app"}.AsMechanism())
	seed, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), auth)
	if err != nil {
		t.Fatal(err)
	}
	defer seed.Close()
	produceAll(t, seed, []*kgo.Record{{Topic: "in", Key: []byte("a"), Value: []byte("fine")}, {Topic: "in", Key: []byte("b"), Value: []byte("poison")}})
	topo := stream.NewTopology()
	stream.AddSource(topo, "in", "in", serde.String{}, serde.String{})
	stream.AddProcessor(topo, "check", func() stream.Processor[string, string, string, string] {
		return stream.ProcessorFunc[string, string, string, string](func(ctx *stream.Context[string, string], r stream.Record[string, string]) error {
			if r.Value == "poison" {
				return errors.New("poison record")
			}
			ctx.Forward(r)
			return nil
		})
	}, "in")
	stream.AddSink(topo, "out", "out", serde.String{}, serde.String{}, "check")
	app, err := runApp(t, topo, stream.Brokers(c.ListenAddrs()...), stream.ClientOpts(auth), stream.AppID("no-describe"),
		stream.StateDir(t.TempDir()), stream.Parallelism(1), stream.Logger(testLogger(t)), stream.ExitWhenCaughtUp(),
		stream.StartupTimeout(10*time.Second), stream.OnProcessError(stream.DeadLetter("dlq")))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if st := app.Stats(); st.DeadLettered != 1 {
		t.Fatalf("dead-lettered %d, want 1", st.DeadLettered)
	}
}
