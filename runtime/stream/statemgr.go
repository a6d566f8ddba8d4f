package stream

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/twmb/franz-go/pkg/kgo"
)

// checkpointFile is a hint for assignment only (how much state a task
// directory holds, read without opening its stores). Restoration never
// trusts it: a store's position lives inside the store.
const checkpointFile = ".checkpoint"

// stateManager owns one task's stores (Kafka Streams' ProcessorStateManager):
// it locks the task directory, opens the stores with their changelog
// positions, and runs the store side of every commit in three steps, which
// both committers call in this order:
//
//  1. prepare: each store cache's dirty entries are logged to the changelog
//     (through the task's env, so inside the transaction under
//     exactly-once) and held; nothing reaches a store yet;
//  2. once the commit is durable in Kafka (the producer flushed and the
//     offsets are about to be committed, or the transaction committed),
//     committed: the held writes reach the stores, each logged store records
//     its new changelog position with them, and the stores are flushed;
//  3. or, if the commit failed or the task fails, aborted: held and cached
//     writes are dropped, so the stores are exactly as of the last commit.
//
// So a store's data and position only ever move together, at a commit, and
// a record that fails leaves no trace in the stores. With CacheRecords(0)
// every write is logged at once, as in Kafka Streams without a record cache;
// a persistent store still gets its writes at the commit (or, past
// writeBehindRecords keys between commits, early), a memory store at once.
type stateManager struct {
	id     TaskID
	dir    string // "" when no store lives on disk
	unlock func() error
	stores map[string]*taskStore
	order  []*taskStore // by name: commits touch stores in a fixed order
	env    taskEnv
	// topicIDs is the id of each changelog topic the stores' data came
	// from: read from the checkpoint file at open, then the current ids once
	// restoration has checked them (dropStale).
	topicIDs map[string]state.TopicID
	// syncOutside, set by a commit for its committed step, runs the
	// stores' flushes (a WAL sync: disk time) and the checkpoint file's
	// write with the query lock released (committer.outsideQueryLock):
	// the stores hold the commit's writes by then, and a read of a
	// store being synced is safe.
	syncOutside func(func() error) error
}

// outside runs f through syncOutside when set.
func (m *stateManager) outside(f func() error) error {
	if m.syncOutside != nil {
		return m.syncOutside(f)
	}
	return f()
}

type taskStore struct {
	def *storeDef
	// backend is what the typed store writes to: the cache, or inner
	// without one.
	backend state.Backend
	cache   *state.Cache
	// inner is the store itself; restoration writes here, so restored
	// records are neither cached nor logged again.
	inner     state.Backend
	typed     any
	changelog string // topic; empty when not logged
	partition int32
	// restoredTo is the changelog offset the store holds data up to: its
	// position, kept inside the store at every commit.
	restoredTo int64
	restoreEnd int64
	// pending are changelog records read but not applied yet, up to
	// offset pendingTo (exclusive): a restore applies them in chunks
	// (changelogReader.step).
	pending      restoreBuf
	pendingBytes int
	pendingTo    int64
	ready        bool // in changelogReader.ready
	// moved is when the store's restore last read or applied records
	// (or began): changelogReader.unstick reads a changelog again once
	// an active restore has not moved for restoreStallAfter.
	moved time.Time
	// produced is one past the largest changelog offset acknowledged.
	produced offsetMax
	ack      func(*kgo.Record, error)
	// held is what prepare logged and committed will apply, after
	// heldDrops, the ranges dropped (not logged) since the last commit.
	held      []state.Change
	heldDrops []state.KeyRange
	// loggedEachWrite says the typed store logs every write itself, so
	// prepare only holds the cache's dirty entries (CacheRecords(0)).
	loggedEachWrite bool
	t               *task
	// shared says queries may read the store while the unit processes:
	// a queryable active task's store, whose cache (or, without one,
	// backend) locks each operation (wrap).
	shared bool
	// readMu serializes the queries of a store that is not shared, which
	// they read under the unit's query lock, shared among them (query.go).
	readMu sync.Mutex
}

// LogChange implements state.ChangeLogger, for stores whose typed store logs
// each write itself (no record cache: CacheRecords(0)).
func (s *taskStore) LogChange(key, value []byte, timestamp int64) {
	s.t.env.logChange(s, key, value, timestamp)
}

