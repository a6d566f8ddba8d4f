package stream

import (
	"context"
	"errors"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// taskManager owns a unit's active tasks (Kafka Streams' TaskManager): what
// the group assigned, the task of each partition, creating tasks on
// assignment (promoting a standby, or taking over the stores of the task
// it replaces), closing them on revocation or loss. Its callbacks run while
// the unit's goroutine is parked in a poll, never during processing.
type taskManager struct {
	u        *unit
	tasks    map[TaskID]*task
	order    []*task // by id: processing, commits and stats go in this order
	inputs   map[string]map[int32]input
	assigned map[string]map[int32]bool // what the group gave, to rebuild tasks after an abort
	retry    map[TaskID]bool           // tasks whose directory was still locked
	// rebuildPending: a transaction was aborted in a rebalance callback;
	// the unit's loop rebuilds the tasks before it routes another record.
	rebuildPending bool
	// meta is the metadata of each assigned partition's last committed
	// offset (fetched with the assignment, then written by this unit's own
	// commits; "" for none): the stream times a task created here resumes.
	meta map[string]map[int32]string
	// fetched is what franz-go's goroutine fetched with the assignment's
	// offsets (onFetched), under fetchedMu, until the unit takes it.
	fetchedMu sync.Mutex
	fetched   map[string]map[int32]string
}

func newTaskManager(u *unit) *taskManager {
	return &taskManager{u: u, tasks: map[TaskID]*task{}, inputs: map[string]map[int32]input{},
		assigned: map[string]map[int32]bool{}, retry: map[TaskID]bool{},
		meta: map[string]map[int32]string{}, fetched: map[string]map[int32]string{}}
}

// onAssigned creates the tasks of newly assigned partitions and starts
// restoring their stores.
func (m *taskManager) onAssigned(ctx context.Context, _ *kgo.Client, assigned map[string][]int32) {
	u := m.u
	if u.closed || u.fatal != nil {
		return
	}
	u.inRebalance++
	u.phase()
	defer func() {
		u.joined = true // franz-go calls this after every join, with or without new partitions
		u.inRebalance--
		u.phase()
	}()
	for topic, parts := range assigned {
		if m.assigned[topic] == nil {
			m.assigned[topic] = map[int32]bool{}
		}
		for _, p := range parts {
			m.assigned[topic][p] = true
		}
	}
	m.create(ctx, assigned, nil)
}

// onRevoked commits and closes the tasks of revoked partitions, so their
// next owner starts exactly where this one stopped.
func (m *taskManager) onRevoked(ctx context.Context, _ *kgo.Client, revoked map[string][]int32) {
	u := m.u
	if u.closed {
		return
	}
	gone := m.tasksOf(revoked)
	if len(gone) == 0 {
		return
	}
	m.unassign(revoked)
	u.inRebalance++
	u.phase()
	defer func() {
		u.inRebalance--
		u.phase()
	}()
	// Every task commits, not only the revoked ones: under exactly-once
	// they share one transaction, and the tasks this unit keeps go on
	// from it (Kafka Streams commits all tasks on revocation too).
	clean := true
	if u.fatal == nil {
		if err := u.cm.commit(ctx); err != nil {
			u.log.Error("commit before revocation failed", "error", err)
			clean = false
			if u.tx != nil {
				// The transaction's outcome is unknown: the loop stops
				// the unit and a fresh one starts from what Kafka has.
				u.fatal = err
			}
		}
	} else {
		clean = false
	}
	if m.rebuildPending {
		clean = false // the commit was aborted: nothing since the last one holds
	}
	m.drop(gone, clean)
	u.log.Info("tasks revoked", "tasks", taskIDs(gone))
}

// onLost drops tasks without committing: another member owns them now.
func (m *taskManager) onLost(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	u := m.u
	if u.closed {
		return
	}
	m.unassign(lost)
	gone := m.tasksOf(lost)
	m.drop(gone, false)
	if u.tx != nil && u.tx.open {
		// The open transaction holds the lost tasks' work: it must not
		// commit. The loop aborts it and rebuilds the tasks left.
		m.rebuildPending = true
	}
	// Out of the group until it joins again (an outage, a session that
	// timed out): not running, whatever tasks it still had.
	u.joined = false
	u.phase()
	if len(gone) > 0 {
		u.log.Warn("tasks lost", "tasks", taskIDs(gone))
	}
}

// create creates the missing tasks for assigned partitions and starts
// restoring their stores; a failure is left in u.fatal. A task in handoff
// takes over the open stores of the task it replaces.
func (m *taskManager) create(ctx context.Context, assigned map[string][]int32, handoff map[TaskID]*task) {
	u := m.u
	var created []*task
	for topic, parts := range assigned {
		sub, ok := u.a.topicSub[topic]
		if !ok {
			continue
		}
		for _, p := range parts {
			id := TaskID{Subtopology: sub, Partition: p}
			if _, ok := m.tasks[id]; ok {
				continue
			}
			from := handoff[id]
			if from == nil {
				from = u.sb.promote(id)
			}
			t, err := newTaskFrom(id, u.a.topo, u, from)
			if errors.Is(err, state.ErrDirLocked) {
				// Another unit of this instance has not let go yet.
				m.retry[id] = true
				continue
			}
			if err != nil {
				u.fatal = err
				return
			}
			delete(m.retry, id)
			// Its stream times come with the group's committed offsets:
			// known here when this unit committed or fetched them already
			// (a rebuild, a retry), or else once the fetch is taken.
			t.timesPending = true
			if err := m.resumeTimes(t); err != nil {
				t.close(false)
				u.fatal = err
				return
			}
			m.u.st.created++
			m.tasks[id] = t
			created = append(created, t)
			for _, in := range t.inputs {
				if m.inputs[in.topic()] == nil {
					m.inputs[in.topic()] = map[int32]input{}
				}
				m.inputs[in.topic()][p] = in
			}
		}
	}
	m.reorder()
	// The stores are opened above while the changelogs are being created
	// (a new topic takes the broker tens of milliseconds to serve), and
	// their restoration waits for them here. Without them the new tasks
	// go, unstarted, as if never created.
	if err := u.a.awaitChangelogs(ctx); err != nil {
		m.drop(created, false)
		if ctx.Err() == nil {
			u.fatal = err
		}
		return
	}
	markersBy := time.Now().Add(markerWait)
	for _, t := range created {
		if err := u.cr.start(ctx, t, markersBy); err != nil {
			u.fatal = err
			return
		}
	}
	if len(created) > 0 {
		u.log.Info("tasks assigned", "tasks", taskIDs(created))
		u.reportState()
		u.st.publish(u, true) // ownership shows in Stats at once
		u.wake()
	}
}

// retryLocked creates the tasks whose directories were locked last time.
func (m *taskManager) retryLocked() error {
	if len(m.retry) == 0 {
		return nil
	}
	parts := map[string][]int32{}
	for id := range m.retry {
		for _, topic := range m.u.a.topo.subs[id.Subtopology].topics {
			if m.assigned[topic][id.Partition] {
				parts[topic] = append(parts[topic], id.Partition)
			}
		}
	}
	clear(m.retry)
	m.create(context.Background(), parts, nil)
	return m.u.fatal
}

// rebuild drops every task without committing, after an aborted
// transaction, and creates them again for the current assignment. The
// aborted writes never reached the stores: each new task takes over its
// predecessor's open stores, at their committed positions, and replays
// nothing from the changelog. Its processors start afresh, and the
// consumer is rewound to the committed offsets. It runs on the unit's
// goroutine, where franz-go wants SetOffsets.
func (m *taskManager) rebuild(ctx context.Context) error {
	m.rebuildPending = false
	if m.u.tx != nil {
		m.u.rc.abort(ctx, false) // when a lost partition left one open
	}
	old := map[TaskID]*task{}
	rewind := map[string]map[int32]kgo.EpochOffset{}
	for _, t := range m.order {
		t.sm.aborted()
		old[t.id] = t
		for _, in := range t.inputs {
			if to := in.state().rewindTo(); to >= 0 {
				if rewind[in.topic()] == nil {
					rewind[in.topic()] = map[int32]kgo.EpochOffset{}
				}
				rewind[in.topic()][t.id.Partition] = kgo.EpochOffset{Epoch: -1, Offset: to}
			}
		}
	}
	m.forget(m.order)
	m.u.cl.SetOffsets(rewind)
	assigned := map[string][]int32{}
	for topic, ps := range m.assigned {
		for p := range ps {
			assigned[topic] = append(assigned[topic], p)
		}
	}
	m.create(ctx, assigned, old)
	for _, t := range old {
		// Its stores are the new task's now (or, for a task no longer
		// assigned, closed here): only its processors are left.
		if err := t.close(false); err != nil {
			m.u.log.Error("close task", "task", t.id.String(), "error", err)
		}
	}
	return m.u.fatal
}

func (m *taskManager) unassign(parts map[string][]int32) {
	m.fetchedMu.Lock()
	defer m.fetchedMu.Unlock()
	for topic, ps := range parts {
		for _, p := range ps {
			delete(m.assigned[topic], p)
			// What the next owner commits supersedes it.
			delete(m.meta[topic], p)
			delete(m.fetched[topic], p)
		}
	}
}

// onFetched keeps the metadata of the committed offsets franz-go fetched for
// newly assigned partitions. It runs on franz-go's goroutine, concurrently
// with the unit, after onAssigned and before any record of those partitions
// can be polled, so the unit takes it (takeFetched) before it routes one.
func (m *taskManager) onFetched(_ context.Context, _ *kgo.Client, resp *kmsg.OffsetFetchResponse) error {
	if len(resp.Groups) == 0 {
		return nil
	}
	m.fetchedMu.Lock()
	defer m.fetchedMu.Unlock()
	for _, rt := range resp.Groups[0].Topics {
		if rt.Topic == "" {
			continue // franz-go names topics it asked for by id
		}
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				continue
			}
			if m.fetched[rt.Topic] == nil {
				m.fetched[rt.Topic] = map[int32]string{}
			}
			m.fetched[rt.Topic][rp.Partition] = deref(rp.Metadata)
		}
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// takeFetched moves what onFetched kept into meta and resumes the stream
// times of the tasks that waited for it. An error is a processor's Init
// failing.
func (m *taskManager) takeFetched() error {
	m.fetchedMu.Lock()
	fetched := m.fetched
	if len(fetched) == 0 {
		m.fetchedMu.Unlock()
		return nil
	}
	// Swapped, so that onFetched never writes the map read below.
	m.fetched = map[string]map[int32]string{}
	m.fetchedMu.Unlock()
	var waiting []*task
	for topic, parts := range fetched {
		sub, ok := m.u.a.topicSub[topic]
		for p, meta := range parts {
			if !m.assigned[topic][p] {
				continue // revoked since
			}
			m.committedMeta(topic, p, meta)
			if t := m.tasks[TaskID{Subtopology: sub, Partition: p}]; ok && t != nil && t.timesPending {
				waiting = append(waiting, t)
			}
		}
	}
	for _, t := range waiting {
		if err := m.resumeTimes(t); err != nil {
			return err
		}
	}
	return nil
}

// committedMeta records the metadata of a partition's committed offset,
// while the partition is assigned here.
func (m *taskManager) committedMeta(topic string, p int32, meta string) {
	if !m.assigned[topic][p] {
		return
	}
	if m.meta[topic] == nil {
		m.meta[topic] = map[int32]string{}
	}
	m.meta[topic][p] = meta
}

// resumeTimes gives a task waiting for its stream times the ones committed
// last, once the metadata of any of its inputs is known (one fetch brings
// them all), and runs its processors' Init if that waited.
func (m *taskManager) resumeTimes(t *task) error {
	if !t.timesPending {
		return nil
	}
	meta := map[string]string{}
	known := false
	for _, in := range t.inputs {
		if s, ok := m.meta[in.topic()][t.id.Partition]; ok {
			meta[in.topic()], known = s, true
		}
	}
	if !known {
		return nil
	}
	return t.restoreTimes(meta)
}

func (m *taskManager) tasksOf(parts map[string][]int32) []*task {
	seen := map[TaskID]bool{}
	var out []*task
	for topic, ps := range parts {
		sub, ok := m.u.a.topicSub[topic]
		if !ok {
			continue
		}
		for _, p := range ps {
			id := TaskID{Subtopology: sub, Partition: p}
			if t := m.tasks[id]; t != nil && !seen[id] {
				seen[id] = true
				out = append(out, t)
			}
		}
	}
	return out
}

// drop takes tasks out and closes them; clean right after a commit.
func (m *taskManager) drop(tasks []*task, clean bool) {
	tasks = slices.Clone(tasks)
	m.forget(tasks)
	for _, t := range tasks {
		if err := t.close(clean); err != nil {
			m.u.log.Error("close task", "task", t.id.String(), "error", err)
		}
	}
	m.u.st.publish(m.u, true)
}

// forget takes tasks out of the books without closing them.
func (m *taskManager) forget(tasks []*task) {
	for _, t := range slices.Clone(tasks) {
		for _, in := range t.inputs {
			delete(m.inputs[in.topic()], t.id.Partition)
		}
		for _, s := range t.sm.order {
			m.u.cr.stop(s)
		}
		m.setRestoring(t, false)
		m.u.st.accumulate(t)
		delete(m.tasks, t.id)
	}
	m.reorder()
}

func (m *taskManager) reorder() {
	m.order = m.order[:0]
	for _, t := range m.tasks {
		m.order = append(m.order, t)
	}
	sort.Slice(m.order, func(i, j int) bool {
		a, b := m.order[i].id, m.order[j].id
		return a.Subtopology < b.Subtopology || a.Subtopology == b.Subtopology && a.Partition < b.Partition
	})
}

// setRestoring is the one place a task's restoring flag changes, keeping
// the unit's phase (and so the App's state) in step with it.
func (m *taskManager) setRestoring(t *task, on bool) {
	if t.restoring == on {
		return
	}
	t.restoring = on
	m.u.phase()
}

// hasWork says whether a task that is not restoring has buffered records.
func (m *taskManager) hasWork() bool {
	for _, t := range m.order {
		if t.restoring {
			continue
		}
		for _, in := range t.inputs {
			if in.buffered() > 0 {
				return true
			}
		}
	}
	return false
}

func (m *taskManager) anyActiveRestoring() bool {
	for _, t := range m.order {
		if t.restoring {
			return true
		}
	}
	return false
}

func taskIDs(ts []*task) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.id.String()
	}
	sort.Strings(out)
	return out
}
