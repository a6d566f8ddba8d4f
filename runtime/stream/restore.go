package stream

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// changelogReader restores stores from their changelogs (Kafka Streams'
// StoreChangelogReader), for active tasks up to the changelog's end and for
// standbys forever, with a second client of its own that belongs to no
// group. It works incrementally inside the unit's loop, so restoring never
// blocks a rebalance; an active task processes nothing until every one of
// its stores has caught up.
type changelogReader struct {
	u         *unit
	cl        *kgo.Client // created on first use
	restoring map[string]map[int32]*taskStore
	ids       map[string]state.TopicID // changelogs' topic ids, asked once

	restored        uint64 // records applied to active tasks' stores
	standbyRestored uint64
	stalls          uint64       // restores read again after restoreStallAfter without moving
	stallCheck      time.Time    // when step last looked for them
	pendingBytes    int          // the stores' pendingBytes, summed
	ready           []*taskStore // stores with a chunk to apply
}

// active says whether any store is being fed.
func (r *changelogReader) active() bool { return len(r.restoring) > 0 }

// start positions each logged store of t at its position and starts
// reading its changelog to the end; with nothing to read it runs the
// processors' Init at once.
func (r *changelogReader) start(ctx context.Context, t *task, markersBy time.Time) error {
	u := r.u
	topics := t.sm.changelogs()
	if len(topics) == 0 {
		return t.initProcessors()
	}
	ends, err := u.a.changelogEnds(ctx, markersBy, topics...)
	if err != nil {
		return fmt.Errorf("task %s: changelog end offsets: %w", t.id, err)
	}
	if err := r.dropStale(ctx, t, ends); err != nil {
		return err
	}
	consume := map[string]map[int32]kgo.Offset{}
	for _, s := range t.sm.order {
		if s.changelog == "" {
			continue
		}
		if s.restoredTo >= s.restoreEnd {
			continue
		}
		u.log.Info("restoring store", "task", t.id.String(), "store", s.def.name, "from", s.restoredTo, "to", s.restoreEnd)
		r.read(s, consume)
	}
	if len(consume) == 0 {
		return t.initProcessors()
	}
	u.tm.setRestoring(t, true)
	t.restore = restoreProgress{began: time.Now(), last: time.Now()}
	if err := r.ensureClient(); err != nil {
		return fmt.Errorf("task %s: restore client: %w", t.id, err)
	}
	r.cl.AddConsumePartitions(consume)
	if testPauseRestore != nil {
		for topic, ps := range consume {
			for p := range ps {
				if testPauseRestore(topic, p) {
					r.cl.PauseFetchPartitions(map[string][]int32{topic: {p}})
				}
			}
		}
	}
	return nil
}

// testPauseRestore, set by a test, says which changelog partitions a
// restore's client stops fetching as it starts (a client that dropped one).
var testPauseRestore func(topic string, partition int32) bool

// follow starts reading a standby's changelogs from its position; it never
// stops until the standby closes.
func (r *changelogReader) follow(ctx context.Context, t *task) error {
	u := r.u
	topics := t.sm.changelogs()
	if len(topics) == 0 {
		return nil
	}
	ends, err := u.a.endOffsets(ctx, u.cfg.guarantee == ExactlyOnce, topics...)
	if err != nil {
		return fmt.Errorf("standby %s: changelog end offsets: %w", t.id, err)
	}
	if err := r.dropStale(ctx, t, ends); err != nil {
		return err
	}
	consume := map[string]map[int32]kgo.Offset{}
	for _, s := range t.sm.order {
		if s.changelog != "" {
			r.read(s, consume)
		}
	}
	if err := r.ensureClient(); err != nil {
		return err
	}
	r.cl.AddConsumePartitions(consume)
	return nil
}