// RecordTime implements state.RecordClock: the time of the record the task
// is processing, or of the punctuation it runs, which each write of the
// store carries to its changelog record.
func (s *taskStore) RecordTime() int64 { return s.t.recordTime() }

// changelogTime is a changelog record's timestamp: none (the producer
// stamps it with its clock) for state.NoTimestamp.
func changelogTime(ms int64) time.Time {
	if ms < 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// offsetMax holds the largest offset+1 seen, written from producer callbacks.
type offsetMax struct{ v atomic.Int64 }

func (o *offsetMax) observe(next int64) {
	for {
		cur := o.v.Load()
		if next <= cur || o.v.CompareAndSwap(cur, next) {
			return
		}
	}
}

func (o *offsetMax) load() int64 { return o.v.Load() }

// changelogTopic names a store's changelog, as Kafka Streams does.
func changelogTopic(appID, store string) string { return appID + "-" + store + "-changelog" }

// openStores locks the task directory (when a store lives on disk) and
// opens every store of t's sub-topology at its position. A standby's stores
// get neither a cache nor a changelog logger: they only follow the log.
// With handoff set, t takes over the handoff task's lock and open stores
// (a standby promoted, or a task rebuilt after an abort), whose positions
// are current: nothing is reopened, and in-memory stores stay warm.
func openStores(t *task, handoff *task) (*stateManager, error) {
	cfg := t.env.config()
	m := &stateManager{id: t.id, stores: map[string]*taskStore{}, env: t.env}
	if h := handoff; h != nil && h.sm != nil {
		m.dir, m.unlock, h.sm.unlock = h.sm.dir, h.sm.unlock, nil
	} else if t.anyPersistent() {
		m.dir = filepath.Join(cfg.stateDir, cfg.appID, t.id.String())
		var err error
		if m.unlock, err = state.LockDir(m.dir); err != nil {
			return nil, fmt.Errorf("task %s: %w", t.id, err)
		}
	}
	if h := handoff; h != nil && h.sm != nil && h.sm.topicIDs != nil {
		m.topicIDs = h.sm.topicIDs // checked when the handed-off stores were
	} else {
		m.topicIDs = m.recordedTopicIDs(cfg.logger)
	}
	for _, def := range t.sub.stores {
		ts := &taskStore{def: def, partition: t.id.Partition, t: t}
		if err := m.openStore(t, ts, handoff); err != nil {
			if ts.inner != nil {
				_ = ts.inner.Close()
			}
			m.close(false)
			return nil, err
		}
		m.stores[def.name] = ts
		m.order = append(m.order, ts)
	}
	slices.SortFunc(m.order, func(a, b *taskStore) int {
		if a.def.name < b.def.name {
			return -1
		}
		return 1
	})
	return m, nil
}

func (m *stateManager) openStore(t *task, ts *taskStore, handoff *task) error {
	cfg := t.env.config()
	def := ts.def
	var from *taskStore
	if handoff != nil && handoff.sm != nil {
		from = handoff.sm.stores[def.name]
	}
	switch {
	case from != nil:
		ts.inner, ts.restoredTo = from.inner, from.restoredTo
		from.inner, from.backend, from.cache = nil, nil, nil
	case t.persistent(def):
		b, err := m.openPersistent(def, cfg.logger)
		if err != nil {
			return err
		}
		ts.inner = b
	default:
		ts.inner = state.NewMemory()
	}
	if def.opts.Changelog {
		ts.changelog = changelogTopic(cfg.appID, def.name)
		if p, ok := ts.inner.(state.Positioned); ok && from == nil {
			pos, ok, err := p.Position()
			if err != nil {
				return fmt.Errorf("task %s: store %q: read position: %w", t.id, def.name, err)
			}
			if ok {
				ts.restoredTo = pos
			} else if err := m.wipeIfNotEmpty(ts, cfg.logger); err != nil {
				return err
			}
		}
		ts.produced.observe(ts.restoredTo)
	}
	m.wrap(t, ts)
	return nil
}

// wrap puts ts's cache and typed store over its inner store; a standby's
// stores get neither.
func (m *stateManager) wrap(t *task, ts *taskStore) {
	cfg := t.env.config()
	def := ts.def
	var logger state.ChangeLogger
	if ts.changelog != "" {
		logger = ts
	}
	ts.backend, ts.cache, ts.typed, ts.loggedEachWrite, ts.shared = ts.inner, nil, nil, false, false
	if t.standby {
		return
	}
	defer func() {
		if def.opts.Queryable {
			if ts.cache != nil {
				ts.cache.ShareReads()
			} else {
				ts.backend = state.ShareReads(ts.inner)
			}
			ts.shared = true
		}
		ts.typed = def.open(ts.backend, logger)
	}()
	n := cfg.cacheRecords
	if cfg.guarantee == ExactlyOnce && n == 0 {
		n = 1000 // exactly-once holds every write until its transaction commits
	}
	if n > 0 {
		// The state manager logs what it takes from the cache at commit;
		// the typed store logs nothing itself. A full cache asks for a
		// commit rather than letting writes reach the store between commits.
		ts.cache = state.NewCache(ts.inner, n, func() { t.commitRequested = true })
		ts.cache.SetClock(ts) // what prepare logs carries its write's time
		if def.kind.LogsItself {
			// The typed store logs each operation at once (in the
			// transaction, under exactly-once); the cache only holds
			// its writes until the commit.
			ts.backend, ts.loggedEachWrite = ts.cache, true
		} else {
			ts.backend, logger = ts.cache, nil
		}
	} else if t.persistent(def) {
		// Without the record cache every write is logged at once, one
		// changelog record per write as in Kafka Streams without a record
		// cache, but the store itself gets the last value of each key
		// written since the last commit in one batch at the commit (or
		// when this cache overflows between commits). A count's Get before
		// its Put is a map lookup, and the store sees one write per key per
		// commit instead of one commit-pipeline write per record.
		ts.cache = state.NewCache(ts.inner, cmp.Or(def.kind.WriteBehind, writeBehindRecords), nil)
		ts.backend, ts.loggedEachWrite = ts.cache, true
	}
}

// openPersistent opens a store on disk. A logged store whose files are
// unreadable is removed and rebuilt from its changelog, which holds every
// committed write; an unlogged one has no other copy, so its error stands.
func (m *stateManager) openPersistent(def *storeDef, log *slog.Logger) (state.Backend, error) {
	dir := filepath.Join(m.dir, def.name)
	b, err := def.opts.Persistent(dir)
	if err != nil && errors.Is(err, state.ErrCorrupt) && def.opts.Changelog {
		log.Warn("store is unreadable; removing it and restoring it from its changelog",
			"task", m.id.String(), "store", def.name, "dir", dir, "error", err)
		if rerr := os.RemoveAll(dir); rerr != nil {
			return nil, fmt.Errorf("task %s: remove unreadable store %q: %w", m.id, def.name, rerr)
		}
		b, err = def.opts.Persistent(dir)
	}
	if err != nil {
		return nil, fmt.Errorf("task %s: open store %q: %w", m.id, def.name, err)
	}
	return b, nil
}

// wipeIfNotEmpty empties a store on disk that holds data but no position
// (written before positions were kept, or whose position was lost): its
// data cannot be placed in its changelog, so it is rebuilt from the start.
func (m *stateManager) wipeIfNotEmpty(ts *taskStore, log *slog.Logger) error {
	it, err := ts.inner.Range(nil, nil)
	if err != nil {
		return fmt.Errorf("task %s: store %q: %w", m.id, ts.def.name, err)
	}
	empty := !it.Next()
	if err := errors.Join(it.Err(), it.Close()); err != nil {
		return fmt.Errorf("task %s: store %q: %w", m.id, ts.def.name, err)
	}
	if empty {
		return nil
	}
	dir := filepath.Join(m.dir, ts.def.name)
	log.Warn("store has data but no changelog position; removing it and restoring it from its changelog",
		"task", m.id.String(), "store", ts.def.name, "dir", dir)
	if err := ts.inner.Close(); err != nil {
		return fmt.Errorf("task %s: close store %q: %w", m.id, ts.def.name, err)
	}
	ts.inner = nil
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("task %s: remove store %q: %w", m.id, ts.def.name, err)
	}
	b, err := m.openPersistent(ts.def, log)
	if err != nil {
		return err
	}
	ts.inner = b
	return nil
}

