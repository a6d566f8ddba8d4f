package stream

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
)

// globalDef is a global table of the topology: a store holding every
// partition of its topic, on every instance (Kafka Streams' GlobalKTable).
type globalDef struct {
	name, topic      string
	opts             StoreOptions
	keyType, valType reflect.Type
	// check decodes a record of the topic as a reader would, so that a
	// record that cannot be decoded meets the deserialization policy when
	// it arrives, not at every lookup.
	check func(key, value []byte) error
	// reader types the shared store for the processors that read it.
	reader func(g *globalStore) any
}

// AddGlobalTable adds a global table named name: every partition of topic,
// read into one store that every task of the application reads, whatever
// partition it processes (Kafka Streams' GlobalKTable). The topic needs no
// co-partitioning with anything. Before any task processes a record, the
// table is filled to the topic's end offsets; it is then kept up to date
// while the application runs. It has no changelog: it is restored from its
// topic, from the offsets checkpointed beside it when opts.Persistent is set
// (else from the topic's start, as an in-memory store loses everything on
// restart). A record with a null key is dropped (DropNullKey); a null value
// deletes the key. A record that cannot be decoded meets the app's
// OnDeserializeError policy. Processors read it with GetGlobalTable, without
// connecting it; opts.Changelog must be false.
func AddGlobalTable[K, V any](t *Topology, name, topic string, ks serde.Serde[K], vs serde.Serde[V], opts StoreOptions) {
	t.validated = false
	switch {
	case name == "":
		t.errorf("global table with an empty name")
		return
	case topic == "":
		t.errorf("global table %q: empty topic", name)
		return
	case opts.Changelog:
		t.errorf("global table %q: a global table is restored from its topic and has no changelog", name)
		return
	}
	if _, dup := t.stores[name]; dup {
		t.errorf("duplicate store name %q (a store and a global table)", name)
		return
	}
	if _, dup := t.globals[name]; dup {
		t.errorf("duplicate global table name %q", name)
		return
	}
	if t.globals == nil {
		t.globals = map[string]*globalDef{}
	}
	// A load checks every record: decoding what cannot fail (a string
	// copy for each key) is skipped.
	keyAny, valueAny := decodesAnything(ks), decodesAnything(vs)
	t.globals[name] = &globalDef{
		name: name, topic: topic, opts: opts,
		keyType: reflect.TypeFor[K](), valType: reflect.TypeFor[V](),
		check: func(key, value []byte) error {
			if !keyAny {
				if _, err := ks.Deserialize(key); err != nil {
					return fmt.Errorf("key: %w", err)
				}
			}
			if value == nil || valueAny {
				return nil // a tombstone, or nothing that can fail
			}
			if _, err := vs.Deserialize(value); err != nil {
				return fmt.Errorf("value: %w", err)
			}
			return nil
		},
		reader: func(g *globalStore) any { return &GlobalTable[K, V]{s: g, ks: ks, vs: vs} },
	}
	t.globalOrder = append(t.globalOrder, name)
}

// decodesAnything tells whether s decodes any bytes without an error.
func decodesAnything(s any) bool {
	switch s.(type) {
	case serde.String, serde.Bytes:
		return true
	}
	return false
}

// GlobalTopics returns the topics of the topology's global tables, in the
// order the tables were added.
func (t *Topology) GlobalTopics() []string {
	var topics []string
	for _, name := range t.globalOrder {
		topics = append(topics, t.globals[name].topic)
	}
	return topics
}

// validateGlobals reports global tables whose topic a source also reads (its
// records would be both partitioned and global, which Kafka Streams refuses
// too) or that another global table reads.
func (t *Topology) validateGlobals(sourceTopics map[string]string, add func(format string, args ...any)) {
	byTopic := map[string]string{}
	for _, name := range t.globalOrder {
		g := t.globals[name]
		if src, ok := sourceTopics[g.topic]; ok {
			add("global table %q: topic %q is also read by source %q", name, g.topic, src)
		}
		if other, ok := byTopic[g.topic]; ok {
			add("global tables %q and %q read the same topic %q", other, name, g.topic)
		}
		byTopic[g.topic] = name
	}
}