// dropStale sets each logged store's end of restoration from ends and wipes
// the stores whose data the changelog no longer has (stateManager.dropStale):
// an application reset deletes the changelogs, and an instance that was not
// the one reset still holds the old data. After a wipe the task's checkpoint
// is written at once, with the changelogs' current topic ids; otherwise the
// next one (at the end of restoration, or the first commit) records them.
func (r *changelogReader) dropStale(ctx context.Context, t *task, ends kadm.ListedOffsets) error {
	topics := t.sm.changelogs()
	ids, err := r.topicIDs(ctx, topics)
	if err != nil {
		// Positions are still checked; only a recreated changelog written
		// past the store's position again goes unnoticed.
		r.u.log.Warn("changelog topic ids unknown; only positions are checked against the changelogs", "task", t.id.String(), "error", err)
	}
	wipedAny := false
	for _, s := range t.sm.order {
		if s.changelog == "" {
			continue
		}
		end, _ := ends.Lookup(s.changelog, s.partition)
		s.restoreEnd = end.Offset // the lag is known before the first fetch
		id, haveID := ids[s.changelog]
		wiped, err := t.sm.dropStale(t, s, id, haveID)
		if err != nil {
			return err
		}
		wipedAny = wipedAny || wiped
	}
	if !wipedAny {
		return nil
	}
	if err := t.sm.checkpoint(); err != nil {
		return fmt.Errorf("task %s: %w", t.id, err)
	}
	return nil
}

// topicIDs returns the ids of topics, asking the cluster for those not
// known yet: once per changelog and unit, since a changelog cannot be
// deleted and created again while the group has members (App.Reset refuses
// to), short of someone deleting it by hand.
func (r *changelogReader) topicIDs(ctx context.Context, topics []string) (map[string]state.TopicID, error) {
	if r.ids == nil {
		r.ids = map[string]state.TopicID{}
	}
	var missing []string
	for _, topic := range topics {
		if _, ok := r.ids[topic]; !ok {
			missing = append(missing, topic)
		}
	}
	if len(missing) == 0 {
		return r.ids, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	details, err := r.u.a.adm.ListTopics(ctx, missing...)
	if err != nil {
		return r.ids, err
	}
	for _, topic := range missing {
		if d, ok := details[topic]; ok && d.Err == nil && d.ID != (kadm.TopicID{}) {
			r.ids[topic] = state.TopicID(d.ID)
		}
	}
	return r.ids, nil
}

// read makes the client feed s from its changelog, from its position on:
// s joins r.restoring, and its partition joins consume, the partitions to
// add to the client.
func (r *changelogReader) read(s *taskStore, consume map[string]map[int32]kgo.Offset) {
	if r.restoring[s.changelog] == nil {
		r.restoring[s.changelog] = map[int32]*taskStore{}
	}
	r.restoring[s.changelog][s.partition] = s
	s.moved = time.Now()
	if consume[s.changelog] == nil {
		consume[s.changelog] = map[int32]kgo.Offset{}
	}
	consume[s.changelog][s.partition] = kgo.NewOffset().At(s.restoredTo)
}

func (r *changelogReader) ensureClient() error {
	if r.cl != nil {
		return nil
	}
	u := r.u
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(u.cfg.brokers...),
		kgo.ClientID(fmt.Sprintf("%s-%s-%d-restore", u.cfg.appID, u.cfg.instanceID, u.idx)),
		// Transaction markers take offsets: seeing them lets restoration
		// reach the end offset after the last transaction.
		kgo.KeepControlRecords(),
	}, u.cfg.clientOpts...)
	if u.cfg.guarantee == ExactlyOnce {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	r.cl = cl
	return nil
}

// stop stops reading one store's changelog.
func (r *changelogReader) stop(s *taskStore) {
	if r.restoring[s.changelog][s.partition] != s {
		return
	}
	// Records read but not applied are read again by whoever restores
	// the store next, from its position.
	r.drop(s)
	delete(r.restoring[s.changelog], s.partition)
	if len(r.restoring[s.changelog]) == 0 {
		delete(r.restoring, s.changelog)
	}
	r.cl.RemoveConsumePartitions(map[string][]int32{s.changelog: {s.partition}})
}