// recordedTopicIDs reads, from the checkpoint file, the ids of the
// changelogs the stores on disk were written from. An unreadable file only
// costs the check it would allow: positions are still checked.
func (m *stateManager) recordedTopicIDs(log *slog.Logger) map[string]state.TopicID {
	if m.dir == "" {
		return map[string]state.TopicID{}
	}
	path := filepath.Join(m.dir, checkpointFile)
	cp, err := state.ReadCheckpoint(path)
	if err != nil {
		log.Warn("task checkpoint is unreadable; the changelogs' topic ids cannot be checked", "task", m.id.String(), "error", err)
		return map[string]state.TopicID{}
	}
	return cp.TopicIDs
}

// dropStale wipes s when its data cannot have come from its changelog as
// the changelog is now: its position is past the changelog's end (the
// changelog was deleted, recreated or truncated), or the changelog's topic
// id is not the one recorded for its data (deleted and created again, as an
// application reset does, and written since). Replaying the new changelog
// over such data would add to it, so, as Kafka Streams does with a
// corrupted task, the store is emptied and restored from the start. id is
// the changelog's current id, if known. It reports whether s was wiped.
func (m *stateManager) dropStale(t *task, s *taskStore, id state.TopicID, haveID bool) (bool, error) {
	log := t.env.config().logger
	recorded, hadID := m.topicIDs[s.changelog]
	var why string
	switch {
	case s.restoredTo > s.restoreEnd:
		why = "its position is past the changelog's end"
	case haveID && hadID && recorded != id && s.restoredTo > 0:
		why = "the changelog was deleted and created again since its data was written"
	}
	if haveID {
		m.topicIDs[s.changelog] = id
	}
	if why == "" {
		return false, nil
	}
	attrs := []any{"task", t.id.String(), "store", s.def.name, "reason", why, "position", s.restoredTo, "end", s.restoreEnd}
	if hadID && haveID {
		attrs = append(attrs, "recorded_topic_id", recorded.String(), "topic_id", id.String())
	}
	log.Warn("store holds data its changelog no longer has (was the application reset?); wiping it and restoring it from the changelog's start", attrs...)
	return true, m.wipe(t, s)
}

