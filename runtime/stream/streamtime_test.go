package stream_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// gateGrace is how far behind its observed time the gate still takes a
// record.
const gateGrace = 5 * time.Second

// gateTopology is a window's essentials behind a filter: the filter drops
// values starting with "skip"; the gate keeps its own observed time, sends
// a record older than that time minus gateGrace to late (as a window drops
// a record for a window that has closed) and every other one to out, as
// "<value> stream=<task's stream time> observed=<its observed time>" (in
// seconds after t0), keyed by the input's partition. A stream-time
// punctuation every 100 s adds "tick@<time>". onInit, if set, is told the
// task's stream time and the gate's observed time in each Init.
func gateTopology(in, out, late string, onInit func(p int32, stream, observed int64)) *stream.Topology {
	t := stream.NewTopology()
	stream.AddSource(t, "in", in, serde.String{}, serde.String{})
	stream.AddProcessor(t, "filter", func() stream.Processor[string, string, string, string] {
		return stream.ProcessorFunc[string, string, string, string](func(ctx *stream.Context[string, string], r stream.Record[string, string]) error {
			if !strings.HasPrefix(r.Value, "skip") {
				ctx.Forward(r)
			}
			return nil
		})
	}, "in")
	stream.AddProcessor(t, "gate", func() stream.Processor[string, string, string, string] { return &gate{onInit: onInit} }, "filter")
	stream.AddSink(t, "out", out, serde.String{}, serde.String{}, "gate")
	stream.AddSink(t, "late", late, serde.String{}, serde.String{}, "gate")
	return t
}

type gate struct {
	seen   *stream.ObservedTime
	onInit func(p int32, stream, observed int64)
}

// secs is a time as seconds after t0; -1 for none.
func secs(ts time.Time) int64 {
	if ts.IsZero() {
		return -1
	}
	return int64(ts.Sub(t0) / time.Second)
}

func (g *gate) Init(ctx *stream.Context[string, string]) error {
	g.seen = ctx.ObservedTime("window")
	if ctx.ObservedTime("window") != g.seen {
		return fmt.Errorf("a second ObservedTime(%q) is another handle", "window")
	}
	if g.onInit != nil {
		g.onInit(ctx.TaskID().Partition, secs(ctx.StreamTime()), secs(g.seen.Get()))
	}
	ctx.Schedule(100*time.Second, stream.StreamTime, func(now time.Time) error {
		key := fmt.Sprintf("p%d", ctx.TaskID().Partition)
		ctx.ForwardTo("out", stream.Record[string, string]{Key: key, Value: fmt.Sprintf("tick@%d", secs(now))})
		return nil
	})
	return nil
}

func (g *gate) Process(ctx *stream.Context[string, string], r stream.Record[string, string]) error {
	key := fmt.Sprintf("p%d", ctx.TaskID().Partition)
	if !g.seen.Get().IsZero() && r.Timestamp.Before(g.seen.Get().Add(-gateGrace)) {
		ctx.ForwardTo("late", stream.Record[string, string]{Key: key, Value: r.Value})
		return nil
	}
	g.seen.Observe(r.Timestamp)
	v := fmt.Sprintf("%s stream=%d observed=%d", r.Value, secs(ctx.StreamTime()), secs(g.seen.Get()))
	ctx.ForwardTo("out", stream.Record[string, string]{Key: key, Value: v})
	return nil
}

