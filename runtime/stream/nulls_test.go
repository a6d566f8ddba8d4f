package stream_test

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/runtime/dsl"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/twmb/franz-go/pkg/kgo"
)

// lines are the log lines that contain substr.
func lines(s *syncBuffer, substr string) []string {
	var out []string
	for _, l := range strings.Split(s.String(), "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return out
}

func debugLogger(buf *syncBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// sumTopology sums the int64 values of each string key (groupByKey +
// reduce): neither side can say null, so the source drops nulls.
func sumTopology(in, out string) *stream.Topology {
	t := stream.NewTopology()
	stream.AddSource(t, "in", in, serde.String{}, serde.Int64{})
	dsl.Reduce(t, "sum", "sums", serde.String{}, serde.Int64{}, stream.StoreOptions{Changelog: true},
		func(agg, v int64) int64 { return agg + v }, "in")
	dsl.ToStream[string, int64](t, "updates", "sum")
	stream.AddSink(t, "out", out, serde.String{}, dsl.Nullable[int64](serde.Int64{}), "updates")
	return t
}

// A source whose key or value serde cannot say null drops such a record
// before decoding it: a null int64 is no size error under the Fail policy,
// a null key makes no "" group. Each drop is counted by reason, logged at
// debug level with its coordinates, and warned about once per source and
// side; the record is processed all the same.
func TestSourceDropsNullsItCannotDecode(t *testing.T) {
	buf := &syncBuffer{}
	d, err := stream.NewLocalDriver(sumTopology("in", "out"), stream.LocalConfig{Partitions: 4, Logger: debugLogger(buf)})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	l := func(n int64) []byte { b, _ := serde.Int64{}.Serialize(n); return b }
	for i, r := range []struct{ k, v []byte }{
		{[]byte("a"), l(1)}, {nil, l(10)}, {[]byte("a"), nil}, {nil, nil}, {[]byte("b"), l(2)},
		{[]byte("a"), l(3)}, {[]byte(""), l(4)}, {nil, l(20)},
	} {
		if err := d.Pipe("in", r.k, r.v, nil, t0.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatalf("record %d (key %q, value %x): %v", i, r.k, r.v, err)
		}
	}
	var got []string
	for _, r := range d.Output("out") {
		n, _ := serde.Int64{}.Deserialize(r.Value)
		got = append(got, fmt.Sprintf("%q=%d", r.Key, n))
	}
	// An empty key is a key, not a null.
	if diff := cmp.Diff([]string{`"a"=1`, `"b"=2`, `"a"=4`, `""=4`}, got); diff != "" {
		t.Errorf("outputs (-want +got):\n%s", diff)
	}
	want := map[stream.DropReason]uint64{stream.DropNullKey: 3, stream.DropNullValue: 1}
	if diff := cmp.Diff(want, d.Dropped()); diff != "" {
		t.Errorf("dropped (-want +got):\n%s", diff)
	}
	drops := lines(buf, "dropping record")
	if len(drops) != 4 {
		t.Fatalf("%d debug lines for drops, want 4:\n%s", len(drops), strings.Join(drops, "\n"))
	}
	for _, want := range []string{"level=DEBUG", "node=in", "reason=null-key", "topic=in", "partition=0", "offset=1"} {
		if !strings.Contains(drops[0], want) {
			t.Errorf("debug line %q lacks %q", drops[0], want)
		}
	}
	for _, side := range []string{"key", "value"} {
		if w := lines(buf, "level=WARN msg=\"source drops records with a null "+side); len(w) != 1 {
			t.Errorf("%d warnings for null %ss, want 1: %q", len(w), side, w)
		}
	}
}

// A dropped null moves stream time by its record time, as Kafka Streams'
// partition time, unless the source extracts event times: then it leaves
// stream time alone, since its record time may be far from them.
func TestDroppedNullAndStreamTime(t *testing.T) {
	for _, extract := range []bool{false, true} {
		topo := stream.NewTopology()
		var opts []stream.SourceOption[string, int64]
		if extract {
			opts = append(opts, stream.WithTimestamp(func(_ string, v int64, _ time.Time) time.Time { return time.UnixMilli(v) }))
		}
		stream.AddSource(topo, "in", "in", serde.String{}, serde.Int64{}, opts...)
		var seen []int64
		stream.AddProcessor(topo, "time", func() stream.Processor[string, int64, string, int64] {
			return stream.ProcessorFunc[string, int64, string, int64](func(ctx *stream.Context[string, int64], _ stream.Record[string, int64]) error {
				seen = append(seen, ctx.StreamTime().UnixMilli())
				return nil
			})
		}, "in")
		d, err := stream.NewLocalDriver(topo, stream.LocalConfig{})
		if err != nil {
			t.Fatal(err)
		}
		l := func(n int64) []byte { b, _ := serde.Int64{}.Serialize(n); return b }
		for _, r := range []struct {
			v  []byte
			ts int64
		}{{l(1000), 1000}, {nil, 9_000_000}, {l(2000), 2000}} {
			if err := d.Pipe("in", []byte("k"), r.v, nil, time.UnixMilli(r.ts)); err != nil {
				t.Fatal(err)
			}
		}
		d.Close()
		want := []int64{1000, 9_000_000}
		if extract {
			want = []int64{1000, 2000}
		}
		if diff := cmp.Diff(want, seen); diff != "" {
			t.Errorf("extractor %v: stream times (-want +got):\n%s", extract, diff)
		}
	}
}

// On a broker, with 4 partitions and two units: records with null keys and
// null int64 values do not stop the App under the default Fail policy; they
// are counted in Stats.Dropped by reason, logged at debug level with their
// coordinates, and their offsets are committed (the App exits once caught
// up, and every partition ends with a dropped record).
func TestAppDropsNullsAndGoesOn(t *testing.T) {
	c := kafkatest.New(t)
	in, out := c.CreateTopic(t, 4, nil), c.CreateTopic(t, 4, nil)
	l := func(n int64) []byte { b, _ := serde.Int64{}.Serialize(n); return b }
	var recs []*kgo.Record
	truth := map[string]int64{}
	const keys, n = 8, 400
	for i := range n {
		k := fmt.Sprintf("k%d", i%keys)
		r := &kgo.Record{Topic: in, Key: []byte(k), Value: l(int64(i))}
		switch i % 10 {
		case 3:
			r.Key = nil // round-robin over the partitions
		case 7:
			r.Value = nil
		default:
			truth[k] += int64(i)
		}
		recs = append(recs, r)
	}
	// Every partition ends with a dropped record: the App exits once its
	// committed offsets reach the end offsets, so the drops are committed.
	for p := range int32(4) {
		for i := 0; ; i++ {
			k := fmt.Appendf(nil, "tail-%d", i)
			if stream.KafkaPartition(k, 4) == p {
				recs = append(recs, &kgo.Record{Topic: in, Key: k})
				break
			}
		}
	}
	produceAll(t, c.Client(t), recs)
	buf := &syncBuffer{}
	app, err := runApp(t, sumTopology(in, out),
		stream.Brokers(c.Seeds()...), stream.AppID("nulls-"+in), stream.StateDir(t.TempDir()),
		stream.Parallelism(2), stream.Logger(debugLogger(buf)), stream.ExitWhenCaughtUp())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	got := map[string]int64{}
	for _, r := range c.ReadToEnd(t, out) {
		v, err := serde.Int64{}.Deserialize(r.Value)
		if err != nil {
			t.Fatalf("output %s/%d@%d: %v", r.Topic, r.Partition, r.Offset, err)
		}
		got[string(r.Key)] = v // a key's updates are in order on its partition
	}
	if !mapsEqual(truth, got) {
		t.Errorf("sums differ from the truth: %s", mapDiff(truth, got))
	}
	st := app.Stats()
	want := map[stream.DropReason]uint64{stream.DropNullKey: n / 10, stream.DropNullValue: n/10 + 4}
	if diff := cmp.Diff(want, st.Dropped); diff != "" {
		t.Errorf("Stats.Dropped (-want +got):\n%s", diff)
	}
	if drops := lines(buf, "dropping record"); len(drops) != 2*n/10+4 {
		t.Errorf("%d debug lines for drops, want %d", len(drops), 2*n/10+4)
	} else if !strings.Contains(drops[0], "topic="+in) || !strings.Contains(drops[0], "offset=") {
		t.Errorf("debug line %q does not name the record", drops[0])
	}
}