// wipe empties s and forgets its position: a store on disk loses its
// directory, one in memory its map. Its cache and typed store are made
// again over the new store; nothing holds them yet, since processors get
// their stores once restoration is done.
func (m *stateManager) wipe(t *task, s *taskStore) error {
	if s.inner != nil {
		if err := s.inner.Close(); err != nil {
			return fmt.Errorf("task %s: close store %q: %w", m.id, s.def.name, err)
		}
		s.inner = nil
	}
	if t.persistent(s.def) {
		if err := os.RemoveAll(filepath.Join(m.dir, s.def.name)); err != nil {
			return fmt.Errorf("task %s: remove store %q: %w", m.id, s.def.name, err)
		}
		b, err := m.openPersistent(s.def, t.env.config().logger)
		if err != nil {
			return err
		}
		s.inner = b
	} else {
		s.inner = state.NewMemory()
	}
	s.restoredTo, s.held = 0, nil
	s.produced.v.Store(0)
	m.wrap(t, s)
	return nil
}

// prepare is the first commit step: it logs each cache's dirty entries to
// the changelog and holds them for committed, with the ranges dropped since
// the last commit (not logged: see state.RangeDeleter).
func (m *stateManager) prepare() {
	for _, s := range m.order {
		if s.cache == nil {
			continue
		}
		if drops := s.cache.Drops(); len(drops) > 0 {
			// A drop comes after what was held before it.
			s.held = slices.DeleteFunc(s.held, func(c state.Change) bool {
				return slices.ContainsFunc(drops, func(r state.KeyRange) bool { return r.Contains(c.Key) })
			})
			s.heldDrops = append(s.heldDrops, drops...)
		}
		changes := s.cache.Dirty()
		if s.changelog != "" && !s.loggedEachWrite {
			// The cache holds the backend's writes; a kind whose
			// backend layout is not its changelog's converts them.
			toLog := s.def.kind.ToChangelog
			for _, c := range changes {
				if toLog != nil {
					var ok bool
					if c, ok = toLog(c); !ok {
						continue
					}
				}
				m.env.logChange(s, c.Key, c.Value, c.Timestamp)
			}
		}
		s.held = append(s.held, changes...)
	}
}

