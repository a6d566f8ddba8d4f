package stream_test

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
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