// step reads the changelogs and applies the chunks that are ready, each
// on a goroutine of its own, reading on meanwhile: a chunk's table is
// written and synced while the next records are fetched and gathered, and
// the stores of a unit whose changelogs end together are written side by
// side. A chunk that becomes ready while others are written starts at
// once rather than at the next step: the partitions of a unit do not end
// together (a fetch brings some of them further than others), and a
// store's last chunk waiting for its neighbours' to be written left a core
// idle at the end of every restore. step returns once every chunk it
// started is applied, so nothing else of the unit sees a store while it is
// written; what it holds unapplied stays bounded by restoreBufferBytes,
// past which it stops reading.
func (r *changelogReader) step() error {
	if len(r.restoring) == 0 {
		return nil
	}
	u := r.u
	if time.Since(r.stallCheck) >= time.Second {
		r.stallCheck = time.Now()
		r.unstick()
	}
	wait := time.Millisecond
	if len(r.ready) == 0 && !u.tm.hasWork() && u.tm.anyActiveRestoring() {
		wait = 20 * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	err := r.poll(ctx)
	cancel()
	if err != nil || len(r.ready) == 0 {
		return errors.Join(err, u.fatal)
	}
	var a applying
	for {
		seen := a.start(r)
		// The fetches go on meanwhile, unless too much is held already.
		if err != nil || r.pendingBytes >= restoreBufferBytes {
			break
		}
		ctx, running := a.pollContext(seen)
		if !running {
			break
		}
		if ctx != nil {
			err = r.poll(ctx)
			a.endPoll()
		}
	}
	a.wg.Wait()
	var errs []error
	for _, j := range a.jobs {
		r.pendingBytes -= j.bytes
		if j.err != nil {
			errs = append(errs, j.err)
		} else {
			r.applied(j.restoreJob)
		}
		if s := j.s; s.pending.recs == nil && cap(j.buf.recs) <= 1024 {
			// A small slice serves the next records (a standby that
			// caught up reads a few at a time); a chunk's is pooled.
			s.pending.recs = j.buf.recs[:0]
		} else {
			j.buf.releaseRecs()
		}
	}
	return errors.Join(err, errors.Join(errs...), u.fatal)
}

// applying is the chunks one step writes: started from the unit's
// goroutine (start), each written on a goroutine of its own, which ends
// the poll under way when it is done, so that the step can start a chunk
// that waited for it, or stop reading once nothing is written.
type applying struct {
	wg   sync.WaitGroup
	jobs []*appliedJob // in the order started, a store's in its order; the step's goroutine only
	last map[*taskStore]*appliedJob

	mu       sync.Mutex
	finished int                // jobs done so far (those not done: len(jobs) - finished)
	cancel   context.CancelFunc // of the poll under way
}

type appliedJob struct {
	restoreJob
	err  error       // read once done is set
	done atomic.Bool // set by the job's goroutine when it is written
}

// start starts the ready chunks that may be written now, and returns how
// many jobs were done when it looked (for pollContext). A store's chunk
// waits while the store's previous one is being written (one writer per
// store, positions in order) or failed (its position would cover the
// failed records), and an active task's store gets no chunk after the one
// that ends its restore: records past the end are left to the step that
// ends it, which drops them (stop) as before.
func (a *applying) start(r *changelogReader) int {
	a.mu.Lock()
	seen := a.finished
	a.mu.Unlock()
	kept := r.ready[:0]
	for _, s := range r.ready {
		if prev := a.last[s]; prev != nil && (!prev.done.Load() || prev.err != nil || !s.t.standby && prev.to >= s.restoreEnd) {
			kept = append(kept, s)
			continue
		}
		j := &appliedJob{restoreJob: restoreJob{s: s, buf: s.pending, to: s.pendingTo, bytes: s.pendingBytes}}
		s.pending, s.pendingBytes, s.ready = restoreBuf{}, 0, false
		if a.last == nil {
			a.last = map[*taskStore]*appliedJob{}
		}
		a.last[s] = j
		a.jobs = append(a.jobs, j)
		slots := r.u.a.applySlots
		a.wg.Go(func() {
			slots <- struct{}{}
			j.err = j.apply()
			<-slots
			j.done.Store(true)
			a.mu.Lock()
			a.finished++
			if a.cancel != nil {
				a.cancel() // the step may start a chunk that waited, or stop
			}
			a.mu.Unlock()
		})
	}
	clear(r.ready[len(kept):])
	r.ready = kept
	return seen
}

// pollContext returns the context of the next poll, which ends when a job
// is done: running false when no job is being written any more (the step
// is over), ctx nil when one was done since start looked (start again).
func (a *applying) pollContext(seen int) (ctx context.Context, running bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.finished == len(a.jobs) {
		return nil, false
	}
	if a.finished != seen {
		return nil, true
	}
	ctx, a.cancel = context.WithCancel(context.Background())
	return ctx, true
}

func (a *applying) endPoll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.cancel()
	a.cancel = nil
}

