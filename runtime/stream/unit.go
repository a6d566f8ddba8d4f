package stream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	// window bounds how long a unit keeps rebalances blocked while it works.
	window = 50 * time.Millisecond
	// batch is how many records a task processes before the unit moves on.
	batch = 500
)

// unit is one processing goroutine (Kafka Streams' StreamThread): a group
// member with its own client, running its loop. Its parts each own their
// state: the task manager (assignment, tasks), the changelog reader
// (restoration), the standby manager, the record collector (everything
// produced), the committer and the stats. Everything but the collector's
// atomics and the published stats is owned by the unit's goroutine;
// franz-go's BlockRebalanceOnPoll keeps the rebalance callbacks from
// running while the goroutine is between a poll and AllowRebalance, which
// is where it works.
type unit struct {
	a   *App
	idx int
	cfg *config
	log *slog.Logger
	cl  *kgo.Client
	tx  *transaction // exactly-once only

	bal *coPartitionBalancer
	rc  *collector
	tm  *taskManager
	cr  *changelogReader
	sb  *standbyManager
	cm  *committer
	st  *unitStats
	pg  *purger

	// qmu is the query lock (query.go): the unit holds it, exclusively,
	// while it changes which tasks and stores there are or what state they
	// are in (the rebalance callbacks, the start of each step: routing,
	// task creation, restoration, standbys; commits; shutdown), and every
	// query holds it shared while it reads, so it finds a task whole. The
	// unit does not hold it while its tasks process records: queries of a
	// queryable store (StoreOptions.Queryable) read it meanwhile, each of
	// the store's operations locking the store (taskStore.shared).
	qmu sync.RWMutex
	// pmu is the processing lock, which a query of a store that is not
	// queryable takes before qmu: the unit holds it while it works (from a
	// poll's return to AllowRebalance), so such a query waits until the
	// unit polls or lets it in between tasks (yieldToQueries).
	pmu sync.Mutex
	// queriesWaiting counts queries waiting for pmu: the unit lets them
	// in between tasks (yieldToQueries) instead of at the end of its
	// window, 50 ms away.
	queriesWaiting atomic.Int32

	// paused are the input partitions flowControl paused (flow.go);
	// pauses counts how often it paused one, and packedPeak is the most
	// bytes it saw one input hold packed.
	paused     map[topicPartition]struct{}
	pauses     uint64
	packedPeak int

	fatal      error // set by a rebalance callback, returned by the loop
	closed     bool
	idle       bool // the last step processed nothing
	lastReport time.Time
	// joined is true from the first assignment until the unit's
	// membership is lost; inRebalance counts rebalance callbacks running.
	joined      bool
	inRebalance int

	// wakeMu guards pollCancel, which ends the poll under way, and woken,
	// set when wake found none (the next one returns at once).
	wakeMu     sync.Mutex
	pollCancel context.CancelFunc
	woken      bool
}

