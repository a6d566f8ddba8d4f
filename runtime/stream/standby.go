package stream

import (
	"context"
	"errors"
	"time"

	"github.com/kgen-dev/kgen/runtime/state"
)

// standbyManager keeps the unit's standby tasks (Kafka Streams'
// StandbyTask): warm copies of other instances' tasks, stores only, that
// follow their changelogs so that a task moving here replays only the tail.
// The leader's assignment says which; the balancer hands them over.
type standbyManager struct {
	u       *unit
	tasks   map[TaskID]*task
	version int // of the balancer's standby list last applied
}

// reconcile follows the standby tasks of the latest assignment.
func (m *standbyManager) reconcile() error {
	u := m.u
	ids, actives, version := u.bal.standbyTasks()
	if version == m.version {
		if time.Since(u.lastReport) > 5*time.Second {
			u.reportState()
		}
		return nil
	}
	m.version = version
	want := map[TaskID]bool{}
	for _, id := range ids {
		// The assignment comes from another member: a sub-topology this
		// instance does not know (a rolling upgrade) is skipped.
		if id.Subtopology < 0 || id.Subtopology >= len(u.a.topo.subs) || id.Partition < 0 {
			u.log.Warn("standby task of an unknown sub-topology in the assignment; skipping it", "task", id.String())
			continue
		}
		// Nor is one without a changelog, which an older leader may
		// still send: it would open stores that follow nothing.
		if u.tm.tasks[id] == nil && u.a.topo.subs[id.Subtopology].logged() {
			want[id] = true
		}
	}
	for id, sb := range m.tasks {
		// A standby about to become active stays warm for its promotion,
		// which the assignment callback does.
		if !want[id] && !actives[id] {
			m.close(sb)
		}
	}
	if len(want) > 0 {
		if err := u.a.awaitChangelogs(context.Background()); err != nil {
			return err
		}
	}
	for id := range want {
		if m.tasks[id] != nil {
			continue
		}
		sb, err := newStandby(id, u.a.topo, u)
		if errors.Is(err, state.ErrDirLocked) {
			m.version = -1 // try again next window
			continue
		}
		if err != nil {
			return err
		}
		if err := u.cr.follow(context.Background(), sb); err != nil {
			sb.close(false)
			return err
		}
		m.tasks[id] = sb
		u.log.Info("standby task", "task", id.String())
	}
	u.reportState()
	return nil
}

// promote hands over the standby of task id, if this unit has one, to the
// active task being created: it stops following its changelogs, and the
// active task takes its warm stores and replays only the tail.
func (m *standbyManager) promote(id TaskID) *task {
	sb := m.tasks[id]
	if sb == nil {
		return nil
	}
	for _, s := range sb.sm.order {
		m.u.cr.stop(s)
	}
	delete(m.tasks, id)
	m.u.log.Info("promoting standby", "task", id.String())
	return sb
}

// checkpoint makes the standbys' progress survive a restart.
func (m *standbyManager) checkpoint() {
	for _, sb := range m.tasks {
		if err := sb.sm.checkpoint(); err != nil {
			m.u.log.Warn("checkpoint standby", "task", sb.id.String(), "error", err)
		}
	}
}

func (m *standbyManager) close(t *task) {
	for _, s := range t.sm.order {
		m.u.cr.stop(s)
	}
	if err := t.sm.checkpoint(); err != nil {
		m.u.log.Warn("checkpoint standby", "task", t.id.String(), "error", err)
	}
	if err := t.close(true); err != nil {
		m.u.log.Error("close standby", "task", t.id.String(), "error", err)
	}
	delete(m.tasks, t.id)
}

func (m *standbyManager) closeAll() {
	for _, sb := range m.tasks {
		m.close(sb)
	}
}

// lag is how many changelog records the standbys have yet to apply.
func (m *standbyManager) lag() int64 {
	var n int64
	for _, sb := range m.tasks {
		for _, st := range sb.sm.order {
			if st.changelog != "" {
				n += max(st.restoreEnd-st.restoredTo, 0)
			}
		}
	}
	return n
}
