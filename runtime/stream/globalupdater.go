package stream

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kgen-dev/kgen/runtime/state"
)

// globalUpdater fills and then follows an App's global tables: one goroutine
// and one franz-go client without a group, assigned every partition of every
// global topic (Kafka Streams' GlobalStreamThread). It is not a unit: a unit
// owns the partitions the group gives it, while a global table needs all of
// them on every instance, so one updater per App feeds the one shared copy
// that every unit's tasks read.
type globalUpdater struct {
	a       *App
	cl      *kgo.Client
	byTopic map[string]*globalStore
	stores  []*globalStore
	// dir holds the persistent tables and the checkpoint; "" when every
	// table is in memory (nothing survives a restart, so nothing is
	// checkpointed).
	dir     string
	next    map[string]map[int32]int64 // next offset to apply, by topic and partition
	ids     map[string]state.TopicID   // the topics' ids, checkpointed with the offsets
	dirty   bool                       // applied records not yet checkpointed
	counter globalCounters
	// While the tables load, a batch is applied on its own goroutine
	// while the next fetches are polled and decoded: applying is most of
	// a load's work, and it then overlaps the rest. read is how far the
	// fetches polled go (next catches up once their batch is applied);
	// applying, when not nil, gets the result of the batch in flight, and
	// pending its offsets; collected holds the offsets of the batch being
	// filled, and collectedBytes its size.
	read           map[string]map[int32]int64
	ends           kadm.ListedOffsets // where the load ends
	applying       chan error
	pending        []partitionNext
	collected      []partitionNext
	collectedBytes int
	// chunk is how large a batch grows, over fetches, before it is
	// applied while the tables load: 0 applies each fetch (in memory);
	// on disk a batch is ingested as a sorted table, and a table per
	// small fetch costs more than larger ones.
	chunk int
	// batches are two sets of changes by store, reused in turn: one is
	// applied while the other is filled.
	batches [2]map[*globalStore][]state.Change
	turn    int
}

// globalChunkBytes is how much a persistent global table's batch holds
// (keys and values, plus 16 bytes each) before it is applied during the
// load, as a restore's chunk (restoreChunkBytes). A variable for tests.
var globalChunkBytes = 8 << 20

// globalFetchMaxBytes bounds a fetch of the global tables' client (a
// broker still returns at least one record batch). A fetch is decoded
// whole before it is handed over, and the first is applied only then:
// franz-go's default (50 MiB, 1 MiB per partition) makes the first wait,
// and what is held in flight, a large share of a load when the records
// compress well (a megabyte of compressed batch per partition can hold a
// quarter of a million small records). The App's ClientOpts come after it.
const globalFetchMaxBytes = 1 << 20

// partitionNext is the next offset of a partition once a batch is applied.
type partitionNext struct {
	topic     string
	partition int32
	next      int64
}

// globalCheckpoint is the name of the file, in the global tables' directory,
// holding the next offset of every partition of their topics.
const globalCheckpoint = ".checkpoint"