// poll reads the changelogs until ctx ends or records come, and adds the
// records to their stores' pending ones. A store whose pending records
// make a chunk, or reach the end of its changelog, joins r.ready; every
// store with pending records does when they hold too much together.
func (r *changelogReader) poll(ctx context.Context) error {
	u := r.u
	// Whole fetches: franz-go sends a broker its next fetch only once the
	// last one is drained, and a cap of 100,000 records (before) left the
	// tail of a larger fetch (four partitions' megabyte each of the
	// bench's window changelog) to the next step, delaying the next fetch
	// by a step. A fetch is bounded by franz-go's FetchMaxBytes, and what
	// the stores hold by restoreBufferBytes after each poll.
	fetches := r.cl.PollFetches(ctx)
	var ferr error
	fetches.EachError(func(topic string, p int32, err error) {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || errors.Is(err, kgo.ErrClientClosed) {
			return
		}
		if unrecoverableFetch(err) {
			if ferr == nil {
				ferr = fmt.Errorf("restore %s/%d: %w", topic, p, err)
			}
			return
		}
		u.log.Warn("changelog fetch error; retrying", "topic", topic, "partition", p, "error", err)
	})
	if ferr != nil {
		return ferr
	}
	fetches.EachPartition(func(p kgo.FetchTopicPartition) {
		s := r.restoring[p.Topic][p.Partition]
		if s == nil || len(p.Records) == 0 {
			return
		}
		if s.t.standby && p.HighWatermark >= 0 {
			s.restoreEnd = p.HighWatermark // how far a standby has to go
		}
		b := &s.pending
		if need := len(b.recs) + len(p.Records); need > cap(b.recs) {
			// Sized once for the whole chunk where the first fetch tells
			// how large its records are: growing a slice of 100,000s of
			// records by doubling copied each of them twice on average.
			// Doubled after that, not by append's quarter.
			grown := takeRecs(max(2*cap(b.recs), need, 1024, chunkRecords(s, p.Records)))
			b.recs = append(grown, b.recs...)
		}
		fetched := 0
		for _, rec := range p.Records {
			fetched += len(rec.Key) + len(rec.Value)
		}
		for _, rec := range p.Records {
			if !rec.Attrs.IsControl() {
				b.add(rec.Key, rec.Value, rec.Timestamp.UnixMilli(), fetched)
				n := len(rec.Key) + len(rec.Value) + 16
				s.pendingBytes += n
				r.pendingBytes += n
			}
		}
		s.pendingTo = p.Records[len(p.Records)-1].Offset + 1
		s.moved = time.Now()
		// At the changelog's end a chunk is applied even with no record
		// (transaction markers only): its position ends the restore.
		if !s.ready && (s.pendingTo >= s.restoreEnd || s.pendingBytes >= restoreChunkBytes) {
			s.ready = true
			r.ready = append(r.ready, s)
		}
	})
	if r.pendingBytes >= restoreBufferBytes {
		// Too much held across the stores: every one applies what it has.
		for _, ps := range r.restoring {
			for _, s := range ps {
				if !s.ready && len(s.pending.recs) > 0 {
					s.ready = true
					r.ready = append(r.ready, s)
				}
			}
		}
	}
	return nil
}

