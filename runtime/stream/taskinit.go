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
func newTask(id TaskID, topo *Topology, env taskEnv) (_ *task, err error) {
	cfg := env.config()
	sub := topo.subs[id.Subtopology]
	t := &task{id: id, topo: topo, sub: sub, env: env, streamTime: -1, currentTime: -1, stores: map[string]*taskStore{}}
	defer func() {
		if err != nil {
			t.close(false)
		}
	}()

	var cp state.Checkpoint
	if len(sub.stores) > 0 {
		t.dir = filepath.Join(cfg.stateDir, cfg.appID, id.String())
		if t.unlock, err = state.LockDir(t.dir); err != nil {
			return nil, fmt.Errorf("task %s: %w", id, err)
		}
		if cp, err = state.ReadCheckpoint(filepath.Join(t.dir, checkpointFile)); err != nil {
			return nil, fmt.Errorf("task %s: %w", id, err)
		}
	}
	for _, def := range sub.stores {
		ts := &taskStore{def: def, partition: id.Partition, t: t}
		switch def.opts.Backend {
		case PebbleBackend:
			ts.backend, err = state.OpenPebble(filepath.Join(t.dir, def.name), state.PebbleOptions{})
			if err != nil {
				return nil, fmt.Errorf("task %s: open store %q: %w", id, def.name, err)
			}
		default:
			ts.backend = state.NewMemory()
		}
		ts.inner = ts.backend
		var logger state.ChangeLogger
		if def.opts.Changelog {
			ts.changelog = changelogTopic(cfg.appID, def.name)
			logger = ts
			// Only a store that survives a restart can trust its checkpoint.
			if def.opts.Backend == PebbleBackend {
				ts.restoredTo = cp[ts.changelog][id.Partition]
			}
			ts.produced.observe(ts.restoredTo)
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
		t.stores[def.name] = ts
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

// writeCheckpoint records, for each persistent logged store, the changelog
// offset its data is complete up to. Call it only after the producer has
// flushed and the stores have been flushed.
func (t *task) writeCheckpoint() error {
	if t.dir == "" {
		return nil
	}
	cp := state.Checkpoint{}
	for _, s := range t.stores {
		if s.changelog == "" || s.def.opts.Backend != PebbleBackend {
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
		var err error
		t.running = p.nodeName()
		t.guard(func() { err = p.close() })
		if err == nil && t.err != nil {
			err = t.err
		}
		t.err = nil
		if err != nil {
			errs = append(errs, fmt.Errorf("task %s: close processor %q: %w", t.id, p.nodeName(), err))
		}
	}
	if clean {
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
