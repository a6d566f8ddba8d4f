// Command kgenbench is the kgen contender of kgen's benchmark: each workload
// as a topology on kgen's runtime (runtime/stream), built by hand the way
// generated code builds it. Keys and values stay []byte where the workload
// does not need their meaning; count decodes keys as strings and counts into
// an int64 store, as Kafka Streams' count does.
//
// KGENBENCH_CPUPROFILE=file and KGENBENCH_TRACE=file write a CPU profile
// and an execution trace of the run, for looking into the runtime;
// KGENBENCH_PEAKHEAP=file a heap profile taken when the heap was largest
// (checked ten times a second), for looking into peak memory.
//
// KGENBENCH_BUFFER_RECORDS=n sets stream.BufferRecords, to look into flow
// control; the harness never sets it.
//
// KGENBENCH_MAX_TASK_IDLE=d sets stream.MaxTaskIdle, to look into the
// joins' timestamp order across inputs; the harness never sets it.
//
// KGENBENCH_LOG=debug logs the runtime at debug level (info: at info level,
// which shows each task's restore and its duration), KGENBENCH_KGO_LOG=debug
// its franz-go clients too (both to stderr, which the harness keeps in the
// run's log file).
//
// Acknowledgements are observed with a franz-go hook passed through
// stream.ClientOpts; input records are counted by the first processor.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	goruntime "runtime"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kgen-dev/kgen/bench/internal/protocol"
	"github.com/kgen-dev/kgen/bench/internal/track"
	"github.com/kgen-dev/kgen/runtime/dsl"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/state/pebblestore"
	"github.com/kgen-dev/kgen/runtime/stream"
)

const name = "kgen"