// chunkRecords estimates how many changelog records of s make a chunk,
// from the sizes of recs (the fetch that starts it): no more than the
// offsets left to the end of the changelog, as far as it is known.
func chunkRecords(s *taskStore, recs []*kgo.Record) int {
	if len(s.pending.recs) > 0 || len(recs) == 0 {
		return 0
	}
	bytes := 0
	for _, rec := range recs {
		bytes += len(rec.Key) + len(rec.Value) + 16
	}
	n := int64(restoreChunkBytes/max(bytes/len(recs), 1)) + 1
	if left := s.restoreEnd - recs[0].Offset; left > 0 {
		n = min(n, left)
	}
	return int(min(n, 1<<20))
}

// restoreChunkBytes is how much of a store's changelog a restore reads
// before it applies it (or less, at the end of the changelog): one write
// to the store per chunk, which the Pebble backend makes a sorted table it
// ingests, written once, rather than many small batches through its log
// and memtables. restoreBufferBytes bounds what the stores being restored
// hold unapplied together. Sizes count keys and values (plus 16 bytes each);
// the records they come from weigh more.
var (
	restoreChunkBytes  = 8 << 20
	restoreBufferBytes = 32 << 20
) // variables for tests

// restoreApplySlots is how many restore chunks an App writes at once, its
// units' together: one more than the processors Go runs on (a chunk's
// table is synced and ingested, waiting on the disk, while the others
// use them). Writing a chunk is work for a processor throughout (the
// order of its keys, the table's blocks), and when every chunk of a
// restore becomes ready at its end, as a window store's whole changelog
// in one chunk per partition does, writing all of them at once only
// shared the processors among more working sets, and held all of their
// changes and keys at once, which the collector then scanned: with the
// bench's eight partitions on two cores, three at a time restored window
// stores some 10% faster than eight. A variable for tests.
var restoreApplySlots = func() int { return runtime.GOMAXPROCS(0) + 1 }

// restoreJob is one chunk of a store's changelog to apply, up to offset
// to (exclusive); bytes is what it counts in pendingBytes.
type restoreJob struct {
	s     *taskStore
	buf   restoreBuf
	to    int64
	bytes int
}

// apply writes the chunk to its store, then the position it reaches:
// written after the changes it covers, unsynced, so an interrupted
// restore resumes from what survived. It runs on a goroutine of its own
// and touches nothing but the store.
func (j restoreJob) apply() error {
	s := j.s
	changes := j.buf.changes()
	err := s.def.kind.Restore(s.inner, changes)
	releaseChanges(changes) // a store keeps copies of what it was given
	j.buf.releaseBlocks()
	if err != nil {
		return fmt.Errorf("task %s: restore store %q: %w", s.t.id, s.def.name, err)
	}
	if ps, ok := s.inner.(state.Positioned); ok {
		if err := ps.SetPosition(j.to); err != nil {
			return fmt.Errorf("task %s: restore store %q: record position: %w", s.t.id, s.def.name, err)
		}
	}
	return nil
}

// applied records that chunk j was applied, and ends the restore of an
// active task's store that reached the end of its changelog.
func (r *changelogReader) applied(j restoreJob) {
	u, s := r.u, j.s
	n := uint64(len(j.buf.recs))
	s.restoredTo = j.to
	s.moved = time.Now()
	if s.t.standby {
		r.standbyRestored += n
		return
	}
	r.restored += n
	s.t.restore.records += n
	if s.restoredTo >= s.restoreEnd {
		r.finish(s)
	} else if time.Since(s.t.restore.last) >= restoreLogInterval {
		s.t.restore.last = time.Now()
		remaining := int64(0)
		for _, st := range s.t.sm.order {
			remaining += max(st.restoreEnd-st.restoredTo, 0)
		}
		elapsed := time.Since(s.t.restore.began)
		u.log.Info("restoring task", "task", s.t.id.String(), "restored", s.t.restore.records, "remaining", remaining,
			"records_per_s", int64(float64(s.t.restore.records)/elapsed.Seconds()))
	}
}