// globalStore is the one instance of a global table in an App (or a
// LocalDriver). One goroutine writes it (the App's global updater); the
// tasks of every unit read it at the same time. A read-write mutex over one
// backend keeps a single copy: reads share the lock, and the writer holds it
// for one batch of a fetch.
type globalStore struct {
	def *globalDef
	mu  sync.RWMutex
	b   state.Backend
	// reader is the typed GlobalTable the processors get.
	reader any
	// closed is set, under mu, when the updater closes the backend:
	// queries (which outlive the updater) then find it gone. queryIters
	// counts the queries' iterators, which read outside mu: the backend
	// is closed only once they are.
	closed     bool
	queryIters sync.WaitGroup
}

func newGlobalStore(def *globalDef, b state.Backend) *globalStore {
	g := &globalStore{def: def, b: b}
	g.reader = def.reader(g)
	return g
}

func (g *globalStore) get(key []byte) ([]byte, bool, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.b.Get(key)
}

// errGlobalClosed says that a global table was closed with its App.
var errGlobalClosed = errors.New("the global table is closed")

// queryGet reads key for a query: as a processor does, sharing the lock.
func (g *globalStore) queryGet(key []byte) ([]byte, bool, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed {
		return nil, false, errGlobalClosed
	}
	return g.b.Get(key)
}

// queryEach calls fn with every entry in [from, to) (nil: unbounded), in
// key order, for a query. The iterator opens and closes under the write
// lock (a memory store clones its tree and Pebble tracks its iterators,
// neither safe for two readers at once) and is read outside any lock, on
// its snapshot: the updater and the processors wait only for the open and
// the close, not for the whole read. The bytes are valid only during fn.
func (g *globalStore) queryEach(from, to []byte, fn func(k, v []byte) error) error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return errGlobalClosed
	}
	it, err := g.b.Range(from, to)
	if err != nil {
		g.mu.Unlock()
		return err
	}
	g.queryIters.Add(1)
	g.mu.Unlock()
	defer g.queryIters.Done()
	closeIt := func() error {
		g.mu.Lock()
		defer g.mu.Unlock()
		return it.Close()
	}
	for it.Next() {
		if err := fn(it.Key(), it.Value()); err != nil {
			closeIt()
			return err
		}
	}
	if err := it.Err(); err != nil {
		closeIt()
		return err
	}
	return closeIt()
}

// close closes the backend once the queries reading it are done; later
// queries get errGlobalClosed.
func (g *globalStore) close() error {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.queryIters.Wait()
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.b.Close()
}

