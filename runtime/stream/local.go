package stream

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/twmb/franz-go/pkg/kgo"
)

// LocalDriver runs a topology in-process with no broker: every topic has one
// partition, each piped record is processed at once (depth first, exactly as
// a task would), outputs are collected per topic, and wall-clock time moves
// only when told. It is deterministic; runtime/streamtest wraps it with types.
type LocalDriver struct {
	topo    *Topology
	cfg     config
	now     time.Time
	tasks   []*task
	inputs  map[string]input
	taskOf  map[input]*task
	outputs map[string][]*kgo.Record
	offsets map[string]int64
	changes map[string][]*kgo.Record
	pending []*kgo.Record
}

// LocalConfig configures a LocalDriver.
type LocalConfig struct {
	AppID     string    // default "test"
	StartTime time.Time // initial wall-clock time; default 2026-01-01T00:00:00Z
	Logger    *slog.Logger
	// OnProcessError and OnDeserializeError default to Fail, as in an App.
	OnProcessError     ErrorPolicy
	OnDeserializeError ErrorPolicy
}

// NewLocalDriver validates t and instantiates one task per sub-topology.
func NewLocalDriver(t *Topology, lc LocalConfig) (*LocalDriver, error) {
	appID := lc.AppID
	if appID == "" {
		appID = "test"
	}
	t, err := t.forApp(appID)
	if err != nil {
		return nil, err
	}
	d := &LocalDriver{
		topo: t, cfg: defaultConfig(), now: lc.StartTime,
		inputs: map[string]input{}, taskOf: map[input]*task{}, outputs: map[string][]*kgo.Record{},
		offsets: map[string]int64{}, changes: map[string][]*kgo.Record{},
	}
	if d.now.IsZero() {
		d.now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	d.cfg.appID = appID
	d.cfg.maxTaskIdle = -1
	// Local tasks keep every store in memory: nothing touches the disk.
	d.cfg.memoryStores = true
	// Every write reaches the store's changelog at once, so tests see each.
	d.cfg.cacheRecords = 0
	d.cfg.now = func() time.Time { return d.now }
	d.cfg.logger = lc.Logger
	if d.cfg.logger == nil {
		d.cfg.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	d.cfg.onProcessError, d.cfg.onDeserializeError = lc.OnProcessError, lc.OnDeserializeError
	for _, s := range t.subs {
		tk, err := newTask(TaskID{Subtopology: s.id}, t, d)
		if err != nil {
			d.Close()
			return nil, err
		}
		d.tasks = append(d.tasks, tk)
		for _, in := range tk.inputs {
			d.inputs[in.topic()] = in
			d.taskOf[in] = tk
		}
	}
	for _, tk := range d.tasks {
		if err := tk.initProcessors(); err != nil {
			d.Close()
			return nil, err
		}
	}
	return d, nil
}

func (d *LocalDriver) config() *config { return &d.cfg }

func (d *LocalDriver) partitions(string) int32 { return 1 }

// localMaxRecordBytes is the producer's default limit (franz-go's
// ProducerBatchMaxBytes), so the driver refuses what an App would.
const localMaxRecordBytes = 1_000_012

func (d *LocalDriver) send(t *task, o *outRecord) {
	if size := recordSize(&o.rec); size > localMaxRecordBytes {
		t.outputFailed(o, tooLarge(size, localMaxRecordBytes))
		return
	}
	d.produce(&o.rec)
}

func (d *LocalDriver) deadLetter(topic string, in *kgo.Record, node string, cause error) {
	c := collector{partitions: d.partitions}
	d.produce(c.deadLetter(topic, in, node, cause))
}

func (d *LocalDriver) produce(r *kgo.Record) {
	r.Offset = d.offsets[r.Topic]
	d.offsets[r.Topic]++
	d.outputs[r.Topic] = append(d.outputs[r.Topic], r)
	// A sink topic that another sub-topology reads feeds it, as on a broker.
	if _, ok := d.inputs[r.Topic]; ok {
		d.pending = append(d.pending, r)
	}
}

func (d *LocalDriver) logChange(s *taskStore, key, value []byte) {
	r := &kgo.Record{Topic: s.changelog, Key: key, Value: value, Offset: int64(len(d.changes[s.changelog]))}
	d.changes[s.changelog] = append(d.changes[s.changelog], r)
	s.produced.observe(r.Offset + 1)
}

// Pipe feeds one raw record into topic and processes it, with everything it
// causes downstream. The error is the record's failure under the driver's
// error policy (Fail by default).
func (d *LocalDriver) Pipe(topic string, key, value []byte, headers []Header, ts time.Time) error {
	if _, ok := d.inputs[topic]; !ok {
		return fmt.Errorf("pipe: topic %q is not a source of the topology", topic)
	}
	r := &kgo.Record{Topic: topic, Key: key, Value: value, Headers: headers, Timestamp: ts, Offset: d.offsets[topic]}
	d.offsets[topic]++
	d.pending = append(d.pending, r)
	return d.drain()
}

func (d *LocalDriver) drain() error {
	for len(d.pending) > 0 {
		r := d.pending[0]
		d.pending = d.pending[1:]
		in := d.inputs[r.Topic]
		in.push([]*kgo.Record{r})
		if _, err := d.taskOf[in].process(1<<30, d.now); err != nil {
			// The failed record is reported, and done: a record that did
			// not deserialize is still at the head, and would fail every
			// later Pipe. What it or its batch would have caused is dropped.
			var rerr *RecordError
			if errors.As(err, &rerr) && rerr.Deserialize && in.buffered() > 0 && in.head() == r {
				in.pop()
			}
			d.pending = d.pending[:0]
			return err
		}
	}
	return nil
}

// AdvanceWallClock moves wall-clock time forward and fires the wall-clock
// punctuations that come due.
func (d *LocalDriver) AdvanceWallClock(dur time.Duration) error {
	if dur < 0 {
		return errors.New("advance wall clock: negative duration")
	}
	d.now = d.now.Add(dur)
	for _, tk := range d.tasks {
		if err := tk.punctuate(WallClock, d.now.UnixMilli()); err != nil {
			return err
		}
	}
	return d.drain()
}

// Now is the driver's wall-clock time.
func (d *LocalDriver) Now() time.Time { return d.now }

// Output removes and returns the records written to topic so far.
func (d *LocalDriver) Output(topic string) []*kgo.Record {
	out := d.outputs[topic]
	delete(d.outputs, topic)
	return out
}

// Changelog returns the records written to a store's changelog so far.
func (d *LocalDriver) Changelog(store string) []*kgo.Record {
	return d.changes[changelogTopic(d.cfg.appID, store)]
}

// Store returns the typed store handle named name (as GetKeyValueStore
// would give a processor), or nil.
func (d *LocalDriver) Store(name string) any {
	for _, tk := range d.tasks {
		if s := tk.sm.stores[name]; s != nil {
			return s.typed
		}
	}
	return nil
}

// StoreBackend returns the byte-level backend of a store, or nil.
func (d *LocalDriver) StoreBackend(name string) state.Backend {
	for _, tk := range d.tasks {
		if s := tk.sm.stores[name]; s != nil {
			return s.backend
		}
	}
	return nil
}

// Close closes processors and stores.
func (d *LocalDriver) Close() error {
	var errs []error
	for _, tk := range d.tasks {
		errs = append(errs, tk.close(false))
	}
	d.tasks = nil
	return errors.Join(errs...)
}

// Describe describes the topology as the driver runs it, with the topic
// names of its repartition steps.
func (d *LocalDriver) Describe() string { return d.topo.Describe() }