// restoreStallAfter is how long an active task's restore may go without
// reading or applying a record before unstick reads its changelog again.
var restoreStallAfter = 15 * time.Second // a variable for tests

// unstick reads again, from the store's position, the changelog of every
// active task's store whose restore has not moved for restoreStallAfter
// though its end is ahead: the records up to that end are committed, so
// a fetch always has some to give, unless the broker is away (reading
// again costs nothing then) or the client stopped asking for the
// partition (once in CI, a race run on kfake: two of eight tasks given
// at once restored nothing for 90 s while the other six were ready in
// milliseconds). It says so, with what the store had reached.
func (r *changelogReader) unstick() {
	for _, ps := range r.restoring {
		for _, s := range ps {
			if s.t.standby || time.Since(s.moved) < restoreStallAfter || s.restoredTo >= s.restoreEnd {
				continue
			}
			r.u.log.Warn("changelog restore made no progress; reading the changelog again from the store's position",
				"task", s.t.id.String(), "store", s.def.name, "topic", s.changelog, "partition", s.partition,
				"position", s.restoredTo, "read_to", s.pendingTo, "end", s.restoreEnd,
				"idle", time.Since(s.moved).Round(time.Millisecond))
			r.stalls++
			r.drop(s)
			tp := map[string][]int32{s.changelog: {s.partition}}
			r.cl.RemoveConsumePartitions(tp)
			r.cl.ResumeFetchPartitions(tp) // the reader pauses nothing; a test does
			r.cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{s.changelog: {s.partition: kgo.NewOffset().At(s.restoredTo)}})
			s.moved = time.Now()
		}
	}
}

// drop forgets the pending records of s, unapplied (its restore stops),
// and their blocks. A small slice of records is kept for the next ones (a
// standby that caught up reads a few at a time), a chunk's is not: a store
// may stay idle for long.
func (r *changelogReader) drop(s *taskStore) {
	r.pendingBytes -= s.pendingBytes
	s.pendingBytes = 0
	if s.ready {
		s.ready = false
		r.ready = slices.DeleteFunc(r.ready, func(o *taskStore) bool { return o == s })
	}
	if cap(s.pending.recs) > 1024 {
		s.pending = restoreBuf{}
		return
	}
	s.pending = restoreBuf{recs: s.pending.recs[:0]}
}

// restoringAny says whether a store of t is still being fed.
func (r *changelogReader) restoringAny(t *task) bool {
	for _, s := range t.sm.order {
		if r.restoring[s.changelog][s.partition] == s {
			return true
		}
	}
	return false
}

// finish ends one store's restoration; the last one of a task records the
// positions reached and runs the processors' Init.
func (r *changelogReader) finish(s *taskStore) {
	u, t := r.u, s.t
	r.stop(s)
	if r.restoringAny(t) {
		return
	}
	u.tm.setRestoring(t, false)
	took := time.Since(t.restore.began)
	u.log.Info("restored task", "task", t.id.String(), "records", t.restore.records, "duration", took.Round(time.Millisecond),
		"records_per_s", int64(float64(t.restore.records)/max(took.Seconds(), 1e-6)))
	// Record the position reached, so a restart does not restore again.
	if err := t.sm.checkpoint(); err != nil && u.fatal == nil {
		u.fatal = err
		return
	}
	u.st.publish(u, true) // the end of the restore shows in Stats at once
	if err := t.initProcessors(); err != nil && u.fatal == nil {
		u.fatal = err
	}
}

func (r *changelogReader) close() {
	if r.cl != nil {
		r.cl.Close()
	}
}

// restoreLogInterval is how often a restoring task logs its progress.
const restoreLogInterval = 10 * time.Second

// restoreProgress is what a task's restoration logs: how far, how fast.
type restoreProgress struct {
	began, last time.Time
	records     uint64
}