func main() {
	var a protocol.Args
	var backend string
	a.Register(flag.CommandLine)
	flag.StringVar(&backend, "store", "persistent", "store backend: persistent (Pebble) or memory")
	flag.Parse()
	if a.Probe {
		// stream.New checks the options without connecting: a placeholder
		// topology is enough to learn whether the guarantee is supported.
		a.Workload, a.Source, a.Sink, a.App, a.Expect = protocol.Passthrough, "probe-in", "probe-out", "probe", 1
	}
	if err := a.Check(); err != nil {
		protocol.Fail(name, &a, err)
	}
	stopProfiles, err := profiles()
	if err != nil {
		protocol.Fail(name, &a, err)
	}
	res, err := run(&a, backend)
	stopProfiles()
	if err != nil {
		res.Error = err.Error()
		protocol.Print(os.Stdout, res)
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
	protocol.Print(os.Stdout, res)
}

// acks counts the broker's acknowledgements of sink and changelog records.
type acks struct {
	tr              *track.Tracker
	sink, changelog string
}

func (h *acks) OnProduceRecordUnbuffered(r *kgo.Record, err error) {
	if err != nil {
		return // the runtime fails the app on a produce error
	}
	switch r.Topic {
	case h.sink:
		h.tr.SinkAck()
	case h.changelog:
		h.tr.ChangelogAck()
	}
}

func run(a *protocol.Args, backend string) (protocol.Result, error) {
	res := protocol.Result{Contender: name, Workload: a.Workload, Guarantee: a.Guarantee}
	exp, _ := a.Expected()
	store := stream.StoreOptions{Changelog: true}
	desc := ""
	switch backend {
	case "persistent":
		store.Persistent = pebblestore.Opener(pebblestore.Options{})
		desc = "pebble, changelogged"
	case "memory":
		desc = "in-memory, changelogged"
	default:
		return res, fmt.Errorf("-store %q: want persistent or memory", backend)
	}
	if exp.Store != "" {
		res.Store = desc
	}
	// A restore is done when its entries are restored, whatever the
	// guarantee: it commits nothing to wait for.
	restoring := protocol.IsRestore(a.Workload)
	tr := track.New(a.Expect, exp)
	if a.Guarantee == protocol.ExactlyOnce && !restoring {
		tr = track.NewTransactional()
	}
	held := &heldCounts{byTask: map[stream.TaskID]int64{}} // entries the restored stores hold
	topo, err := topology(a, tr, store, held)
	if err != nil {
		return res, err
	}
	guarantee := stream.AtLeastOnce
	if a.Guarantee == protocol.ExactlyOnce {
		guarantee = stream.ExactlyOnce
	}
	hook := &acks{tr: tr, sink: a.Sink}
	if exp.Store != "" {
		hook.changelog = protocol.Changelog(a.App, exp.Store)
	}
	level := slog.LevelWarn
	switch os.Getenv("KGENBENCH_LOG") {
	case "debug":
		level = slog.LevelDebug
	case "info":
		level = slog.LevelInfo
	}
	var handler slog.Handler = slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})
	if protocol.IsRestore(a.Workload) {
		handler = &restoreWatch{next: handler, w: &restoreCount{tr: tr}}
	}
	clientOpts := []kgo.Opt{kgo.WithHooks(hook), kgo.ProducerBatchCompression(kgo.NoCompression())}
	if os.Getenv("KGENBENCH_KGO_LOG") == "debug" {
		clientOpts = append(clientOpts, kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelDebug, nil)))
	}
	extra := []stream.Option{}
	if v := os.Getenv("KGENBENCH_BUFFER_RECORDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return res, fmt.Errorf("KGENBENCH_BUFFER_RECORDS=%q: %w", v, err)
		}
		extra = append(extra, stream.BufferRecords(n))
	}
	if v := os.Getenv("KGENBENCH_MAX_TASK_IDLE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return res, fmt.Errorf("KGENBENCH_MAX_TASK_IDLE=%q: %w", v, err)
		}
		extra = append(extra, stream.MaxTaskIdle(d))
	}
	app, err := stream.New(topo, append([]stream.Option{
		stream.Brokers(strings.Split(a.Brokers, ",")...),
		stream.AppID(a.App),
		stream.Parallelism(a.Parallelism),
		stream.StateDir(a.StateDir),
		stream.CommitInterval(a.CommitInterval),
		// No write-back cache: every store write reaches the store and its
		// changelog, one changelog record per input, as Kafka Streams does
		// with its record cache off (the harness checks the count).
		stream.CacheRecords(0),
		stream.Guarantee(guarantee),
		stream.Logger(slog.New(handler)),
		stream.ClientOpts(clientOpts...),
	}, extra...)...)
	if err != nil {
		if guarantee == stream.ExactlyOnce {
			// The runtime refuses the guarantee: report it, not a failure.
			res.Unsupported, res.Error = true, err.Error()
			return res, nil
		}
		return res, err
	}
	if a.Probe {
		return res, nil
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- app.Run(ctx) }()
	if restoring {
		// Restored records are counted from the runtime's stats, not from
		// the "restored task" log lines: a task that moves to the other
		// unit mid-restore (the second unit joins) goes on from its store's
		// position there, and its log line counts only what it restored
		// after the move.
		go func() {
			var seen uint64
			for tick := time.NewTicker(2 * time.Millisecond); ; {
				select {
				case <-ctx.Done():
					tick.Stop()
					return
				case <-tick.C:
				}
				if n := app.Stats().Restored; n > seen {
					tr.Add(int64(n - seen))
					seen = n
				}
			}
		}()
	}
	if guarantee == stream.ExactlyOnce && !restoring {
		go func() {
			if err := track.WatchCommitted(ctx, strings.Split(a.Brokers, ","), a.App, a.Source, tr); err != nil {
				fmt.Fprintf(os.Stderr, "kgen: watch commits: %v\n", err)
			}
		}()
	}
	timeout := time.NewTimer(a.Timeout)
	defer timeout.Stop()
	select {
	case <-tr.Done():
		if restoring {
			// The restore is timed; now let every task's Init count its
			// store. Init may run a little after its task's restore (once
			// the task's committed stream times are read), so wait for it,
			// not for long: a store short of entries never gets there.
			for wait := time.Now().Add(30 * time.Second); held.Load() < a.Expect && time.Now().Before(wait); {
				time.Sleep(5 * time.Millisecond)
			}
		}
		cancel() // a clean stop: commit, flush, close the stores, leave the group
		err = <-runErr
	case err = <-runErr:
		if err == nil {
			err = errors.New("app stopped before the work was done")
		}
	case <-timeout.C:
		cancel()
		<-runErr
		err = fmt.Errorf("timed out after %v", a.Timeout)
	}
	tr.Fill(&res)
	st := app.Stats()
	// enforced: records processed past an empty input waited out (one
	// whose end no fetch reported, after FetchGrace; one at its end, after
	// MaxTaskIdle if KGENBENCH_MAX_TASK_IDLE sets one), which the joins feel.
	fmt.Fprintf(os.Stderr, "kgen stats: processed=%d skipped=%d commits=%d commit_time=%v restored=%d enforced=%d\n",
		st.Processed, st.Skipped, st.Commits, st.CommitTime, st.Restored, st.EnforcedSteps)
	want := uint64(a.Expect)
	if protocol.ProcessorForm(a.Workload) == protocol.RepartitionCount {
		want *= 2 // each record is processed once per hop
	}
	restore := protocol.IsRestore(a.Workload)
	switch {
	case err != nil:
	case restore && st.Restored != want:
		err = fmt.Errorf("runtime counted %d changelog records restored, want %d", st.Restored, want)
	case restore && held.Load() != int64(want):
		err = fmt.Errorf("the restored stores hold %d entries, want %d", held.Load(), want)
	case restore:
	case protocol.IsJoin(a.Workload) && st.Processed < want:
		// The runtime counts the second input's records too (the table's
		// rows, the right stream's records): at least the source's.
		err = fmt.Errorf("runtime counted %d records processed, want at least %d", st.Processed, want)
	case protocol.IsJoin(a.Workload):
	case guarantee == stream.AtLeastOnce && st.Processed != want:
		err = fmt.Errorf("runtime counted %d records processed, want %d", st.Processed, want)
	case guarantee == stream.ExactlyOnce && st.Processed < want:
		// An aborted transaction's records are processed again: more is fine.
		err = fmt.Errorf("runtime counted %d records processed, want at least %d", st.Processed, want)
	}
	return res, err
}