// A processor behind a filter keeps its own observed time in the
// LocalDriver too: the filtered record moves the task's stream time, not
// the gate's, so a record the task's time would call late is still taken.
func TestObservedTimeBehindFilterLocal(t *testing.T) {
	d, err := stream.NewLocalDriver(gateTopology("in", "out", "late", nil), stream.LocalConfig{Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	// One key: every record goes to the same task.
	for _, r := range []struct {
		v   string
		sec int
	}{{"a", 100}, {"skip", 200}, {"b", 120}, {"c", 110}, {"d", 130}} {
		if err := d.Pipe("in", []byte("k"), []byte(r.v), nil, t0.Add(time.Duration(r.sec)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string][]string{}
	for _, topic := range []string{"out", "late"} {
		for _, r := range d.Output(topic) {
			got[topic] = append(got[topic], string(r.Value))
		}
	}
	want := map[string][]string{
		"out":  {"a stream=100 observed=100", "tick@200", "b stream=200 observed=120", "d stream=200 observed=130"},
		"late": {"c"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("outputs (-want +got):\n%s", diff)
	}
}

// The gate's observed time, the partition times and the stream-time
// punctuation survive a task moving to another instance in a rebalance and
// a restart of the app, under both guarantees, with two partitions: a record
// the gate would have dropped before is still dropped after, and the stream
// time is the one the filtered record set. Without the times in the commit
// metadata the moved or restarted task starts from nothing and takes the
// late records.
func TestStreamTimeSurvivesRebalanceAndRestart(t *testing.T) {
	for _, g := range []struct {
		name string
		g    stream.GuaranteeKind
	}{{"at-least-once", stream.AtLeastOnce}, {"exactly-once", stream.ExactlyOnce}} {
		t.Run(g.name, func(t *testing.T) {
			c := kafkatest.New(t)
			in, out, late := c.CreateTopic(t, 2, nil), c.CreateTopic(t, 2, nil), c.CreateTopic(t, 2, nil)
			appID := "stream-time-" + in
			cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
			produce := func(p int32, recs ...any) {
				t.Helper()
				var rs []*kgo.Record
				for i := 0; i < len(recs); i += 2 {
					rs = append(rs, &kgo.Record{Topic: in, Partition: p, Key: []byte("k"), Value: []byte(recs[i].(string)),
						Timestamp: t0.Add(time.Duration(recs[i+1].(int)) * time.Second)})
				}
				produceAll(t, cl, rs)
			}
			adm := c.Admin(t)
			// What each Init saw, by phase: the restored times, before
			// any record.
			var (
				mu    sync.Mutex
				phase int
				inits []string
			)
			onInit := func(p int32, st, obs int64) {
				mu.Lock()
				defer mu.Unlock()
				inits = append(inits, fmt.Sprintf("%d/p%d: %d/%d", phase, p, st, obs))
			}
			setPhase := func(n int) {
				mu.Lock()
				defer mu.Unlock()
				phase = n
			}
			start := func(name string) (*stream.App, func()) {
				app, err := stream.New(gateTopology(in, out, late, onInit), stream.Brokers(c.Seeds()...),
					stream.AppID(appID), stream.StateDir(t.TempDir()), stream.InstanceID(name),
					stream.Parallelism(1), stream.Guarantee(g.g),
					stream.CommitInterval(100*time.Millisecond), stream.Logger(testLogger(t)))
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- app.Run(ctx) }()
				var once sync.Once
				stop := func() {
					once.Do(func() {
						cancel()
						if err := <-done; err != nil {
							t.Errorf("instance %s: %v", name, err)
						}
					})
				}
				t.Cleanup(stop)
				return app, stop
			}

			// Offsets another client committed, with metadata of its own
			// (Kafka Streams' form, franz-go's member id): the app starts
			// there, with no stream time.
			var foreign kadm.Offsets
			foreign.Add(kadm.Offset{Topic: in, Partition: 0, At: 0, LeaderEpoch: -1, Metadata: "AQAAAZrgQ2gA"})
			foreign.Add(kadm.Offset{Topic: in, Partition: 1, At: 0, LeaderEpoch: -1, Metadata: "kgo-7d1e5e2a-3c34"})
			if err := adm.CommitAllOffsets(context.Background(), appID, foreign); err != nil {
				t.Fatal(err)
			}

			// One instance runs both tasks. The filtered record sets
			// partition 0's time to 200, not the gate's.
			setPhase(1)
			a, stopA := start("a")
			produce(0, "a1", 100, "skip", 200)
			produce(1, "b1", 150)
			waitFor(t, "a to own both tasks", func() bool { return settled(a, 2) })
			waitCaughtUp(t, adm, appID, in)

			// A second instance takes one task over: its new owner resumes
			// the task's times from the commit the revocation made.
			setPhase(2)
			b, stopB := start("b")
			waitFor(t, "a and b to own one task each", func() bool { return settled(a, 1) && settled(b, 1) })
			produce(0, "late0", 90, "a2", 120)
			produce(1, "late1", 140)
			waitCaughtUp(t, adm, appID, in)
			stopB()
			stopA()

			// A clean restart, on a third instance: both tasks resume.
			setPhase(3)
			cApp, stopC := start("c")
			waitFor(t, "c to own both tasks", func() bool { return settled(cApp, 2) })
			produce(0, "old0", 110, "a3", 130, "a4", 250, "a5", 320)
			produce(1, "old1", 141, "b2", 148)
			waitCaughtUp(t, adm, appID, in)
			stopC()

			var opts []kafkatest.ReadOption
			if g.g == stream.ExactlyOnce {
				opts = append(opts, kafkatest.ReadCommitted())
			}
			got := map[string][]string{}
			for _, topic := range []string{out, late} {
				for _, r := range c.ReadToEnd(t, topic, opts...) {
					k := map[string]string{out: "out", late: "late"}[topic] + "/" + string(r.Key)
					got[k] = append(got[k], string(r.Value))
				}
			}
			want := map[string][]string{
				"out/p0": {
					"a1 stream=100 observed=100", "tick@200",
					"a2 stream=200 observed=120",
					// After the restart the punctuation is due 100 s
					// after the restored stream time, not after a4.
					"a3 stream=200 observed=130", "a4 stream=250 observed=250", "a5 stream=320 observed=320", "tick@320",
				},
				"out/p1":  {"b1 stream=150 observed=150", "b2 stream=150 observed=150"},
				"late/p0": {"late0", "old0"},
				"late/p1": {"late1", "old1"},
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("outputs (-want +got):\n%s", diff)
			}

			// A task moved in phase 2 (and moved back as b stopped) or
			// restarted in phase 3 ran Init with the committed times.
			mu.Lock()
			defer mu.Unlock()
			moved := 0
			var byPhase [4][]string
			for _, s := range inits {
				byPhase[s[0]-'0'] = append(byPhase[s[0]-'0'], s)
				if s[0] == '2' {
					moved++
					// p0 to b before a2, or back to a after it; p1.
					if !slices.Contains([]string{"2/p0: 200/100", "2/p0: 200/120", "2/p1: 150/150"}, s) {
						t.Errorf("Init of a moved task saw %s, want 2/p0: 200/100, 2/p0: 200/120 or 2/p1: 150/150", s)
					}
				}
			}
			if moved == 0 {
				t.Errorf("no task moved to b: Inits %v", inits)
			}
			if diff := cmp.Diff([]string{"1/p0: -1/-1", "1/p1: -1/-1"}, sorted(byPhase[1])); diff != "" {
				t.Errorf("Inits of phase 1 (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"3/p0: 200/120", "3/p1: 150/150"}, sorted(byPhase[3])); diff != "" {
				t.Errorf("Inits after the restart (-want +got):\n%s", diff)
			}
		})
	}
}

func sorted(xs []string) []string {
	return slices.Sorted(slices.Values(xs))
}

// Under exactly-once a transaction Kafka refuses is aborted and its tasks
// are rebuilt on the committed state. They resume the stream times of the
// last commit too, which the unit keeps (franz-go fetches no offsets for a
// rewind), rather than starting afresh. kfake only: it refuses one
// TxnOffsetCommit on demand.
func TestExactlyOnceRebuildResumesCommittedTimes(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "in", "out", "late"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	seeds := c.ListenAddrs()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	produce := func(v string, sec int) {
		t.Helper()
		produceAll(t, cl, []*kgo.Record{{Topic: "in", Key: []byte("k"), Value: []byte(v), Timestamp: t0.Add(time.Duration(sec) * time.Second)}})
	}
	app, err := stream.New(gateTopology("in", "out", "late", nil), stream.Brokers(seeds...), stream.AppID("rebuild-times"),
		stream.StateDir(t.TempDir()), stream.Guarantee(stream.ExactlyOnce), stream.Parallelism(1),
		stream.CommitInterval(100*time.Millisecond), stream.Logger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("run: %v", err)
			}
		})
	}
	defer stop()
	produce("a1", 100)
	produce("skip", 200)
	waitCaughtUp(t, adm, "rebuild-times", "in")

	// The next transaction's offsets are refused: it aborts, and the task
	// is rebuilt and processes a2 again.
	c.ControlKey(int16(kmsg.TxnOffsetCommit), func(r kmsg.Request) (kmsg.Response, error, bool) {
		req := r.(*kmsg.TxnOffsetCommitRequest)
		resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewTxnOffsetCommitResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, kerr.IllegalGeneration.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	produce("a2", 150)
	waitCaughtUp(t, adm, "rebuild-times", "in")
	if app.Stats().Aborts == 0 {
		t.Fatal("no transaction was aborted")
	}
	stop()

	// What the aborted transaction wrote is invisible here.
	rd, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics("out"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var got []string
	pctx, pcancel := context.WithTimeout(context.Background(), time.Minute)
	defer pcancel()
	for len(got) < 3 && pctx.Err() == nil {
		rd.PollFetches(pctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	want := []string{"a1 stream=100 observed=100", "tick@200", "a2 stream=200 observed=150"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("committed output (-want +got):\n%s", diff)
	}
}
