package stream_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// TestWaitingInputIsPausedNotBuffered: an input of a task of two whose
// records all lie ahead in time waits for the other, and would be handed
// its whole partition meanwhile (two megabytes of small records each,
// packed). It is paused past a megabyte instead (flow.go), resumed once the
// other catches up, and nothing is lost or repeated: every record comes out
// once, each partition's early input before its late one.
func TestWaitingInputIsPausedNotBuffered(t *testing.T) {
	c := kafkatest.New(t)
	early, late, out := c.CreateTopic(t, 2, nil), c.CreateTopic(t, 2, nil), c.CreateTopic(t, 2, nil)
	const earlyPer, latePer = 40_000, 40_000
	var recs []*kgo.Record
	for p := range int32(2) {
		for i := range earlyPer {
			recs = append(recs, &kgo.Record{Topic: early, Partition: p, Key: []byte("k"),
				Value: fmt.Appendf(nil, "e%d-%05d-%080d", p, i, 0), Timestamp: t0.Add(time.Duration(i) * time.Millisecond)})
		}
		for i := range latePer {
			recs = append(recs, &kgo.Record{Topic: late, Partition: p, Key: []byte("k"),
				Value: fmt.Appendf(nil, "l%d-%05d-%032d", p, i, 0), Timestamp: t0.Add(time.Hour + time.Duration(i)*time.Millisecond)})
		}
	}
	produceAll(t, c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(64<<10)), recs)

	topo := stream.NewTopology()
	stream.AddSource(topo, "early", early, serde.String{}, serde.String{})
	stream.AddSource(topo, "late", late, serde.String{}, serde.String{})
	stream.AddProcessor(topo, "merge", func() stream.Processor[string, string, string, string] {
		return stream.ProcessorFunc[string, string, string, string](func(ctx *stream.Context[string, string], r stream.Record[string, string]) error {
			ctx.Forward(r)
			return nil
		})
	}, "early", "late")
	stream.AddSink(topo, "out", out, serde.String{}, serde.String{}, "merge")
	app, err := runApp(t, topo, stream.Brokers(c.Seeds()...), stream.AppID("flow-"+early),
		stream.StateDir(t.TempDir()), stream.Parallelism(1), stream.Logger(testLogger(t)), stream.ExitWhenCaughtUp(),
		// Small fetches, so that the input passes the megabyte by little.
		stream.ClientOpts(kgo.FetchMaxPartitionBytes(128<<10)))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}

	st := app.Stats()
	if st.InputPauses == 0 || st.PackedPeak > 3<<19 {
		t.Errorf("the late inputs were paused %d times and one held up to %d bytes packed; want some pauses and at most 1.5 MiB",
			st.InputPauses, st.PackedPeak)
	}
	seen := map[string]bool{}
	lastEarly := map[int32]int{}
	firstLate := map[int32]int{}
	got := c.ReadToEnd(t, out)
	for i, r := range got {
		v := string(r.Value)
		if seen[v] {
			t.Fatalf("%s came out twice", v)
		}
		seen[v] = true
		p := int32(v[1] - '0')
		if v[0] == 'e' {
			lastEarly[p] = i
		} else if _, ok := firstLate[p]; !ok {
			firstLate[p] = i
		}
	}
	if want := 2 * (earlyPer + latePer); len(got) != want {
		t.Fatalf("%d records came out, want %d", len(got), want)
	}
	// Both inputs' partitions p feed the task of partition p, whose
	// output goes to the output's partition the key hashes to: compare
	// positions within the output, whatever partition it is.
	for p := range int32(2) {
		if firstLate[p] < lastEarly[p] && got[firstLate[p]].Partition == got[lastEarly[p]].Partition {
			t.Errorf("partition %d: a late record came out before the last early one", p)
		}
	}
}