func topology(a *protocol.Args, tr *track.Tracker, store stream.StoreOptions, held *heldCounts) (*stream.Topology, error) {
	t := stream.NewTopology()
	switch a.Workload {
	case protocol.SourceOnly:
		stream.AddSource(t, "in", a.Source, serde.Bytes{}, serde.Bytes{})
		stream.AddProcessor(t, "count-records", func() stream.Processor[[]byte, []byte, []byte, []byte] {
			return stream.ProcessorFunc[[]byte, []byte, []byte, []byte](func(*stream.Context[[]byte, []byte], stream.Record[[]byte, []byte]) error {
				tr.Input()
				return nil
			})
		}, "in")
	case protocol.Passthrough:
		stream.AddSource(t, "in", a.Source, serde.Bytes{}, serde.Bytes{})
		stream.AddProcessor(t, "pass", func() stream.Processor[[]byte, []byte, []byte, []byte] {
			return stream.ProcessorFunc[[]byte, []byte, []byte, []byte](func(ctx *stream.Context[[]byte, []byte], r stream.Record[[]byte, []byte]) error {
				tr.Input()
				ctx.Forward(r)
				return nil
			})
		}, "in")
		stream.AddSink(t, "out", a.Sink, serde.Bytes{}, serde.Bytes{}, "pass")
	case protocol.KVPut:
		stream.AddSource(t, "in", a.Source, serde.Bytes{}, serde.Bytes{})
		stream.AddProcessor(t, "put", func() stream.Processor[[]byte, []byte, []byte, []byte] { return &putter{tr: tr} }, "in")
		stream.AddKeyValueStore(t, protocol.KVStore, serde.Bytes{}, serde.Bytes{}, store, "put")
	case protocol.Count:
		stream.AddSource(t, "in", a.Source, serde.String{}, serde.Bytes{})
		stream.AddProcessor(t, "count", func() stream.Processor[string, []byte, string, int64] { return &counter{tr: tr} }, "in")
		stream.AddKeyValueStore(t, protocol.CountStore, serde.String{}, serde.Int64{}, store, "count")
		stream.AddSink(t, "out", a.Sink, serde.String{}, serde.Int64{}, "count")
	case protocol.RepartitionCount:
		// Kafka Streams' groupBy(...).count(): a new key from the value,
		// through a repartition topic, counted per new key.
		stream.AddSource(t, "in", a.Source, serde.Bytes{}, serde.Bytes{})
		stream.AddProcessor(t, "group", func() stream.Processor[[]byte, []byte, string, []byte] {
			return stream.ProcessorFunc[[]byte, []byte, string, []byte](func(ctx *stream.Context[string, []byte], r stream.Record[[]byte, []byte]) error {
				tr.Input()
				ctx.Forward(stream.Record[string, []byte]{Key: protocol.Group(r.Value), Value: r.Value, Timestamp: r.Timestamp})
				return nil
			})
		}, "in")
		stream.AddRepartition(t, protocol.RepartitionName, serde.String{}, serde.Bytes{}, stream.RepartitionOptions{}, "group")
		stream.AddProcessor(t, "count", func() stream.Processor[string, []byte, string, int64] { return &counter{} }, protocol.RepartitionName)
		stream.AddKeyValueStore(t, protocol.CountStore, serde.String{}, serde.Int64{}, store, "count")
		stream.AddSink(t, "out", a.Sink, serde.String{}, serde.Int64{}, "count")
	case protocol.OpsPassthrough:
		// The operator form of passthrough: filter (every record passes),
		// then mapValues (the value itself).
		// Inputs are counted in the first function, as the processor form
		// counts them in its processor.
		stream.AddSource(t, "in", a.Source, serde.Bytes{}, serde.Bytes{})
		dsl.Filter(t, "filter", func(_, v []byte) bool { tr.Input(); return v != nil }, "in")
		dsl.MapValues(t, "map-values", func(_, v []byte) []byte { return v }, "filter")
		stream.AddSink(t, "out", a.Sink, serde.Bytes{}, serde.Bytes{}, "map-values")
	case protocol.OpsRepartitionCount:
		// The operator form of repartition-count, as kgen generate wires
		// groupBy(...).count().toStream() from a kgen.yaml.
		stream.AddSource(t, "in", a.Source, serde.Bytes{}, serde.Bytes{})
		dsl.SelectKey(t, "group", func(_, v []byte) string { tr.Input(); return protocol.Group(v) }, "in")
		stream.AddRepartition(t, protocol.RepartitionName, serde.String{}, serde.Bytes{}, stream.RepartitionOptions{}, "group")
		dsl.Count[string, []byte](t, "count", protocol.CountStore, serde.String{}, store, protocol.RepartitionName)
		dsl.ToStream[string, int64](t, "updates", "count")
		stream.AddSink(t, "out", a.Sink, serde.String{}, dsl.Nullable[int64](serde.Int64{}), "updates")
	case protocol.WindowedCount, protocol.WindowedCountFinal:
		// groupByKey().windowedBy(tumbling 1 min, grace).count().toStream(),
		// as kgen generate wires it; inputs are counted by a peek.
		opts := dsl.WindowOptions{Store: store}
		if a.Workload == protocol.WindowedCountFinal {
			opts.Emit = dsl.EmitFinal
		}
		w := dsl.TumblingWindows(protocol.WindowSize).Grace(protocol.WindowGrace)
		stream.AddSource(t, "in", a.Source, serde.String{}, serde.Bytes{})
		dsl.Peek(t, "inputs", func(string, []byte) { tr.Input() }, "in")
		dsl.WindowedCount[string, []byte](t, "count", protocol.WindowStore, w, serde.String{}, opts, "inputs")
		dsl.ToStream[dsl.Windowed[string], int64](t, "updates", "count")
		stream.AddSink(t, "out", a.Sink, dsl.WindowedKey(serde.String{}, w), dsl.Nullable[int64](serde.Int64{}), "updates")
	case protocol.StreamTableJoin:
		// stream.join(table) as kgen generate wires it: the table's rows in
		// a changelogged store (as Kafka Streams' table source without the
		// source-topic optimization), the stream's records counted by a peek
		// and joined with the row of their key. The table topic is
		// co-partitioned with the source, so both are read by one task.
		dsl.Table[string, []byte](t, "table", a.Other, serde.String{}, serde.Bytes{}, protocol.TableStore, store)
		stream.AddSource(t, "in", a.Source, serde.String{}, serde.Bytes{})
		dsl.Peek(t, "inputs", func(string, []byte) { tr.Input() }, "in")
		dsl.StreamTableJoin[string, []byte, []byte, []byte](t, "join", protocol.TableStore, protocol.JoinValue, "inputs")
		stream.AddSink(t, "out", a.Sink, serde.String{}, serde.Bytes{}, "join")
	case protocol.StreamStreamJoin:
		// stream.join(other, JoinWindows.ofTimeDifferenceWithNoGrace(1 min))
		// as kgen generate wires it: the source's records (counted by a
		// peek) on the left, the harness's right stream on the right, both
		// sides' window stores changelogged, as Kafka Streams' are.
		stream.AddSource(t, "in", a.Source, serde.String{}, serde.Bytes{})
		dsl.Peek(t, "inputs", func(string, []byte) { tr.Input() }, "in")
		stream.AddSource(t, "right", a.Other, serde.String{}, serde.Bytes{})
		dsl.JoinStreams(t, "join", dsl.JoinWindowsOf(protocol.JoinWindow), serde.String{}, serde.Bytes{}, serde.Bytes{},
			dsl.StreamJoinOptions{Store: store}, func(_ string, l, r []byte) []byte { return protocol.JoinValue(l, r) }, "inputs", "right")
		stream.AddSink(t, "out", a.Sink, serde.String{}, serde.Bytes{}, "join")
	case protocol.RestoreKV, protocol.RestoreWindow:
		// Only the store matters: it is restored before the (empty) input
		// is read. Once every store is restored and the restore timed, the
		// processor counts what its store holds, so that a restore that
		// dropped entries fails the run.
		stream.AddSource(t, "in", a.Source, serde.Bytes{}, serde.Bytes{})
		stream.AddProcessor(t, "held", func() stream.Processor[[]byte, []byte, []byte, []byte] {
			return &holdCounter{held: held, timed: tr.Done()}
		}, "in")
		if a.Workload == protocol.RestoreKV {
			stream.AddKeyValueStore(t, protocol.KVStore, serde.Bytes{}, serde.Bytes{}, store, "held")
			break
		}
		// A retention long enough for every entry: none is dropped as
		// expired, so all are written.
		stream.AddWindowStore(t, protocol.WindowStore, serde.String{}, serde.Int64{}, state.WindowStoreOptions{
			Retention: 7 * 24 * time.Hour, WindowSize: protocol.WindowSize,
		}, store, "held")
	default:
		return nil, fmt.Errorf("unknown workload %q", a.Workload)
	}
	return t, nil
}

