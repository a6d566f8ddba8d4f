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
	// Latencies of closed tasks, and task counts.
	processLat, punctuateLat, endToEndLat histogram
	created, closed                       uint64

	mu        sync.Mutex
	published Stats
}

// accumulate folds a closing task's counters into the totals.
func (s *unitStats) accumulate(t *task) {
	s.totals.Processed += t.processed
	s.totals.Skipped += t.skipped
	addDropped(&s.totals.Dropped, t.dropped)
	t.dropped = nil
	s.totals.DeadLettered += t.deadLettered
	s.totals.Punctuations += t.punctuations
	s.totals.EnforcedSteps += t.enforcedSteps
	t.processed, t.skipped, t.deadLettered, t.punctuations, t.enforcedSteps = 0, 0, 0, 0, 0
	s.processLat.add(&t.processLat)
	s.punctuateLat.add(&t.punctuateLat)
	s.endToEndLat.add(&t.endToEndLat)
	t.processLat, t.punctuateLat, t.endToEndLat = histogram{}, histogram{}, histogram{}
	s.closed++
}

// publish refreshes the snapshot, at most every 200 ms unless forced.
func (s *unitStats) publish(u *unit, force bool) {
	now := time.Now()
	if !force && now.Sub(s.lastPub) < 200*time.Millisecond {
		return
	}
	s.lastPub = now
	p := s.totals
	p.Dropped = nil // the totals' map is not the snapshot's to share
	addDropped(&p.Dropped, s.totals.Dropped)
	p.Commits, p.Aborts, p.CommitTime = u.cm.commits, u.cm.aborts, u.cm.dur
	p.Restored, p.StandbyRestored, p.ProcessTime = u.cr.restored, u.cr.standbyRestored, s.procDur
	p.RestoreStalls = u.cr.stalls
	p.Skipped += u.rc.skipped.Load()
	p.DeadLettered += u.rc.deadLettered.Load()
	for id := range u.sb.tasks {
		p.Standbys = append(p.Standbys, id)
	}
	p.StandbyLag = u.sb.lag()
	p.InputPauses, p.PackedPeak = u.pauses, int64(u.packedPeak)
	p.TasksCreated, p.TasksClosed = s.created, s.closed
	p.CommitLatency = u.cm.latency.snapshot()
	procLat, punctLat, e2eLat := s.processLat, s.punctuateLat, s.endToEndLat
	p.Tasks = make(map[TaskID]TaskStats, len(u.tm.order))
	for _, t := range u.tm.order {
		p.Processed += t.processed
		p.Skipped += t.skipped
		addDropped(&p.Dropped, t.dropped)
		p.DeadLettered += t.deadLettered
		p.Punctuations += t.punctuations
		p.EnforcedSteps += t.enforcedSteps
		ts := TaskStats{Processed: t.processed, Restoring: t.restoring, ProcessorCount: map[string]uint64{}}
		addDropped(&ts.Dropped, t.dropped)
		for _, in := range t.inputs {
			st := in.state()
			if st.end >= 0 {
				ts.Lag += st.end - max(st.next, 0)
			}
		}
		for _, pr := range t.procs {
			ts.ProcessorCount[pr.nodeName()] = pr.processedCount()
		}
		for _, st := range t.sm.order {
			if t.restoring && st.changelog != "" {
				ts.RestoreRemaining += max(st.restoreEnd-st.restoredTo, 0)
			}
		}
		p.RestoreRemaining += ts.RestoreRemaining
		procLat.add(&t.processLat)
		punctLat.add(&t.punctuateLat)
		e2eLat.add(&t.endToEndLat)
		p.Tasks[t.id] = ts
	}
	p.ProcessLatency, p.PunctuationLatency, p.EndToEndLatency = procLat.snapshot(), punctLat.snapshot(), e2eLat.snapshot()
	s.mu.Lock()
	s.published = p
	s.mu.Unlock()
}

func (s *unitStats) snapshot() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.published
}
