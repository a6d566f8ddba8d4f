package stream

import (
	"sync"
	"time"
)

// unitStats keeps the counters of a unit's closed tasks and publishes, at
// most every 200 ms, the snapshot that App.Stats reads from other
// goroutines: the one state of a unit shared across goroutines, under mu.
type unitStats struct {
	totals  Stats // of tasks already closed
	procDur time.Duration
	lastPub time.Time

	mu        sync.Mutex
	published Stats
}

// accumulate folds a closing task's counters into the totals.
func (s *unitStats) accumulate(t *task) {
	s.totals.Processed += t.processed
	s.totals.Skipped += t.skipped
	s.totals.DeadLettered += t.deadLettered
	s.totals.Punctuations += t.punctuations
	s.totals.EnforcedSteps += t.enforcedSteps
	t.processed, t.skipped, t.deadLettered, t.punctuations, t.enforcedSteps = 0, 0, 0, 0, 0
}

// publish refreshes the snapshot, at most every 200 ms unless forced.
func (s *unitStats) publish(u *unit, force bool) {
	now := time.Now()
	if !force && now.Sub(s.lastPub) < 200*time.Millisecond {
		return
	}
	s.lastPub = now
	p := s.totals
	p.Commits, p.Aborts, p.CommitTime = u.cm.commits, u.cm.aborts, u.cm.dur
	p.Restored, p.StandbyRestored, p.ProcessTime = u.cr.restored, u.cr.standbyRestored, s.procDur
	p.Skipped += u.rc.skipped.Load()
	p.DeadLettered += u.rc.deadLettered.Load()
	for id := range u.sb.tasks {
		p.Standbys = append(p.Standbys, id)
	}
	p.StandbyLag = u.sb.lag()
	p.Tasks = make(map[TaskID]TaskStats, len(u.tm.order))
	for _, t := range u.tm.order {
		p.Processed += t.processed
		p.Skipped += t.skipped
		p.DeadLettered += t.deadLettered
		p.Punctuations += t.punctuations
		p.EnforcedSteps += t.enforcedSteps
		ts := TaskStats{Processed: t.processed, Restoring: t.restoring, ProcessorCount: map[string]uint64{}}
		for _, in := range t.inputs {
			st := in.state()
			if st.hwm >= 0 {
				ts.Lag += st.hwm - max(st.next, 0)
			}
		}
		for _, pr := range t.procs {
			ts.ProcessorCount[pr.nodeName()] = pr.processedCount()
		}
		p.Tasks[t.id] = ts
	}
	s.mu.Lock()
	s.published = p
	s.mu.Unlock()
}

func (s *unitStats) snapshot() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.published
}