// openGlobals opens the App's global tables and their client, reading from
// the checkpoint when the tables are on disk.
func (a *App) openGlobals(ctx context.Context) (*globalUpdater, error) {
	t := a.topo
	g := &globalUpdater{a: a, byTopic: map[string]*globalStore{}, next: map[string]map[int32]int64{}, read: map[string]map[int32]int64{}}
	for i := range g.batches {
		g.batches[i] = map[*globalStore][]state.Change{}
	}
	persistent := len(t.globalOrder) > 0
	for _, name := range t.globalOrder {
		persistent = persistent && t.globals[name].opts.Persistent != nil && !a.cfg.memoryStores
	}
	if persistent {
		g.dir = filepath.Join(a.cfg.stateDir, a.cfg.appID, "global")
		g.chunk = globalChunkBytes
		if err := os.MkdirAll(g.dir, 0o755); err != nil {
			return nil, fmt.Errorf("global tables: %w", err)
		}
	}
	ends, err := a.adm.ListEndOffsets(ctx, t.GlobalTopics()...)
	if err == nil {
		err = ends.Error()
	}
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		for _, topic := range t.GlobalTopics() {
			for _, o := range ends[topic] {
				if errors.Is(o.Err, kerr.UnknownTopicOrPartition) {
					return nil, fmt.Errorf("global table of topic %q: %w", topic, a.missingTopic(topic))
				}
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("global tables: list end offsets: %w", err)
	}
	for _, topic := range t.GlobalTopics() {
		if len(ends[topic]) == 0 {
			return nil, fmt.Errorf("global table of topic %q: %w", topic, a.missingTopic(topic))
		}
	}
	cp := state.Checkpoint{Offsets: map[string]map[int32]int64{}, TopicIDs: map[string]state.TopicID{}}
	if g.dir != "" {
		if cp, err = state.ReadCheckpoint(filepath.Join(g.dir, globalCheckpoint)); err != nil {
			return nil, fmt.Errorf("global tables: %w", err)
		}
		// The topics' ids: a topic deleted and created again has a new one,
		// and a table written from the old topic must be wiped, not
		// continued (its offsets mean nothing in the new topic).
		details, err := a.adm.ListTopics(ctx, t.GlobalTopics()...)
		if err != nil {
			return nil, fmt.Errorf("global tables: describe topics: %w", err)
		}
		g.ids = map[string]state.TopicID{}
		for _, topic := range t.GlobalTopics() {
			g.ids[topic] = state.TopicID(details[topic].ID)
		}
	}
	for _, name := range t.globalOrder {
		def := t.globals[name]
		var b state.Backend = state.NewMemoryWide()
		if g.dir != "" {
			dir := filepath.Join(g.dir, name)
			old, recorded := cp.TopicIDs[def.topic]
			_, statErr := os.Stat(dir)
			switch {
			case recorded && old != g.ids[def.topic]:
				a.cfg.logger.Warn("global table's topic was recreated: reading it again from the start", "global_table", name, "topic", def.topic)
				if err := os.RemoveAll(dir); err != nil {
					g.close()
					return nil, fmt.Errorf("global table %q: wipe: %w", name, err)
				}
				delete(cp.Offsets, def.topic)
			case statErr != nil:
				// Its files are gone (or it is new): the checkpoint
				// does not cover it.
				delete(cp.Offsets, def.topic)
			}
			var err error
			if b, err = def.opts.Persistent(dir); err != nil {
				g.close()
				return nil, fmt.Errorf("global table %q: open: %w", name, err)
			}
		}
		s := newGlobalStore(def, b)
		g.stores = append(g.stores, s)
		g.byTopic[def.topic] = s
	}
	starts, err := a.adm.ListStartOffsets(ctx, t.GlobalTopics()...)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		g.close()
		return nil, fmt.Errorf("global tables: list start offsets: %w", err)
	}
	assign := map[string]map[int32]kgo.Offset{}
	for _, topic := range t.GlobalTopics() {
		assign[topic] = map[int32]kgo.Offset{}
		g.next[topic], g.read[topic] = map[int32]int64{}, map[int32]int64{}
		for p, end := range ends[topic] {
			from := starts[topic][p].Offset
			// A checkpoint past the end belongs to a topic since deleted
			// or truncated: the table would miss records, so it is read
			// again from the start (over the rows it has: a table's
			// replay converges to the topic's last values).
			if off, ok := cp.Offsets[topic][p]; ok && off >= from && off <= end.Offset {
				from = off
			}
			assign[topic][p] = kgo.NewOffset().At(from)
			g.next[topic][p], g.read[topic][p] = from, from
		}
	}
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(a.cfg.brokers...),
		kgo.ConsumePartitions(assign),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		// Transaction markers take offsets: seen, they move the next
		// offset past a topic's last marker to its end offset.
		kgo.KeepControlRecords(),
		kgo.FetchMaxBytes(globalFetchMaxBytes),
	}, a.cfg.clientOpts...)
	if g.cl, err = kgo.NewClient(opts...); err != nil {
		g.close()
		return nil, fmt.Errorf("global tables: %w", err)
	}
	// The first checkpoint is written whatever was read: it records the
	// topics' ids, and forgets the offsets of tables read again.
	g.dirty = g.dir != ""
	// Caught up when every partition is read to the end seen at start.
	began := time.Now()
	g.ends = ends
	for ctx.Err() == nil && !g.caughtUp(ends) {
		if err := g.step(ctx, true); err != nil {
			g.close()
			return nil, err
		}
	}
	if err := g.applied(); err != nil {
		g.close()
		return nil, err
	}
	if err := g.checkpoint(); err != nil {
		g.close()
		return nil, err
	}
	a.cfg.logger.Info("global tables loaded", "app", a.cfg.appID, "records", g.counter.applied.Load(), "took", time.Since(began))
	return g, ctx.Err()
}

// caughtUp tells whether every partition is read to ends (applied or
// being applied).
func (g *globalUpdater) caughtUp(ends kadm.ListedOffsets) bool {
	for topic, ps := range ends {
		for p, e := range ps {
			if g.read[topic][p] < e.Offset {
				return false
			}
		}
	}
	return true
}