func newUnit(a *App, idx int) (*unit, error) {
	u := &unit{
		a: a, idx: idx, cfg: &a.cfg,
		log: a.cfg.logger.With("app", a.cfg.appID, "instance", a.cfg.instanceID, "unit", idx),
		bal: &coPartitionBalancer{subs: a.topo.subs, standbys: a.cfg.standbys},
	}
	u.tm = newTaskManager(u)
	u.cr = &changelogReader{u: u, restoring: map[string]map[int32]*taskStore{}}
	u.sb = &standbyManager{u: u, tasks: map[TaskID]*task{}}
	u.cm = &committer{u: u, lastCommit: a.cfg.now()}
	u.st = &unitStats{}
	u.pg = &purger{u: u}
	// Everything a rebalance callback may touch exists before the client:
	// the group may assign partitions before the first poll.
	u.rc = newCollector(u.cfg, u.log, u.partitions, func(topic string) int { return a.maxMessageBytes[topic] })
	u.bal.log = u.log
	u.reportState()
	a.unitPhase(idx, false) // a new unit has yet to join
	isolation := kgo.ReadUncommitted()
	if a.cfg.guarantee == ExactlyOnce {
		isolation = kgo.ReadCommitted()
	}
	opts := append(unitMemoryOpts(a.topo.joins()), []kgo.Opt{
		// Read when the producer first meets a partition, after
		// prepareTopics: ClientOpts may override it.
		kgo.ProducerBatchMaxBytesFn(a.batchMaxBytes),
		kgo.SeedBrokers(a.cfg.brokers...),
		kgo.ClientID(fmt.Sprintf("%s-%s-%d", a.cfg.appID, a.cfg.instanceID, idx)),
		kgo.ConsumerGroup(a.cfg.appID),
		kgo.ConsumeTopics(a.topo.SourceTopics()...),
		kgo.Balancers(u.bal),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(isolation),
		// route reads how far a partition was fetched from them.
		kgo.KeepControlRecords(),
		// Every fetch answer lists every partition fetched from that
		// broker with its end offset, not only the ones that changed, so
		// that a task learns the end of an input with no new records: a
		// task waits with no deadline for an input behind its end, and
		// only FetchGrace for one whose end it does not know.
		kgo.DisableFetchSessions(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		// Kafka's own consumer default. franz-go's 5 s lets an idle long
		// poll delay newly assigned partitions (a failover) by that much.
		kgo.FetchMaxWait(500 * time.Millisecond),
		// A crashed instance's tasks move once its session times out;
		// franz-go's 45 s default would leave them idle that long.
		kgo.SessionTimeout(10 * time.Second),
		kgo.HeartbeatInterval(time.Second),
		kgo.OnPartitionsAssigned(u.queryLocked(u.tm.onAssigned)),
		kgo.OnPartitionsRevoked(u.queryLocked(u.tm.onRevoked)),
		kgo.OnPartitionsLost(u.queryLocked(u.tm.onLost)),
		// The committed offsets' metadata carries the stream times.
		kgo.OnOffsetsFetched(u.tm.onFetched),
	}...)
	var static *string // group.instance.id
	if a.cfg.static {
		id := fmt.Sprintf("%s-%d", a.cfg.instanceID, idx)
		static = &id
		opts = append(opts, kgo.InstanceID(id))
	}
	var tx *transaction
	if a.cfg.guarantee == ExactlyOnce {
		// Stable across restarts, unique per unit: a restarted unit fences
		// its own zombie and aborts its unfinished transaction. Committed
		// offsets are fetched with require_stable (KIP-447), which franz-go
		// always asks for: a partition's new owner waits for the old owner's
		// transaction instead of processing its input again.
		tx = &transaction{id: fmt.Sprintf("%s-%s-%d", a.cfg.appID, a.cfg.instanceID, idx), group: a.cfg.appID, instance: static, log: u.log}
		opts = append(opts,
			kgo.TransactionalID(tx.id),
			// Longer than a rebalance that waits out a dead member's session,
			// so a transaction left open across it is not rolled back.
			kgo.TransactionTimeout(30*time.Second))
	}
	cl, err := kgo.NewClient(append(opts, a.cfg.clientOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("unit %d: %w", idx, err)
	}
	u.cl, u.tx = cl, tx
	if tx != nil {
		tx.cl = cl
	}
	u.rc.use(u.cl, u.tx)
	return u, nil
}

// queryLocked runs a rebalance callback under the query lock: it creates
// and closes tasks, which a query must not see half done.
func (u *unit) queryLocked(fn func(context.Context, *kgo.Client, map[string][]int32)) func(context.Context, *kgo.Client, map[string][]int32) {
	return func(ctx context.Context, cl *kgo.Client, parts map[string][]int32) {
		u.qmu.Lock()
		defer u.qmu.Unlock()
		fn(ctx, cl, parts)
	}
}

// yieldToQueries lets the queries waiting for the processing lock read, at a
// point where every task's stores hold whole records' writes. Unlock alone
// would not let them in: the unit would take the mutex back before a
// woken waiter runs, until a waiter has waited a millisecond (the mutex's
// starvation mode). So the unit steps aside until the waiters it saw have
// the lock, a bounded number of times: a read takes microseconds.
func (u *unit) yieldToQueries() {
	if u.queriesWaiting.Load() > 0 {
		u.pmu.Unlock()
		for i := 0; i < yieldSpins && u.queriesWaiting.Load() > 0; i++ {
			runtime.Gosched()
		}
		u.pmu.Lock()
	}
}

// yieldSpins bounds how many times yieldToQueries gives its processor
// away waiting for the queries to take the lock.
const yieldSpins = 50

// phase tells the App whether this unit is running: in the group, outside
// a rebalance, with no active task restoring.
func (u *unit) phase() {
	u.a.unitPhase(u.idx, u.joined && u.inRebalance == 0 && !u.tm.anyActiveRestoring())
}

// The unit is its tasks' env: what they produce goes to its collector.

func (u *unit) config() *config { return u.cfg }

// global returns the App's global table named name; the App fills them
// before it creates any unit.
func (u *unit) global(name string) *globalStore { return u.a.globals[name] }

func (u *unit) partitions(topic string) int32 { return u.a.partitions[topic] }

func (u *unit) send(t *task, o *outRecord) { u.rc.send(t, o) }

func (u *unit) deadLetter(topic string, in *kgo.Record, node string, cause error) {
	u.rc.sendDeadLetter(topic, in, node, cause)
}

func (u *unit) logChange(s *taskStore, key, value []byte, timestamp int64) {
	u.rc.logChange(s, key, value, timestamp)
}

// run is the unit's loop: poll, route records to tasks, restore, process,
// punctuate, commit; rebalances happen between windows.
func (u *unit) run(ctx context.Context) (err error) {
	defer func() {
		// A record that fails stops the app and closes its tasks dirty, as
		// Kafka Streams does: nothing since the last commit reaches the
		// stores, the changelogs or the committed offsets, so a restart
		// begins at the last commit with the state it left (a commit here
		// would keep the failed record's own writes while its offset is
		// not done, and every restart would apply them again).
		var restart *restartError
		if errors.As(err, &restart) {
			u.abandon()
			return
		}
		if cerr := u.shutdown(err == nil); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if u.tx == nil {
		// The idempotent producer's id is otherwise fetched at the first
		// produce, one more round trip before the first output; get it
		// while the group is being joined. Failing here costs nothing: the
		// first produce tries again.
		go func() { _, _, _ = u.cl.ProducerID(ctx) }()
	}
	wait, budget := firstPollWait, u.cfg.bufferRecords
	for ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, wait)
		u.wakeMu.Lock()
		if u.woken {
			cancel()
		}
		u.pollCancel, u.woken = cancel, false
		u.wakeMu.Unlock()
		fetches := u.cl.PollRecords(pctx, budget)
		u.wakeMu.Lock()
		u.pollCancel, u.woken = nil, false
		u.wakeMu.Unlock()
		cancel()
		// Queries of stores that are not queryable wait while the unit
		// works, and read while it waits in the poll above.
		u.pmu.Lock()
		start := time.Now()
		for {
			if err := u.step(fetches); err != nil {
				u.pmu.Unlock()
				u.cl.AllowRebalance()
				return err
			}
			u.flowControl()
			// Records held back (an input waits for its fetch, as Kafka
			// Streams' partition group) are no work: spinning on them
			// took a core from franz-go, which decodes the fetch they
			// wait for. The poll below blocks for it instead. (Not while
			// changelogs are read: their reader is stepped here.)
			if ctx.Err() != nil || time.Since(start) > window || !u.tm.hasWork() || u.idle && fetches.Empty() && !u.cr.active() {
				break
			}
			fetches = u.cl.PollRecords(nil, u.pollBudget())
		}
		u.st.publish(u, false)
		// Decided here: after AllowRebalance the callbacks may change the tasks.
		wait, budget = u.pollWait(), u.pollBudget()
		u.pmu.Unlock()
		u.cl.AllowRebalance()
	}
	return nil
}

// wake ends the unit's poll under way, or the next one if it is between
// polls: a rebalance callback that gave it tasks calls it, so that their
// restores start now rather than when a poll of inputs that may have
// nothing yet times out (the first one, before the unit joined, waits up
// to 100 ms: the bench's restores took their first step 70-80 ms after
// their assignment).
func (u *unit) wake() {
	u.wakeMu.Lock()
	defer u.wakeMu.Unlock()
	if u.pollCancel != nil {
		u.pollCancel()
		return
	}
	u.woken = true
}

// firstPollWait is how long the unit's first poll may block (before it
// joined the group, there is nothing else to do). A variable for tests.
var firstPollWait = 100 * time.Millisecond

// pollWait is how long the first poll of a window may block.
func (u *unit) pollWait() time.Duration {
	if u.tm.hasWork() || u.tm.anyActiveRestoring() {
		return time.Millisecond
	}
	if u.cr.active() {
		return 10 * time.Millisecond // standbys follow their changelogs
	}
	wait := 100 * time.Millisecond
	now := u.cfg.now()
	if d := u.cm.lastCommit.Add(u.cfg.commitInterval).Sub(now); d < wait {
		wait = d
	}
	for _, t := range u.tm.order {
		for _, s := range t.schedules {
			if s.typ == WallClock && !s.cancelled {
				if d := time.Duration(s.next-now.UnixMilli()) * time.Millisecond; d < wait {
					wait = d
				}
			}
		}
	}
	return max(wait, time.Millisecond)
}

// step does one round of work on what the last poll returned, under the
// processing lock: the changes of tasks and stores under the query lock
// too (prepare and the commit), the processing of records without it.
func (u *unit) step(fetches kgo.Fetches) error {
	if more, err := u.prepare(fetches); !more || err != nil {
		return err
	}
	now := u.cfg.now()
	processed, err := u.process(now)
	u.idle = processed == 0
	if err != nil {
		return err
	}
	if processed > 0 {
		u.cm.uncommitted = true
	}
	if u.cm.due(now, processed) {
		// The commit may let queries in while it waits on Kafka.
		u.qmu.Lock()
		u.cm.queriesIn = true
		err := u.cm.commit(context.Background())
		u.cm.queriesIn = false
		u.qmu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// prepare routes the polled records to their tasks and moves the tasks
// along (creation, restoration, standbys), under the query lock; more is
// false when the step has nothing more to do (the tasks were rebuilt).
func (u *unit) prepare(fetches kgo.Fetches) (more bool, err error) {
	u.qmu.Lock()
	defer u.qmu.Unlock()
	if u.fatal != nil {
		return false, u.fatal
	}
	if err := u.rc.err(); err != nil {
		return false, err
	}
	if u.tm.rebuildPending {
		// What this poll returned follows positions the rewind discards.
		return false, u.tm.rebuild(context.Background())
	}
	// Before routing: a record of a new partition follows the fetch of its
	// committed offset, and its task resumes the stream times committed
	// with it before it processes anything.
	if err := u.tm.takeFetched(); err != nil {
		return false, err
	}
	if err := u.route(fetches); err != nil {
		return false, err
	}
	if err := u.tm.retryLocked(); err != nil {
		return false, err
	}
	if err := u.sb.reconcile(); err != nil {
		return false, err
	}
	return true, u.cr.step()
}

// process runs the tasks that are not restoring, a batch each, and their
// wall-clock punctuations. It changes no task or store but through the
// tasks' processors, so queries of queryable stores read meanwhile.
func (u *unit) process(now time.Time) (int, error) {
	processed := 0
	began := time.Now()
	defer func() { u.st.procDur += time.Since(began) }()
	for _, t := range u.tm.order {
		if t.restoring {
			continue
		}
		if t.timesPending {
			if !t.buffered() {
				continue
			}
			// Not expected: records come after their offsets' fetch. Go on
			// rather than stall, with the stream times starting afresh.
			u.log.Warn("records before the committed stream times; starting them afresh", "task", t.id.String())
			if err := t.restoreTimes(nil); err != nil {
				return processed, err
			}
		}
		n, err := t.process(batch, now)
		processed += n
		if err != nil {
			return processed, err
		}
		if err := t.punctuate(WallClock, now.UnixMilli()); err != nil {
			return processed, err
		}
		u.yieldToQueries()
	}
	return processed, nil
}

// route hands each partition's fetched records to the task input that owns
// it. A fetch error is retried by franz-go and logged here, except one that
// cannot pass by itself (the topic was deleted, or access to it denied),
// which stops the unit: processing on would only log it forever.
func (u *unit) route(fetches kgo.Fetches) error {
	var fatal error
	fetches.EachError(func(topic string, p int32, err error) {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || errors.Is(err, kgo.ErrClientClosed) {
			return
		}
		if fatal == nil && unrecoverableFetch(err) {
			fatal = fmt.Errorf("fetch %s/%d: %w", topic, p, err)
			return
		}
		u.log.Warn("fetch error; retrying", "topic", topic, "partition", p, "error", err)
	})
	if fatal != nil {
		return fatal
	}
	fetches.EachPartition(func(p kgo.FetchTopicPartition) {
		in := u.tm.inputs[p.Topic][p.Partition]
		if in == nil {
			if len(p.Records) > 0 {
				u.log.Warn("records for a partition this unit has no task for", "topic", p.Topic, "partition", p.Partition)
			}
			return
		}
		st := in.state()
		// Under read_committed the end is the last stable offset: an open
		// transaction's records cannot be fetched before it ends.
		end := p.HighWatermark
		if u.cfg.guarantee == ExactlyOnce {
			end = p.LastStableOffset
		}
		if end >= 0 {
			st.end = end
			if len(p.Records) == 0 {
				// An answer without records is at the end only if the
				// fetch was: one cut short by the fetch's size limit
				// lists the partitions it had no room for too.
				if st.readTo < 0 {
					st.readTo = u.startPosition(p)
				}
				if st.readTo >= end {
					st.fetchedTo = max(st.fetchedTo, end)
				}
			}
		}
		recs := p.Records
		// After a rebalance a fetch may repeat what was already taken.
		for len(recs) > 0 && st.next >= 0 && recs[0].Offset < st.next {
			recs = recs[1:]
		}
		if n := len(recs); n > 0 {
			// Control records (transaction markers) are fetched only to
			// know how far the partition was read: a marker after the last
			// records would otherwise look like a record not fetched yet,
			// which a task waits for, and a fetch session sends no empty
			// answer to clear it.
			last := recs[n-1].Offset + 1
			in.push(dropControl(recs))
			st.fetchedTo = max(st.fetchedTo, last)
			st.readTo = max(st.readTo, last)
		}
	})
	return nil
}

// startPosition is where the client began fetching a partition of which it
// has returned no record yet: the group's committed offset, or else the log
// start (the reset policy is the earliest offset).
func (u *unit) startPosition(p kgo.FetchTopicPartition) int64 {
	if o, ok := u.cl.CommittedOffsets()[p.Topic][p.Partition]; ok && o.Offset >= 0 {
		return o.Offset
	}
	return max(p.LogStartOffset, 0)
}

// dropControl removes the control records of recs, in place when it must.
func dropControl(recs []*kgo.Record) []*kgo.Record {
	for i, r := range recs {
		if !r.Attrs.IsControl() {
			continue
		}
		kept := recs[:i]
		for _, r := range recs[i+1:] {
			if !r.Attrs.IsControl() {
				kept = append(kept, r)
			}
		}
		return kept
	}
	return recs
}

// pollBudget is how many records the unit takes from the client: the free
// room in its tasks' input buffers (BufferRecords each). What it leaves
// stays in franz-go, which fetches nothing more from a broker until its
// buffered fetch has been taken, so a slow unit slows fetching without
// pausing partitions (a resumed partition would wait out the fetch in
// flight for the others, up to the fetch max wait).
//
// The room of an input read to its end counts only when every input is:
// while others have records to fetch, what it leaves would be handed to
// them (franz-go hands over whichever partitions it fetched).
func (u *unit) pollBudget() int {
	free, atEnd, inputs, ended := 0, 0, 0, 0
	for _, t := range u.tm.order {
		for _, in := range t.inputs {
			inputs++
			room := max(u.cfg.bufferRecords-in.buffered(), 0)
			if st := in.state(); st.end >= 0 && st.fetchedTo >= st.end && in.buffered() == 0 {
				atEnd += room
				ended++
				continue
			}
			free += room
		}
	}
	if inputs == 0 {
		return u.cfg.bufferRecords
	}
	if ended == inputs {
		return atEnd
	}
	return max(free, 1)
}

// reportState tells the balancer which tasks this unit holds state for:
// its active and standby tasks and, for unit 0, task directories on disk.
func (u *unit) reportState() {
	info := memberInfo{Instance: u.cfg.instanceID, Addr: u.cfg.advertisedAddress}
	seen := map[TaskID]bool{}
	add := func(id TaskID, off int64) {
		if off > 0 && !seen[id] {
			seen[id] = true
			info.State = append(info.State, taskOffset{Sub: id.Subtopology, Part: id.Partition, Offset: off})
		}
	}
	for _, t := range u.tm.order {
		add(t.id, t.sm.offset())
	}
	for _, t := range u.sb.tasks {
		add(t.id, t.sm.offset())
	}
	if u.idx == 0 {
		for _, s := range u.a.topo.subs {
			if len(s.stores) == 0 {
				continue
			}
			for p := range u.a.partitions[s.topics[0]] {
				id := TaskID{s.id, p}
				if seen[id] {
					continue
				}
				cp, err := state.ReadCheckpoint(filepath.Join(u.cfg.stateDir, u.cfg.appID, id.String(), checkpointFile))
				if err != nil {
					continue
				}
				var sum int64
				for _, parts := range cp.Offsets {
					for _, off := range parts {
						sum += off
					}
				}
				add(id, sum)
			}
		}
	}
	u.bal.report(info)
	u.lastReport = time.Now()
}

// shutdown commits (when clean), closes every task and leaves the group.
func (u *unit) shutdown(clean bool) error {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	// Polling with a done context returns at once and blocks rebalances
	// while the tasks close.
	u.cl.PollRecords(done, 1)
	// Released before the client closes: leaving the group runs the
	// revocation callback, which takes the query lock.
	u.pmu.Lock()
	u.qmu.Lock()
	var err error
	if clean {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = u.cm.commit(ctx)
		cancel()
		clean = err == nil
	} else if u.tx != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		u.rc.abort(ctx, true)
		cancel()
	} else {
		// Outputs already handed to the producer are delivered, as Kafka
		// Streams' producer does when it closes; nothing is committed, so
		// their inputs are processed again after a restart.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = u.cl.Flush(ctx)
		cancel()
	}
	u.tm.drop(u.tm.order, clean)
	u.sb.closeAll()
	u.closed = true
	u.qmu.Unlock()
	u.pmu.Unlock()
	u.cl.AllowRebalance()
	u.cl.Close()
	u.cr.close()
	return err
}

// abandon closes a unit whose client can no longer be trusted: tasks are
// dropped without a commit and the client is closed in the background, with
// bounded waits, since the broker may be unreachable.
func (u *unit) abandon() {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	u.cl.PollRecords(done, 1)
	u.pmu.Lock()
	u.qmu.Lock()
	u.tm.drop(u.tm.order, false)
	u.sb.closeAll()
	u.closed = true
	u.qmu.Unlock()
	u.pmu.Unlock()
	u.cl.AllowRebalance()
	cl, cr := u.cl, u.cr
	go func() {
		// Closing leaves the group and may wait for a broker that is down.
		cl.Close()
		cr.close()
	}()
}

// unrecoverableFetch says whether a fetch error cannot pass by itself: a
// non-retriable Kafka error (access denied, say). franz-go retries every
// other one (a broker away, a leader moving, a topic not there yet), and
// the unit logs it and goes on. The same policy holds for the consumer and
// for restoration.
func unrecoverableFetch(err error) bool {
	var ke *kerr.Error
	return errors.As(err, &ke) && !ke.Retriable
}
