package stream

import (
	"errors"
	"fmt"
	"sort"
)

// newTask instantiates a sub-topology for one partition: its stores (through
// its state manager) and its nodes, children first.
func newTask(id TaskID, topo *Topology, env taskEnv) (*task, error) {
	return newTaskFrom(id, topo, env, nil)
}

// newTaskFrom is newTask taking over the open stores of handoff when it is
// set: a standby being promoted, or the same task rebuilt after an abort.
func newTaskFrom(id TaskID, topo *Topology, env taskEnv, handoff *task) (_ *task, err error) {
	sub := topo.subs[id.Subtopology]
	t := &task{id: id, topo: topo, sub: sub, env: env, streamTime: -1, currentTime: -1}
	if t.sm, err = openStores(t, handoff); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			t.close(false)
		}
	}()

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
			*in.state() = inputState{partition: id.Partition, next: -1, committed: -1, start: -1, end: -1, fetchedTo: -1, readTo: -1, time: -1}
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
	t := &task{id: id, topo: topo, sub: topo.subs[id.Subtopology], env: env, standby: true, streamTime: -1}
	var err error
	if t.sm, err = openStores(t, nil); err != nil {
		return nil, err
	}
	return t, nil
}

// close releases the task: its processors, then its stores. A clean close
// comes right after a commit; a dirty one drops everything since the last
// commit, so the stores stay as that commit left them.
func (t *task) close(clean bool) error {
	var errs []error
	for _, p := range t.procs {
		if err := t.callUser(p.context(), p.close); err != nil {
			errs = append(errs, fmt.Errorf("task %s: close processor %q: %w", t.id, p.nodeName(), err))
		}
	}
	if t.sm != nil {
		errs = append(errs, t.sm.close(clean))
	}
	return errors.Join(errs...)
}