// restoreWatch passes the runtime's log on to next and learns from it when
// restoring began (the first "restoring store"): the runtime has no restore
// listener, and its log marks the moment Kafka Streams' listener reports.
// How much is restored comes from App.Stats. Info records reach it whatever
// next's level.
type restoreWatch struct {
	next slog.Handler
	w    *restoreCount // shared by the handlers WithAttrs and WithGroup derive
}

type restoreCount struct{ tr *track.Tracker }

func (h *restoreWatch) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelInfo || h.next.Enabled(ctx, l)
}

func (h *restoreWatch) Handle(ctx context.Context, r slog.Record) error {
	switch r.Message {
	case "restoring store":
		h.w.tr.Begin()
	}
	if h.next.Enabled(ctx, r.Level) {
		return h.next.Handle(ctx, r)
	}
	return nil
}

func (h *restoreWatch) WithAttrs(as []slog.Attr) slog.Handler {
	return &restoreWatch{next: h.next.WithAttrs(as), w: h.w}
}

func (h *restoreWatch) WithGroup(name string) slog.Handler {
	return &restoreWatch{next: h.next.WithGroup(name), w: h.w}
}

// heldCounts is what each task's store holds, counted once the restore is
// timed. A task counted again (it moved to the other unit after the
// restore, when that unit joined late) replaces its count: summed, a
// store's entries counted twice failed a correct run.
type heldCounts struct {
	mu     sync.Mutex
	byTask map[stream.TaskID]int64
	total  atomic.Int64
}

