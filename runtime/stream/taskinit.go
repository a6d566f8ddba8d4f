package stream

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"sync/atomic"

	"github.com/kgen-dev/kgen/runtime/state"
)

const checkpointFile = ".checkpoint"

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

// newTask instantiates a sub-topology for one partition: its stores (locked,
// opened, positioned from the checkpoint) and its nodes, children first.
func newTask(id TaskID, topo *Topology, env taskEnv) (*task, error) {
	return newTaskFrom(id, topo, env, nil)
}

// newTaskFrom is newTask taking over a standby's stores when handoff is set.
func newTaskFrom(id TaskID, topo *Topology, env taskEnv, handoff *task) (_ *task, err error) {
	sub := topo.subs[id.Subtopology]
	t := &task{id: id, topo: topo, sub: sub, env: env, streamTime: -1, currentTime: -1, stores: map[string]*taskStore{}, handoff: handoff}
	defer func() {
		if err != nil {
			t.close(false)
		}
	}()

	if err := t.openStores(); err != nil {
		return nil, err
	}

	built := map[string]any{}
	for i := len(sub.nodes) - 1; i >= 0; i-- {
		n := sub.nodes[i]
		children := make([]any, len(n.children))
		for j, c := range n.children {
			children[j] = built[c]
		}
		inst, err := n.build(t, children)
		if err != nil {
			return nil, fmt.Errorf("task %s: %w", id, err)
		}
		built[n.name] = inst
		switch n.kind {
		case sourceKind:
			in := inst.(input)
			*in.state() = inputState{partition: id.Partition, next: -1, committed: -1, hwm: -1, fetchedTo: -1}
			t.inputs = append(t.inputs, in)
		case processorKind:
			t.procs = append(t.procs, inst.(lifecycle))
		}
	}
	sort.Slice(t.inputs, func(i, j int) bool { return t.inputs[i].topic() < t.inputs[j].topic() })
	// Init in topology order, parents first.
	for i, j := 0, len(t.procs)-1; i < j; i, j = i+1, j-1 {
		t.procs[i], t.procs[j] = t.procs[j], t.procs[i]
	}
	return t, nil
}

// openStores locks the task directory (when the sub-topology has stores)
// and opens every store, positioned at the checkpoint. A standby's stores
// get neither a cache nor a changelog logger: they only follow the log.
func (t *task) openStores() (err error) {
	cfg := t.env.config()
	id, sub := t.id, t.sub
	var cp state.Checkpoint
	if h := t.handoff; h != nil {
		// Take over the standby's lock and open stores: no reopen, no
		// checkpoint read, and in-memory stores stay warm too.
		t.dir, t.unlock, h.unlock = h.dir, h.unlock, nil
	} else if t.anyPersistent() {
		t.dir = filepath.Join(cfg.stateDir, cfg.appID, id.String())
		if t.unlock, err = state.LockDir(t.dir); err != nil {
			return fmt.Errorf("task %s: %w", id, err)
		}
		if cp, err = state.ReadCheckpoint(filepath.Join(t.dir, checkpointFile)); err != nil {
			return fmt.Errorf("task %s: %w", id, err)
		}
	}
	for _, def := range sub.stores {
		ts := &taskStore{def: def, partition: id.Partition, t: t}
		var from *taskStore
		if t.handoff != nil {
			from = t.handoff.stores[def.name]
		}
		switch {
		case from != nil:
			ts.backend, from.inner, from.backend = from.inner, nil, nil
		case t.persistent(def):
			ts.backend, err = def.opts.Persistent(filepath.Join(t.dir, def.name))
			if err != nil {
				return fmt.Errorf("task %s: open store %q: %w", id, def.name, err)
			}
		default:
			ts.backend = state.NewMemory()
		}
		ts.inner = ts.backend
		t.stores[def.name] = ts
		var logger state.ChangeLogger
		if def.opts.Changelog {
			ts.changelog = changelogTopic(cfg.appID, def.name)
			logger = ts
			// Only a store that survives a restart can trust its checkpoint.
			switch {
			case from != nil:
				ts.restoredTo = from.restoredTo
			case t.persistent(def):
				ts.restoredTo = cp[ts.changelog][id.Partition]
			}
			ts.produced.observe(ts.restoredTo)
		}
		if t.standby {
			continue
		}
		n := cfg.cacheRecords
		if cfg.guarantee == ExactlyOnce && n == 0 {
			n = 1000 // exactly-once holds writes in the cache until commit
		}
		if n > 0 {
			// The cache logs what it flushes; the typed store logs nothing.
			c := newCachedBackend(ts.backend, logger, n)
			c.eos = cfg.guarantee == ExactlyOnce
			c.onFull = func() { t.commitRequested = true }
			ts.backend = c
			logger = nil
		}
		ts.typed = def.open(ts.backend, logger)
	}
	return nil
}

