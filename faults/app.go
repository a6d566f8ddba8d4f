package faults

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/state/pebblestore"
	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/twmb/franz-go/pkg/kgo"
)

// StoreName is the name of the app's aggregate store; its changelog topic is
// <app id>-aggregates-changelog.
const StoreName = "aggregates"

// tagged is what the stateless stage forwards: the decoded input with the
// coordinates it was read from.
type tagged struct {
	Input
	Partition int32
	Offset    int64
}

// Topology returns the app under test: source in -> tag (stateless: decodes
// the value and tags it with its input partition and offset) -> aggregate
// (stateful: per key count, sum, min and max in a changelogged Pebble store)
// -> sink out, one output record per input record.
func Topology(in, out string) *stream.Topology {
	t := stream.NewTopology()
	stream.AddSource(t, "in", in, serde.String{}, serde.Bytes{})
	stream.AddProcessor(t, "tag", func() stream.Processor[string, []byte, string, tagged] {
		return stream.ProcessorFunc[string, []byte, string, tagged](tag)
	}, "in")
	stream.AddProcessor(t, "aggregate", func() stream.Processor[string, tagged, string, Output] {
		return &aggregator{}
	}, "tag")
	stream.AddKeyValueStore(t, StoreName, serde.String{}, aggregateSerde{},
		stream.StoreOptions{Persistent: pebblestore.Opener(pebblestore.Options{CacheSize: 8 << 20}), Changelog: true}, "aggregate")
	stream.AddSink(t, "out", out, serde.String{}, outputSerde{}, "aggregate")
	return t
}

func tag(ctx *stream.Context[string, tagged], r stream.Record[string, []byte]) error {
	in, err := DecodeInput(r.Value)
	if err != nil {
		return err
	}
	ctx.Forward(stream.Record[string, tagged]{
		Key:       r.Key,
		Value:     tagged{Input: in, Partition: ctx.Partition(), Offset: ctx.Offset()},
		Timestamp: r.Timestamp,
	})
	return nil
}

type aggregator struct {
	store state.KeyValueStore[string, Aggregate]
}

func (a *aggregator) Init(ctx *stream.Context[string, Output]) (err error) {
	a.store, err = stream.GetKeyValueStore[string, Aggregate](ctx, StoreName)
	return err
}

func (a *aggregator) Process(ctx *stream.Context[string, Output], r stream.Record[string, tagged]) error {
	agg, _, err := a.store.Get(r.Key)
	if err != nil {
		return fmt.Errorf("get aggregate of key %q: %w", r.Key, err)
	}
	agg = agg.Add(r.Value.Value)
	if err := a.store.Put(r.Key, agg); err != nil {
		return fmt.Errorf("put aggregate of key %q: %w", r.Key, err)
	}
	ctx.Forward(stream.Record[string, Output]{
		Key:       r.Key,
		Value:     Output{Seq: r.Value.Seq, Aggregate: agg, Partition: r.Value.Partition, Offset: r.Value.Offset},
		Timestamp: r.Timestamp,
	})
	return nil
}

// AppConfig configures one instance of the app under test.
type AppConfig struct {
	Brokers        []string
	AppID          string
	Input, Output  string
	StateDir       string
	InstanceID     string
	Guarantee      stream.GuaranteeKind
	CommitInterval time.Duration // 0: the runtime's default for the guarantee
	Parallelism    int
	SessionTimeout time.Duration // 0: franz-go's default
	Standbys       int           // standby replicas of every task (stream.StandbyReplicas)
	Logger         *slog.Logger
	// ClientLog, when set, receives franz-go's own log lines (group joins,
	// heartbeats, retries) at ClientLogLevel.
	ClientLog      io.Writer
	ClientLogLevel kgo.LogLevel
}

// RunApp runs one instance of the app under test until ctx ends.
func RunApp(ctx context.Context, c AppConfig) error {
	app, err := newApp(c)
	if err != nil {
		return err
	}
	if err := app.Run(ctx); err != nil {
		return fmt.Errorf("faults app %s: %w", c.InstanceID, err)
	}
	return nil
}

// ResetApp resets the application from this instance (stream.App.Reset):
// its internal topics deleted, its input offsets moved to the earliest and
// this instance's state directory wiped.
func ResetApp(ctx context.Context, c AppConfig) error {
	app, err := newApp(c)
	if err != nil {
		return err
	}
	if err := app.Reset(ctx, stream.ResetOptions{}); err != nil {
		return fmt.Errorf("faults app %s: %w", c.InstanceID, err)
	}
	return nil
}

func newApp(c AppConfig) (*stream.App, error) {
	opts := []stream.Option{
		stream.Brokers(c.Brokers...),
		stream.AppID(c.AppID),
		stream.StateDir(c.StateDir),
		stream.InstanceID(c.InstanceID),
		stream.Guarantee(c.Guarantee),
		stream.Parallelism(max(c.Parallelism, 1)),
	}
	if c.Standbys > 0 {
		opts = append(opts, stream.StandbyReplicas(c.Standbys))
	}
	if c.CommitInterval > 0 {
		opts = append(opts, stream.CommitInterval(c.CommitInterval))
	}
	if c.SessionTimeout > 0 {
		opts = append(opts, stream.ClientOpts(kgo.SessionTimeout(c.SessionTimeout)))
	}
	if c.Logger != nil {
		opts = append(opts, stream.Logger(c.Logger))
	}
	if c.ClientLog != nil && c.ClientLogLevel != kgo.LogLevelNone {
		prefix := func() string { return time.Now().UTC().Format("15:04:05.000 ") + "kgo " + c.InstanceID + " " }
		opts = append(opts, stream.ClientOpts(kgo.WithLogger(kgo.BasicLogger(c.ClientLog, c.ClientLogLevel, prefix))))
	}
	app, err := stream.New(Topology(c.Input, c.Output), opts...)
	if err != nil {
		return nil, fmt.Errorf("faults app %s: %w", c.InstanceID, err)
	}
	return app, nil
}

// ParseGuarantee reads "at-least-once" or "exactly-once".
func ParseGuarantee(s string) (stream.GuaranteeKind, error) {
	switch s {
	case stream.AtLeastOnce.String():
		return stream.AtLeastOnce, nil
	case stream.ExactlyOnce.String():
		return stream.ExactlyOnce, nil
	}
	return 0, fmt.Errorf("unknown guarantee %q: want %s or %s", s, stream.AtLeastOnce, stream.ExactlyOnce)
}