func (h *heldCounts) set(task stream.TaskID, n int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if old, ok := h.byTask[task]; ok {
		fmt.Fprintf(os.Stderr, "kgen: task %v counted again (%d entries, %d before)\n", task, n, old)
	}
	h.total.Add(n - h.byTask[task])
	h.byTask[task] = n
}

// Load returns the entries counted, summed over the tasks.
func (h *heldCounts) Load() int64 { return h.total.Load() }

// holdCounter adds the number of entries its task's store holds to held
// once the restore is timed (timed is closed). Not in Init, which runs when
// its own task is restored: the unit's other tasks may still be restoring,
// and the count would hold them up inside the timed restore.
type holdCounter struct {
	held  *heldCounts
	timed <-chan struct{}
}

func (h *holdCounter) Init(ctx *stream.Context[[]byte, []byte]) error {
	var wait stream.Cancellable
	wait = ctx.Schedule(5*time.Millisecond, stream.WallClock, func(time.Time) error {
		select {
		case <-h.timed:
		default:
			return nil
		}
		wait.Cancel()
		return h.count(ctx)
	})
	return nil
}

// count records the entries of the task's store in held.
func (h *holdCounter) count(ctx *stream.Context[[]byte, []byte]) error {
	var n int64
	var err error
	switch s := ctx.Store(protocol.KVStore).(type) {
	case state.KeyValueStore[[]byte, []byte]:
		var it state.KeyValueIterator[[]byte, []byte]
		if it, err = s.All(); err == nil {
			for it.Next() {
				n++
			}
			err = errors.Join(it.Err(), it.Close())
		}
	default:
		ws, ok := ctx.Store(protocol.WindowStore).(state.WindowStore[string, int64])
		if !ok {
			return fmt.Errorf("no %s or %s store", protocol.KVStore, protocol.WindowStore)
		}
		var it state.WindowIterator[string, int64]
		if it, err = ws.All(); err == nil {
			for it.Next() {
				n++
			}
			err = errors.Join(it.Err(), it.Close())
		}
	}
	h.held.set(ctx.TaskID(), n)
	return err
}

