package stream_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/twmb/franz-go/pkg/kgo"
)

// boomCounter counts words into a store and fails on the word "boom" after
// having counted the words before it in the same sentence.
type boomCounter struct {
	store state.KeyValueStore[string, int64]
	fail  bool
}

func (c *boomCounter) Init(ctx *stream.Context[string, int64]) error {
	var err error
	c.store, err = stream.GetKeyValueStore[string, int64](ctx, "counts")
	return err
}

func (c *boomCounter) Process(ctx *stream.Context[string, int64], r stream.Record[string, string]) error {
	for _, w := range strings.Fields(r.Value) {
		if w == "boom" && c.fail {
			return errors.New("boom")
		}
		n, _, err := c.store.Get(w)
		if err != nil {
			return err
		}
		if err := c.store.Put(w, n+1); err != nil {
			return err
		}
		ctx.Forward(stream.Record[string, int64]{Key: w, Value: n + 1})
	}
	return nil
}

func boomTopology(in, out string, persistent state.Opener, fail bool) *stream.Topology {
	t := stream.NewTopology()
	stream.AddSource(t, "in", in, serde.String{}, serde.String{})
	stream.AddProcessor(t, "count", func() stream.Processor[string, string, string, int64] { return &boomCounter{fail: fail} }, "in")
	stream.AddKeyValueStore(t, "counts", serde.String{}, serde.Int64{}, stream.StoreOptions{Persistent: persistent, Changelog: true}, "count")
	stream.AddSink(t, "out", out, serde.String{}, serde.Int64{}, "count")
	return t
}

// A record that fails under Fail must leave the stores exactly as of the
// last commit: before, the clean shutdown flushed the failed record's own
// writes to the store and the changelog while its offset stayed uncommitted,
// so every restart counted the words before "boom" again (1, 2, 3, 4, 5
// instead of 2 for "one").
func TestFailedRecordLeavesStateAsOfLastCommit(t *testing.T) {
	for _, kind := range storeKinds {
		for _, g := range []stream.GuaranteeKind{stream.AtLeastOnce, stream.ExactlyOnce} {
			t.Run(kind.name+"/"+g.String(), func(t *testing.T) {
				c := kafkatest.New(t)
				in, out := c.CreateTopic(t, 2, nil), c.CreateTopic(t, 2, nil)
				// Both sentences on one partition (same key), the other partition idle.
				produceAll(t, c.Client(t), []*kgo.Record{
					{Topic: in, Key: []byte("s"), Value: []byte("one two")},
					{Topic: in, Key: []byte("s"), Value: []byte("one boom")},
				})
				dir := t.TempDir()
				opts := []stream.Option{stream.Brokers(c.Seeds()...), stream.AppID("boom-" + in), stream.StateDir(dir),
					stream.Parallelism(1), stream.Guarantee(g), stream.Logger(testLogger(t))}
				for run := range 4 {
					_, err := runApp(t, boomTopology(in, out, kind.persistent, true), opts...)
					var re *stream.RecordError
					if !errors.As(err, &re) || re.Offset != 1 {
						t.Fatalf("run %d: error %v, want the RecordError of the second sentence", run+1, err)
					}
				}
				// Fixed: "boom" is a word like any other now. The app must see
				// the state of the last commit, i.e. none, and count each
				// word of the input once.
				if _, err := runApp(t, boomTopology(in, out, kind.persistent, false), append(opts, stream.ExitWhenCaughtUp())...); err != nil {
					t.Fatal(err)
				}
				got := map[string]int64{}
				for _, r := range readCommitted(t, c, out, g) {
					v, err := serde.Int64{}.Deserialize(r.Value)
					if err != nil {
						t.Fatal(err)
					}
					got[string(r.Key)] = v // the last count of each word
				}
				want := map[string]int64{"one": 2, "two": 1, "boom": 1}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("last counts = %v, want %v: failed runs left their writes in the store", got, want)
				}
			})
		}
	}
}

// readCommitted reads a topic to its end; read_committed under exactly-once.
func readCommitted(t *testing.T, c *kafkatest.Cluster, topic string, g stream.GuaranteeKind) []*kgo.Record {
	t.Helper()
	if g == stream.ExactlyOnce {
		return c.ReadToEnd(t, topic, kafkatest.ReadCommitted())
	}
	return c.ReadToEnd(t, topic)
}