// step polls once and applies what came. With overlap (while the tables
// load), what came joins the batch being filled, which is applied on its
// own goroutine once it holds chunk bytes or reaches the end of the load
// (after the previous batch is applied): applied waits for it. Without,
// it is applied before step returns.
func (g *globalUpdater) step(ctx context.Context, overlap bool) error {
	fs := g.cl.PollFetches(ctx)
	if ctx.Err() != nil {
		return g.applied()
	}
	var ferr error
	fs.EachError(func(topic string, p int32, err error) {
		if !errors.Is(err, context.Canceled) && ferr == nil && !kerr.IsRetriable(err) {
			ferr = fmt.Errorf("global tables: fetch %s[%d]: %w", topic, p, err)
		}
	})
	if ferr != nil {
		return errors.Join(ferr, g.applied())
	}
	batches, err := collectGlobal(g.byTopic, fs.Records(), g, &g.counter, g.batches[g.turn])
	if err != nil {
		return errors.Join(err, g.applied())
	}
	// A partition's records come in offset order: its last one says where
	// it goes on (two map lookups per partition, not per record).
	fs.EachPartition(func(p kgo.FetchTopicPartition) {
		if n := len(p.Records); n > 0 {
			next := p.Records[n-1].Offset + 1
			g.read[p.Topic][p.Partition] = next
			g.collected = append(g.collected, partitionNext{p.Topic, p.Partition, next})
			if g.chunk > 0 {
				for _, r := range p.Records {
					g.collectedBytes += len(r.Key) + len(r.Value) + 16
				}
			}
		}
	})
	if len(g.collected) == 0 || overlap && g.collectedBytes < g.chunk && !g.caughtUp(g.ends) {
		return nil
	}
	// One batch at a time: a table's records are applied in order. The
	// other set of batches is then free to be filled.
	if err := g.applied(); err != nil {
		return err
	}
	g.turn = 1 - g.turn
	for s, b := range g.batches[g.turn] {
		g.batches[g.turn][s] = b[:0]
	}
	g.pending, g.collected, g.collectedBytes = g.collected, g.pending, 0
	done := make(chan error, 1)
	g.applying = done
	apply := func() {
		for s, b := range batches {
			if err := s.apply(b); err != nil {
				done <- err
				return
			}
			g.counter.applied.Add(uint64(len(b)))
		}
		done <- nil
	}
	if !overlap {
		apply()
		return g.applied()
	}
	go apply()
	return nil
}

// applied waits for the batch in flight, if any, and then moves the next
// offsets past it: a checkpoint never covers a record not yet applied.
func (g *globalUpdater) applied() error {
	if g.applying == nil {
		return nil
	}
	err := <-g.applying
	g.applying = nil
	if err != nil {
		return err
	}
	for _, p := range g.pending {
		g.next[p.topic][p.partition] = p.next
		g.dirty = true
	}
	g.pending = g.pending[:0]
	return nil
}

// run keeps the tables up to date until ctx ends, checkpointing every
// commit interval and on the way out.
func (g *globalUpdater) run(ctx context.Context) error {
	last := time.Now()
	for ctx.Err() == nil {
		if err := g.step(ctx, false); err != nil {
			return err
		}
		if time.Since(last) >= g.a.cfg.commitInterval {
			if err := g.checkpoint(); err != nil {
				return err
			}
			last = time.Now()
		}
	}
	return g.checkpoint()
}

// checkpoint makes the tables durable, then records how far they are: a
// crash between the two replays from the older offsets, which a table
// absorbs.
func (g *globalUpdater) checkpoint() error {
	if g.dir == "" || !g.dirty {
		return nil
	}
	for _, s := range g.stores {
		if err := s.b.Flush(); err != nil {
			return fmt.Errorf("global table %q: flush: %w", s.def.name, err)
		}
	}
	cp := state.Checkpoint{Offsets: g.next, TopicIDs: g.ids}
	if err := state.WriteCheckpoint(filepath.Join(g.dir, globalCheckpoint), cp); err != nil {
		return fmt.Errorf("global tables: %w", err)
	}
	g.dirty = false
	return nil
}

func (g *globalUpdater) close() {
	// A batch still being applied holds its store's lock: the store
	// closes after it.
	if g.applying != nil {
		<-g.applying
		g.applying = nil
	}
	if g.cl != nil {
		g.cl.Close()
		g.cl = nil
	}
	for _, s := range g.stores {
		if err := s.close(); err != nil {
			g.a.cfg.logger.Warn("closing global table", "global_table", s.def.name, "error", err)
		}
	}
	g.stores = nil
}

func (g *globalUpdater) config() *config { return &g.a.cfg }

// deadLetter produces a global record that cannot be decoded, and waits:
// the updater checkpoints past it only once it is written.
func (g *globalUpdater) deadLetter(topic string, in *kgo.Record, node string, cause error) {
	r := deadLetter(topic, 0, 0, in, node, cause)
	r.Context = context.Background()
	if err := g.cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
		g.a.cfg.logger.Error("dead letter of a global table's record failed", "global_table", node, "topic", in.Topic, "partition", in.Partition, "offset", in.Offset, "error", err)
	}
}