func (h *holdCounter) Process(*stream.Context[[]byte, []byte], stream.Record[[]byte, []byte]) error {
	return nil
}

// putter writes every record into the kv store.
type putter struct {
	tr    *track.Tracker
	store state.KeyValueStore[[]byte, []byte]
}

func (p *putter) Init(ctx *stream.Context[[]byte, []byte]) (err error) {
	p.store, err = stream.GetKeyValueStore[[]byte, []byte](ctx, protocol.KVStore)
	return err
}

func (p *putter) Process(_ *stream.Context[[]byte, []byte], r stream.Record[[]byte, []byte]) error {
	p.tr.Input()
	return p.store.Put(r.Key, r.Value)
}

// counter counts records per key and forwards each new count; with a
// tracker, it counts its inputs as the workload's.
type counter struct {
	tr    *track.Tracker
	store state.KeyValueStore[string, int64]
}

func (c *counter) Init(ctx *stream.Context[string, int64]) (err error) {
	c.store, err = stream.GetKeyValueStore[string, int64](ctx, protocol.CountStore)
	return err
}

func (c *counter) Process(ctx *stream.Context[string, int64], r stream.Record[string, []byte]) error {
	if c.tr != nil {
		c.tr.Input()
	}
	n, _, err := c.store.Get(r.Key)
	if err != nil {
		return err
	}
	n++
	if err := c.store.Put(r.Key, n); err != nil {
		return err
	}
	ctx.Forward(stream.Record[string, int64]{Key: r.Key, Value: n, Timestamp: r.Timestamp})
	return nil
}

// profiles starts the CPU profile and execution trace the environment asks
// for, and returns what stops them.
func profiles() (func(), error) {
	var stops []func()
	stop := func() {
		for _, f := range stops {
			f()
		}
	}
	if path := os.Getenv("KGENBENCH_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return stop, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return stop, err
		}
		stops = append(stops, func() { pprof.StopCPUProfile(); f.Close() })
	}
	if path := os.Getenv("KGENBENCH_PEAKHEAP"); path != "" {
		done := make(chan struct{})
		finished := make(chan struct{})
		go func() {
			defer close(finished)
			watchPeakHeap(path, done)
		}()
		stops = append(stops, func() { close(done); <-finished })
	}
	if path := os.Getenv("KGENBENCH_TRACE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return stop, err
		}
		if err := trace.Start(f); err != nil {
			return stop, err
		}
		stops = append(stops, func() { trace.Stop(); f.Close() })
	}
	return stop, nil
}

// watchPeakHeap writes a heap profile to path each time the heap in use has
// grown by a tenth over the largest seen, until done is closed.
func watchPeakHeap(path string, done <-chan struct{}) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var peak uint64
	for {
		select {
		case <-done:
			return
		case <-tick.C:
		}
		var ms goruntime.MemStats
		goruntime.ReadMemStats(&ms)
		if ms.HeapInuse <= peak+peak/10 {
			continue
		}
		peak = ms.HeapInuse
		f, err := os.Create(path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "kgenbench: peak heap profile: %v\n", err)
			return
		}
		goruntime.GC() // the profile's in-use figures are as of the last GC
		err = pprof.Lookup("heap").WriteTo(f, 0)
		f.Close()
		if err != nil {
			fmt.Fprintf(os.Stderr, "kgenbench: peak heap profile: %v\n", err)
			return
		}
		fmt.Fprintf(os.Stderr, "kgenbench: heap in use %d MiB (sys %d MiB): profile written\n", ms.HeapInuse>>20, ms.Sys>>20)
	}
}
