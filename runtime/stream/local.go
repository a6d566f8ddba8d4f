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

// LocalDriver runs a topology in-process with no broker, partitioned like
// production: each topic has a partition count (Partitions, or
// TopicPartitions for one topic), there is one task per sub-topology and
// partition, a piped record goes to the partition of its key (murmur2, as the
// sinks choose), and a sink's output to a topic the topology reads (a
// repartition topic, or any other) is routed to the task of its partition.
// Each piped record is processed at once with everything it causes (depth
// first, exactly as a task would); outputs are collected per topic; and
// wall-clock time moves only when told. It is deterministic;
// runtime/streamtest wraps it with types.
type LocalDriver struct {
	topo       *Topology
	cfg        config
	now        time.Time
	tasks      []*task
	inputs     map[string][]input // by topic, then partition
	taskOf     map[input]*task
	counts     map[string]int32 // partition count of every topic the topology touches
	defaultN   int32
	outputs    map[string][]*kgo.Record
	offsets    map[string]map[int32]int64
	changes    map[string][]*kgo.Record
	pending    []*kgo.Record
	roundRobin int32
	// globals are the global tables by name and by topic: Pipe to a
	// global topic updates its table at once.
	globals       map[string]*globalStore
	globalByTopic map[string]*globalStore
	globalCounts  globalCounters
}

// LocalConfig configures a LocalDriver.
type LocalConfig struct {
	AppID     string    // default "test"
	StartTime time.Time // initial wall-clock time; default 2026-01-01T00:00:00Z
	Logger    *slog.Logger
	// OnProcessError and OnDeserializeError default to Fail, as in an App.
	OnProcessError     ErrorPolicy
	OnDeserializeError ErrorPolicy
	// Partitions is every topic's partition count; default 1. A mistake that
	// only shows with several partitions (state kept per key in a task that
	// does not get every record of the key) needs more than one.
	Partitions int32
	// TopicPartitions overrides Partitions for some topics. Repartition
	// topics take Kafka Streams' rule, as in an App, unless given a count.
	TopicPartitions map[string]int32
}