// committed is the second commit step, once the logged writes are durable
// in Kafka: the held writes reach the stores, with their positions.
func (m *stateManager) committed() error {
	for _, s := range m.order {
		if err := state.DeleteRanges(s.inner, s.heldDrops); err != nil {
			return fmt.Errorf("task %s: store %q: %w", m.id, s.def.name, err)
		}
		if err := state.ApplyChanges(s.inner, s.held); err != nil {
			return fmt.Errorf("task %s: store %q: %w", m.id, s.def.name, err)
		}
		s.held, s.heldDrops = nil, nil
	}
	return m.checkpoint()
}

// aborted drops what prepare held and what the caches hold: the stores stay
// as of the last commit.
func (m *stateManager) aborted() {
	for _, s := range m.order {
		s.held, s.heldDrops = nil, nil
		if s.cache != nil {
			s.cache.Discard()
		}
	}
}

// checkpoint records each logged store's position inside the store, flushes
// every store, and writes the assignment hint. A standby calls it alone, as
// it has nothing held.
func (m *stateManager) checkpoint() error {
	hint := state.Checkpoint{Offsets: map[string]map[int32]int64{}, TopicIDs: map[string]state.TopicID{}}
	var recorded []string // the stores whose positions the checkpoint holds, quoted
	for _, s := range m.order {
		if s.inner == nil {
			continue
		}
		if s.changelog != "" {
			s.restoredTo = max(s.restoredTo, s.produced.load())
			if p, ok := s.inner.(state.Positioned); ok {
				if err := p.SetPosition(s.restoredTo); err != nil {
					return fmt.Errorf("task %s: store %q: record position: %w", m.id, s.def.name, err)
				}
				hint.Offsets[s.changelog] = map[int32]int64{s.partition: s.restoredTo}
				recorded = append(recorded, strconv.Quote(s.def.name))
				if id, ok := m.topicIDs[s.changelog]; ok {
					hint.TopicIDs[s.changelog] = id
				}
			}
		}
		if err := m.outside(s.inner.Flush); err != nil {
			return fmt.Errorf("task %s: flush store %q: %w", m.id, s.def.name, err)
		}
	}
	if m.dir == "" || len(hint.Offsets) == 0 {
		return nil
	}
	if err := m.outside(func() error { return state.WriteCheckpoint(filepath.Join(m.dir, checkpointFile), hint) }); err != nil {
		// Named by the stores whose positions it records: on a full disk
		// this write may fail before any store's own does.
		what := "store " + recorded[0]
		if len(recorded) > 1 {
			what = "stores " + strings.Join(recorded, ", ")
		}
		return fmt.Errorf("task %s: checkpoint of %s: %w", m.id, what, err)
	}
	return nil
}

// offset sums how far the logged stores are, for assignment.
func (m *stateManager) offset() int64 {
	var sum int64
	for _, s := range m.order {
		if s.changelog != "" {
			sum += max(s.restoredTo, s.produced.load())
		}
	}
	return sum
}

// changelogs lists the changelog topics of the logged stores.
func (m *stateManager) changelogs() []string {
	var topics []string
	for _, s := range m.order {
		if s.changelog != "" {
			topics = append(topics, s.changelog)
		}
	}
	return topics
}

// close closes the stores and releases the directory. A dirty close (no
// commit just before) first drops everything since the last commit.
func (m *stateManager) close(clean bool) error {
	if !clean {
		m.aborted()
	}
	var errs []error
	for _, s := range m.order {
		if s.inner != nil {
			if err := s.inner.Close(); err != nil {
				errs = append(errs, fmt.Errorf("task %s: close store %q: %w", m.id, s.def.name, err))
			}
			s.inner, s.backend, s.cache = nil, nil, nil
		}
	}
	if m.unlock != nil {
		if err := m.unlock(); err != nil {
			errs = append(errs, err)
		}
		m.unlock = nil
	}
	return errors.Join(errs...)
}

// writeBehindRecords is how many entries the cache of a persistent store
// without a record cache (CacheRecords(0)) keeps between commits, unless
// its kind says otherwise (StoreKind.WriteBehind: a join's window stores).
const writeBehindRecords = 10_000