// persistent says whether a store lives on disk: it asks for it, and the
// runtime is not one that keeps everything in memory (the LocalDriver).
func (t *task) persistent(def *storeDef) bool {
	return def.opts.Persistent != nil && !t.env.config().memoryStores
}

// anyPersistent says whether the task needs a state directory.
func (t *task) anyPersistent() bool {
	for _, def := range t.sub.stores {
		if t.persistent(def) {
			return true
		}
	}
	return false
}

// newStandby opens a task's stores only, to follow their changelogs.
func newStandby(id TaskID, topo *Topology, env taskEnv) (*task, error) {
	t := &task{id: id, topo: topo, sub: topo.subs[id.Subtopology], env: env, standby: true, streamTime: -1, stores: map[string]*taskStore{}}
	if err := t.openStores(); err != nil {
		t.close(false)
		return nil, err
	}
	return t, nil
}

// stateOffset sums how far the task's logged stores are, for assignment.
func (t *task) stateOffset() int64 {
	var sum int64
	for _, s := range t.stores {
		if s.changelog != "" {
			sum += max(s.restoredTo, s.produced.load())
		}
	}
	return sum
}

// writeCheckpoint records, for each persistent logged store, the changelog
// offset its data is complete up to. Call it only after the producer has
// flushed and the stores have been flushed.
func (t *task) writeCheckpoint() error {
	if t.dir == "" {
		return nil
	}
	cp := state.Checkpoint{}
	for _, s := range t.stores {
		if s.changelog == "" || !t.persistent(s.def) {
			continue
		}
		cp[s.changelog] = map[int32]int64{s.partition: max(s.restoredTo, s.produced.load())}
	}
	if len(cp) == 0 {
		return nil
	}
	if err := state.WriteCheckpoint(filepath.Join(t.dir, checkpointFile), cp); err != nil {
		return fmt.Errorf("task %s: %w", t.id, err)
	}
	return nil
}

func (t *task) flushStores() error {
	for name, s := range t.stores {
		if err := s.backend.Flush(); err != nil {
			return fmt.Errorf("task %s: flush store %q: %w", t.id, name, err)
		}
	}
	return nil
}

// close releases the task. A clean close (after a commit) keeps the
// checkpoint; a dirty one leaves only what the last commit wrote.
func (t *task) close(clean bool) error {
	var errs []error
	for _, p := range t.procs {
		if err := t.callUser(p.nodeName(), p.close); err != nil {
			errs = append(errs, fmt.Errorf("task %s: close processor %q: %w", t.id, p.nodeName(), err))
		}
	}
	if clean && t.handoff == nil {
		if err := t.flushStores(); err != nil {
			errs = append(errs, err)
		} else if err := t.writeCheckpoint(); err != nil {
			errs = append(errs, err)
		}
	}
	for name, s := range t.stores {
		if s.backend != nil {
			if err := s.backend.Close(); err != nil {
				errs = append(errs, fmt.Errorf("task %s: close store %q: %w", t.id, name, err))
			}
		}
	}
	if t.unlock != nil {
		if err := t.unlock(); err != nil {
			errs = append(errs, err)
		}
		t.unlock = nil
	}
	return errors.Join(errs...)
}