// NewLocalDriver validates t and instantiates one task per sub-topology and
// partition.
func NewLocalDriver(t *Topology, lc LocalConfig) (*LocalDriver, error) {
	appID := lc.AppID
	if appID == "" {
		appID = "test"
	}
	t, err := t.forApp(appID)
	if err != nil {
		return nil, err
	}
	if lc.Partitions < 0 {
		return nil, fmt.Errorf("local driver: Partitions %d: must not be negative", lc.Partitions)
	}
	d := &LocalDriver{
		topo: t, cfg: defaultConfig(), now: lc.StartTime, defaultN: max(lc.Partitions, 1),
		inputs: map[string][]input{}, taskOf: map[input]*task{}, outputs: map[string][]*kgo.Record{},
		offsets: map[string]map[int32]int64{}, changes: map[string][]*kgo.Record{}, counts: map[string]int32{},
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
	for topic, n := range lc.TopicPartitions {
		if n < 1 {
			return nil, fmt.Errorf("local driver: topic %q: %d partitions", topic, n)
		}
		d.counts[topic] = n
	}
	for _, topic := range append(t.SourceTopics(), t.SinkTopics()...) {
		if _, ok := d.counts[topic]; !ok && !t.isRepartitionTopic(topic) {
			d.counts[topic] = d.defaultN
		}
	}
	for _, r := range t.repartitions {
		if topic := t.nodes[r.source].topic; r.partitions > 0 && lc.TopicPartitions[topic] == 0 {
			d.counts[topic] = r.partitions
		}
	}
	if err := t.repartitionPartitions(d.counts); err != nil {
		return nil, err
	}
	d.globals, d.globalByTopic = map[string]*globalStore{}, map[string]*globalStore{}
	for _, name := range t.globalOrder {
		g := newGlobalStore(t.globals[name], state.NewMemoryWide())
		d.globals[name], d.globalByTopic[g.def.topic] = g, g
	}
	for _, s := range t.subs {
		n := d.counts[s.topics[0]]
		for _, topic := range s.topics {
			if d.counts[topic] != n {
				return nil, fmt.Errorf("local driver: sub-topology %d reads co-partitioned topics with different partition counts (%q has %d, %q has %d)",
					s.id, s.topics[0], n, topic, d.counts[topic])
			}
		}
		for p := range n {
			tk, err := newTask(TaskID{Subtopology: s.id, Partition: p}, t, d)
			if err != nil {
				d.Close()
				return nil, err
			}
			d.tasks = append(d.tasks, tk)
			for _, in := range tk.inputs {
				if d.inputs[in.topic()] == nil {
					d.inputs[in.topic()] = make([]input, n)
				}
				d.inputs[in.topic()][p] = in
				d.taskOf[in] = tk
			}
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

func (d *LocalDriver) global(name string) *globalStore { return d.globals[name] }

// GlobalTable returns the typed reader of the global table named name (a
// *GlobalTable of its key and value types, as GetGlobalTable gives a
// processor), or nil.
func (d *LocalDriver) GlobalTable(name string) any {
	if g := d.globals[name]; g != nil {
		return g.reader
	}
	return nil
}

// pipeGlobal applies one record of a global topic to its table, as the
// App's updater would: at once, before whatever is piped next.
func (d *LocalDriver) pipeGlobal(r *kgo.Record) error {
	batches, err := collectGlobal(d.globalByTopic, []*kgo.Record{r}, d, &d.globalCounts, nil)
	if err != nil {
		return err
	}
	for g, b := range batches {
		if err := g.apply(b); err != nil {
			return err
		}
		d.globalCounts.applied.Add(uint64(len(b)))
	}
	return nil
}

func (d *LocalDriver) partitions(topic string) int32 {
	if n, ok := d.counts[topic]; ok {
		return n
	}
	return d.defaultN // a dead-letter topic, say
}

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
	d.produce(deadLetter(topic, d.partitions(topic), localMaxRecordBytes-batchOverhead, in, node, cause))
}

func (d *LocalDriver) produce(r *kgo.Record) {
	if d.offsets[r.Topic] == nil {
		d.offsets[r.Topic] = map[int32]int64{}
	}
	r.Offset = d.offsets[r.Topic][r.Partition]
	d.offsets[r.Topic][r.Partition]++
	d.outputs[r.Topic] = append(d.outputs[r.Topic], r)
	// A sink topic that the topology reads feeds it, as on a broker.
	if _, ok := d.inputs[r.Topic]; ok {
		d.pending = append(d.pending, r)
	}
}

func (d *LocalDriver) logChange(s *taskStore, key, value []byte, timestamp int64) {
	r := &kgo.Record{Topic: s.changelog, Partition: s.partition, Key: key, Value: value, Timestamp: changelogTime(timestamp), Offset: int64(len(d.changes[s.changelog]))}
	d.changes[s.changelog] = append(d.changes[s.changelog], r)
	s.produced.observe(r.Offset + 1)
}

// Pipe feeds one raw record into topic and processes it, with everything it
// causes downstream. A record of a global table's topic updates the table
// at once (a null key is dropped, a null value deletes). The record goes to the partition of its key, as a
// Kafka producer would place it (a null key: round-robin). The error is the
// record's failure under the driver's error policy (Fail by default).
func (d *LocalDriver) Pipe(topic string, key, value []byte, headers []Header, ts time.Time) error {
	if _, ok := d.globalByTopic[topic]; ok {
		if d.offsets[topic] == nil {
			d.offsets[topic] = map[int32]int64{}
		}
		p := int32(0)
		if n := d.partitions(topic); key != nil {
			p = KafkaPartition(key, n)
		}
		r := &kgo.Record{Topic: topic, Partition: p, Key: key, Value: value, Headers: headers, Timestamp: ts, Offset: d.offsets[topic][p]}
		d.offsets[topic][p]++
		return d.pipeGlobal(r)
	}
	parts, ok := d.inputs[topic]
	if !ok {
		return fmt.Errorf("pipe: topic %q is not a source of the topology", topic)
	}
	n := int32(len(parts))
	p := int32(0)
	if key != nil {
		p = KafkaPartition(key, n)
	} else {
		p = d.roundRobin % n
		d.roundRobin++
	}
	if d.offsets[topic] == nil {
		d.offsets[topic] = map[int32]int64{}
	}
	r := &kgo.Record{Topic: topic, Partition: p, Key: key, Value: value, Headers: headers, Timestamp: ts, Offset: d.offsets[topic][p]}
	d.offsets[topic][p]++
	d.pending = append(d.pending, r)
	return d.drain()
}

func (d *LocalDriver) drain() error {
	for len(d.pending) > 0 {
		r := d.pending[0]
		d.pending = d.pending[1:]
		in := d.inputs[r.Topic][r.Partition]
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

// Dropped counts the records dropped so far, by reason, over every task
// (see DropReason); only reasons that happened are present.
func (d *LocalDriver) Dropped() map[DropReason]uint64 {
	out := map[DropReason]uint64{}
	for _, tk := range d.tasks {
		addDropped(&out, tk.dropped)
	}
	if n := d.globalCounts.nullKeys.Load(); n > 0 {
		addDropped(&out, map[DropReason]uint64{DropNullKey: n})
	}
	return out
}

// Now is the driver's wall-clock time.
func (d *LocalDriver) Now() time.Time { return d.now }

// Output removes and returns the records written to topic so far, in the
// order they were produced (each carries its partition and offset).
func (d *LocalDriver) Output(topic string) []*kgo.Record {
	out := d.outputs[topic]
	delete(d.outputs, topic)
	return out
}

// Changelog returns the records written to a store's changelog so far, all
// partitions, in the order they were written.
func (d *LocalDriver) Changelog(store string) []*kgo.Record {
	return d.changes[changelogTopic(d.cfg.appID, store)]
}

// Store returns the typed store handle named name of partition 0's task (as
// GetKeyValueStore would give a processor), or nil; StoreAt gives another
// partition's.
func (d *LocalDriver) Store(name string) any { return d.StoreAt(name, 0) }

// StoreAt returns the typed store handle named name of the task of
// partition p, or nil.
func (d *LocalDriver) StoreAt(name string, p int32) any {
	for _, tk := range d.tasks {
		if s := tk.sm.stores[name]; s != nil && tk.id.Partition == p {
			return s.typed
		}
	}
	return nil
}

// StorePartitions is how many tasks (partitions) hold a store named name.
func (d *LocalDriver) StorePartitions(name string) int32 {
	var n int32
	for _, tk := range d.tasks {
		if tk.sm.stores[name] != nil {
			n++
		}
	}
	return n
}

// StoreBackend returns the byte-level backend of a store of partition 0's
// task, or nil.
func (d *LocalDriver) StoreBackend(name string) state.Backend {
	for _, tk := range d.tasks {
		if s := tk.sm.stores[name]; s != nil && tk.id.Partition == 0 {
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
