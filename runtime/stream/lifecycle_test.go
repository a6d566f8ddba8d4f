package stream_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A record the producer cannot deliver fails the app with the cause: it is
// never dropped silently, and the offsets after it are not committed.
func TestProduceErrorFailsTheApp(t *testing.T) {
	c := kafkatest.New(t)
	in, out := c.CreateTopic(t, 1, nil), c.CreateTopic(t, 1, nil)
	produceAll(t, c.Client(t), []*kgo.Record{{Topic: in, Value: []byte("small")}, {Topic: in, Value: []byte("big")}})
	topo := stream.NewTopology()
	stream.AddSource(topo, "in", in, serde.Bytes{}, serde.String{})
	stream.AddProcessor(topo, "inflate", func() stream.Processor[[]byte, string, []byte, string] {
		return stream.ProcessorFunc[[]byte, string, []byte, string](func(ctx *stream.Context[[]byte, string], r stream.Record[[]byte, string]) error {
			if r.Value == "big" {
				r.Value = strings.Repeat("x", 2<<20) // past the producer's 1 MiB batch limit
			}
			ctx.Forward(r)
			return nil
		})
	}, "in")
	stream.AddSink(topo, "out", out, serde.Bytes{}, serde.String{}, "inflate")
	var states []stream.State
	var mu sync.Mutex
	_, err := runApp(t, topo, stream.Brokers(c.Seeds()...), stream.AppID("big-"+in), stream.Parallelism(1),
		stream.Logger(testLogger(t)), stream.ExitWhenCaughtUp(),
		stream.OnStateChange(func(_, to stream.State) { mu.Lock(); states = append(states, to); mu.Unlock() }))
	var perr *stream.ProduceError
	if !errors.As(err, &perr) || perr.Topic != out || perr.SourceTopic != in || perr.SourceOffset != 1 || !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("Run error = %v, want a produce failure to %s of input %s/0@1 wrapping MESSAGE_TOO_LARGE", err, out, in)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(states) == 0 || states[len(states)-1] != stream.Failed {
		t.Fatalf("state changes %v, want the last to be failed", states)
	}
	offs, ferr := c.Admin(t).FetchOffsets(context.Background(), "big-"+in)
	if ferr != nil {
		t.Fatal(ferr)
	}
	if o, ok := offs.Lookup(in, 0); ok && o.At > 1 {
		t.Fatalf("committed offset %d: the undelivered record was committed as done", o.At)
	}
}

// Wall-clock punctuation fires in a running app whether records arrive or not.
func TestWallClockPunctuationInApp(t *testing.T) {
	c := kafkatest.New(t)
	in, out := c.CreateTopic(t, 2, nil), c.CreateTopic(t, 1, nil)
	var mu sync.Mutex
	ticks := map[int32]int{}
	topo := stream.NewTopology()
	stream.AddSource(topo, "in", in, serde.String{}, serde.String{})
	stream.AddProcessor(topo, "tick", func() stream.Processor[string, string, string, string] {
		return &ticker{mu: &mu, ticks: ticks}
	}, "in")
	stream.AddSink(topo, "out", out, serde.String{}, serde.String{}, "tick")
	app, err := stream.New(topo, stream.Brokers(c.Seeds()...), stream.AppID("tick-"+in), stream.Parallelism(1), stream.Logger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		ok := ticks[0] >= 3 && ticks[1] >= 3
		mu.Unlock()
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("punctuations per partition after 30 s: %v, want 3 each with no input at all", ticks)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := app.Stats().Punctuations; got < 6 {
		t.Fatalf("Stats().Punctuations = %d, want at least 6", got)
	}
}

type ticker struct {
	mu    *sync.Mutex
	ticks map[int32]int
}

func (p *ticker) Init(ctx *stream.Context[string, string]) error {
	part := ctx.TaskID().Partition
	ctx.Schedule(50*time.Millisecond, stream.WallClock, func(now time.Time) error {
		p.mu.Lock()
		p.ticks[part]++
		p.mu.Unlock()
		return nil
	})
	return nil
}

func (p *ticker) Process(ctx *stream.Context[string, string], r stream.Record[string, string]) error {
	return nil
}

type badInit struct{ panics bool }

func (b badInit) Init(ctx *stream.Context[string, string]) error {
	if b.panics {
		panic("init exploded")
	}
	return errors.New("no config")
}

func (badInit) Process(ctx *stream.Context[string, string], r stream.Record[string, string]) error {
	return nil
}

func TestInitFailuresNameTheProcessor(t *testing.T) {
	for _, tc := range []struct {
		panics bool
		want   string
	}{
		{false, `init processor "p": no config`},
		{true, `init processor "p": panic: init exploded`},
	} {
		topo := stream.NewTopology()
		stream.AddSource(topo, "in", "in", serde.String{}, serde.String{})
		stream.AddProcessor(topo, "p", func() stream.Processor[string, string, string, string] { return badInit{tc.panics} }, "in")
		stream.AddSink(topo, "out", "out", serde.String{}, serde.String{}, "p")
		_, err := stream.NewLocalDriver(topo, stream.LocalConfig{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewLocalDriver error = %v, want it to contain %q", err, tc.want)
		}
	}
}