// apply writes a batch of the topic's records (Value nil deletes).
func (g *globalStore) apply(changes []state.Change) error {
	if len(changes) == 0 {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if r, ok := g.b.(state.Restorer); ok {
		if err := r.ApplyBatch(changes); err != nil {
			return fmt.Errorf("global table %q: %w", g.def.name, err)
		}
	} else {
		for _, c := range changes {
			var err error
			if c.Value == nil {
				err = g.b.Delete(c.Key)
			} else {
				err = g.b.Put(c.Key, c.Value)
			}
			if err != nil {
				return fmt.Errorf("global table %q: %w", g.def.name, err)
			}
		}
	}
	return nil
}

// GlobalTable reads a global table: the row of a key as of now, whichever
// unit or task asks. Safe for concurrent use.
type GlobalTable[K, V any] struct {
	s  *globalStore
	ks serde.Serde[K]
	vs serde.Serde[V]
}

// Name returns the table's name.
func (g *GlobalTable[K, V]) Name() string { return g.s.def.name }

// Get returns the current value of key; ok is false when the table has no
// row for it.
func (g *GlobalTable[K, V]) Get(key K) (value V, ok bool, err error) {
	kb, err := g.ks.Serialize(key)
	if err != nil {
		return value, false, fmt.Errorf("global table %q: key: %w", g.s.def.name, err)
	}
	vb, ok, err := g.s.get(kb)
	if err != nil || !ok {
		return value, false, err
	}
	if value, err = g.vs.Deserialize(vb); err != nil {
		return value, false, fmt.Errorf("global table %q: value: %w", g.s.def.name, err)
	}
	return value, true, nil
}

// GetGlobalTable returns the typed reader of the global table named name.
// Any processor may read any global table; call it in Init and keep the
// result.
func GetGlobalTable[K, V any](ctx StoreGetter, name string) (*GlobalTable[K, V], error) {
	s := ctx.Store(name)
	if s == nil {
		return nil, fmt.Errorf("processor %q: no global table %q", ctx.NodeName(), name)
	}
	g, ok := s.(*GlobalTable[K, V])
	if !ok {
		return nil, fmt.Errorf("processor %q: global table %q is %T, not a GlobalTable of the requested types", ctx.NodeName(), name, s)
	}
	return g, nil
}

// globalRecord turns one record of a global topic into a change of its
// table, or says why it is not applied: dropped for a null key (counted
// under DropNullKey), or failing to decode (err, for the deserialization
// policy).
func globalRecord(g *globalStore, r *kgo.Record) (c state.Change, drop bool, err error) {
	if r.Key == nil {
		return c, true, nil
	}
	if err := g.def.check(r.Key, r.Value); err != nil {
		return c, false, &RecordError{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Node: g.def.name, Deserialize: true, Err: err}
	}
	return state.Change{Key: r.Key, Value: r.Value, Timestamp: r.Timestamp.UnixMilli()}, false, nil
}

// globalSink is where the global tables' failed records go: the dead-letter
// producer, and the counters of Stats.
type globalSink interface {
	deadLetter(topic string, in *kgo.Record, node string, cause error)
	config() *config
}

// globalCounters are the global tables' share of Stats; the updater writes
// them, Stats reads them from other goroutines.
type globalCounters struct {
	skipped, deadLettered, nullKeys, applied atomic.Uint64
}

// collectGlobal turns a fetch of global records into one batch per store,
// applying the deserialization policy to records that cannot be decoded:
// Fail returns the record's error; LogAndContinue and DeadLetter count it
// and go on. The changes are appended to the batches of batches (nil: a
// new map).
func collectGlobal(stores map[string]*globalStore, recs []*kgo.Record, sink globalSink, n *globalCounters, batches map[*globalStore][]state.Change) (map[*globalStore][]state.Change, error) {
	if batches == nil {
		batches = map[*globalStore][]state.Change{}
	}
	cfg := sink.config()
	// A fetch comes partition by partition: the store and its batch are
	// looked up when the topic changes, not for every record.
	var (
		topic  string
		looked bool
		g      *globalStore
		b      []state.Change
	)
	for _, r := range recs {
		if !looked || r.Topic != topic {
			if g != nil {
				batches[g] = b
			}
			topic, looked, g = r.Topic, true, stores[r.Topic]
			if g != nil {
				b = batches[g]
				if len(b) == 0 && cap(b) < len(recs) && len(stores) == 1 {
					// The only table's batch is sized for the whole
					// fetch: growing it by appends took a quarter of
					// a loading's CPU.
					b = make([]state.Change, 0, len(recs))
				}
			}
		}
		if g == nil || r.Attrs.IsControl() {
			continue
		}
		c, drop, err := globalRecord(g, r)
		switch {
		case drop:
			n.nullKeys.Add(1)
			continue
		case err != nil:
			log := cfg.logger.With("global_table", g.def.name, "topic", r.Topic, "partition", r.Partition, "offset", r.Offset)
			switch p := cfg.onDeserializeError; p.action {
			case actionContinue:
				log.Warn("skipping record", "error", err)
				n.skipped.Add(1)
			case actionDeadLetter:
				log.Warn("dead-lettering record", "error", err, "dead_letter_topic", p.topic)
				n.deadLettered.Add(1)
				sink.deadLetter(p.topic, r, g.def.name, err)
			default:
				batches[g] = b
				return batches, err
			}
			continue
		}
		b = append(b, c)
	}
	if g != nil {
		batches[g] = b
	}
	return batches, nil
}
