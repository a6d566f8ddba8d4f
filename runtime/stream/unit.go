package stream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	// window bounds how long a unit keeps rebalances blocked while it works.
	window = 50 * time.Millisecond
	// batch is how many records a task processes before the unit moves on.
	batch = 500
)

// unit is one processing goroutine: a group member with its own client, the
// tasks of the partitions it is assigned, and their commit cycle. Everything
// but the atomics is owned by the unit's goroutine; franz-go's
// BlockRebalanceOnPoll keeps the rebalance callbacks from running while the
// goroutine is between a poll and AllowRebalance, which is where it works.
type unit struct {
	a   *App
	idx int
	cfg *config
	log *slog.Logger
	cl  *kgo.Client
	rcl *kgo.Client // restoration consumer, created on first use

	// Exactly-once: the transactional session wrapping cl, and whether a
	// transaction is open.
	sess  *kgo.GroupTransactSession
	inTxn bool
	// assigned is what the group gave this unit, to rebuild tasks after an
	// aborted transaction.
	assigned map[string]map[int32]bool

	bal             *coPartitionBalancer
	standbys        map[TaskID]*task
	standbyVersion  int
	retry           map[TaskID]bool // tasks whose directory was still locked
	lastReport      time.Time
	standbyRestored uint64

	tasks     map[TaskID]*task
	order     []*task
	inputs    map[string]map[int32]input
	restoring map[string]map[int32]*taskStore

	fatal       error // set by a rebalance callback, returned by the loop
	produceErr  atomic.Pointer[error]
	onProduced  func(*kgo.Record, error)
	lastCommit  time.Time
	closed      bool
	uncommitted bool

	// Counters of tasks already closed, and the snapshot Stats reads.
	totals    Stats
	statsMu   sync.Mutex
	published Stats
	lastPub   time.Time
	restored  uint64
	commits   uint64
	aborts    uint64
	commitDur time.Duration
	procDur   time.Duration
}

func newUnit(a *App, idx int) (*unit, error) {
	u := &unit{
		a: a, idx: idx, cfg: &a.cfg,
		log:       a.cfg.logger.With("app", a.cfg.appID, "instance", a.cfg.instanceID, "unit", idx),
		tasks:     map[TaskID]*task{},
		inputs:    map[string]map[int32]input{},
		restoring: map[string]map[int32]*taskStore{},
		assigned:  map[string]map[int32]bool{},
		standbys:  map[TaskID]*task{},
		retry:     map[TaskID]bool{},
		bal:       &coPartitionBalancer{subs: a.topo.subs, standbys: a.cfg.standbys},
	}
	u.reportState()
	u.onProduced = func(r *kgo.Record, err error) {
		if err != nil {
			u.setProduceErr(fmt.Errorf("produce to %s/%d: %w", r.Topic, r.Partition, err))
		}
	}
	isolation := kgo.ReadUncommitted()
	if a.cfg.guarantee == ExactlyOnce {
		isolation = kgo.ReadCommitted()
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(a.cfg.brokers...),
		kgo.ClientID(fmt.Sprintf("%s-%s-%d", a.cfg.appID, a.cfg.instanceID, idx)),
		kgo.ConsumerGroup(a.cfg.appID),
		kgo.ConsumeTopics(a.topo.SourceTopics()...),
		kgo.Balancers(u.bal),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(isolation),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		// Kafka's own consumer default. franz-go's 5 s lets an idle long
		// poll delay newly assigned partitions (a failover) by that much.
		kgo.FetchMaxWait(500 * time.Millisecond),
		// A crashed instance's tasks move once its session times out;
		// franz-go's 45 s default would leave them idle that long.
		kgo.SessionTimeout(10 * time.Second),
		kgo.HeartbeatInterval(time.Second),
		kgo.OnPartitionsAssigned(u.onAssigned),
		kgo.OnPartitionsRevoked(u.onRevoked),
		kgo.OnPartitionsLost(u.onLost),
	}
	if a.cfg.static {
		opts = append(opts, kgo.InstanceID(fmt.Sprintf("%s-%d", a.cfg.instanceID, idx)))
	}
	if a.cfg.guarantee == ExactlyOnce {
		// Stable across restarts, unique per unit: a restarted unit fences
		// its own zombie and aborts its unfinished transaction.
		opts = append(opts,
			kgo.TransactionalID(fmt.Sprintf("%s-%s-%d", a.cfg.appID, a.cfg.instanceID, idx)),
			// Longer than a rebalance that waits out a dead member's session,
			// so a transaction left open across it is not rolled back.
			kgo.TransactionTimeout(30*time.Second),
			// A partition's new owner must not start from an offset that
			// the old owner's just-committed transaction has moved past but
			// whose marker has not landed yet: that would process the
			// transaction's input twice (KIP-447).
			kgo.RequireStableFetchOffsets())
		sess, err := kgo.NewGroupTransactSession(append(opts, a.cfg.clientOpts...)...)
		if err != nil {
			return nil, fmt.Errorf("unit %d: %w", idx, err)
		}
		u.sess, u.cl = sess, sess.Client()
	} else {
		cl, err := kgo.NewClient(append(opts, a.cfg.clientOpts...)...)
		if err != nil {
			return nil, fmt.Errorf("unit %d: %w", idx, err)
		}
		u.cl = cl
	}
	u.lastCommit = a.cfg.now()
	return u, nil
}

func (u *unit) config() *config { return u.cfg }

func (u *unit) partitions(topic string) int32 { return u.a.partitions[topic] }

func (u *unit) produce(r *kgo.Record) {
	u.beginTxn()
	u.cl.Produce(context.Background(), r, u.onProduced)
}

// beginTxn opens a transaction before the first record of a commit period.
func (u *unit) beginTxn() {
	if u.sess == nil || u.inTxn {
		return
	}
	if err := u.sess.Begin(); err != nil {
		u.setProduceErr(fmt.Errorf("begin transaction: %w", err))
		return
	}
	u.inTxn = true
}

func (u *unit) logChange(s *taskStore, key, value []byte) {
	if s.ack == nil {
		s.ack = func(r *kgo.Record, err error) {
			if err != nil {
				u.setProduceErr(fmt.Errorf("produce changelog %s/%d: %w", r.Topic, r.Partition, err))
				return
			}
			s.produced.observe(r.Offset + 1)
		}
	}
	u.beginTxn()
	u.cl.Produce(context.Background(), &kgo.Record{Topic: s.changelog, Partition: s.partition, Key: key, Value: value}, s.ack)
}

func (u *unit) setProduceErr(err error) { u.produceErr.CompareAndSwap(nil, &err) }

func (u *unit) producedErr() error {
	if p := u.produceErr.Load(); p != nil {
		return *p
	}
	return nil
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
		clean := err == nil
		if errors.As(err, &restart) {
			u.abandon()
			return
		}
		if cerr := u.shutdown(clean); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if u.sess == nil {
		// The idempotent producer's id is otherwise fetched at the first
		// produce, one more round trip before the first output; get it
		// while the group is being joined. Failing here costs nothing: the
		// first produce tries again.
		go func() { _, _, _ = u.cl.ProducerID(ctx) }()
	}
	wait, budget := 100*time.Millisecond, u.cfg.bufferRecords
	for ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, wait)
		fetches := u.cl.PollRecords(pctx, budget)
		cancel()
		start := time.Now()
		for {
			if err := u.step(fetches); err != nil {
				u.cl.AllowRebalance()
				return err
			}
			if ctx.Err() != nil || time.Since(start) > window || !u.hasWork() {
				break
			}
			fetches = u.cl.PollRecords(nil, u.pollBudget())
		}
		u.publish(false)
		// Decided here: after AllowRebalance the callbacks may change the tasks.
		wait, budget = u.pollWait(), u.pollBudget()
		u.cl.AllowRebalance()
	}
	return nil
}

// pollWait is how long the first poll of a window may block.
func (u *unit) pollWait() time.Duration {
	if u.hasWork() || u.anyActiveRestoring() {
		return time.Millisecond
	}
	if len(u.restoring) > 0 {
		return 10 * time.Millisecond // standbys follow their changelogs
	}
	wait := 100 * time.Millisecond
	now := u.cfg.now()
	if d := u.lastCommit.Add(u.cfg.commitInterval).Sub(now); d < wait {
		wait = d
	}
	for _, t := range u.order {
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

func (u *unit) hasWork() bool {
	for _, t := range u.order {
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

// step does one round of work on what the last poll returned.
func (u *unit) step(fetches kgo.Fetches) error {
	if u.fatal != nil {
		return u.fatal
	}
	if err := u.producedErr(); err != nil {
		return err
	}
	u.route(fetches)
	if err := u.reconcileStandbys(); err != nil {
		return err
	}
	if err := u.restoreStep(); err != nil {
		return err
	}
	now := u.cfg.now()
	processed := 0
	began := time.Now()
	defer func() { u.procDur += time.Since(began) }()
	for _, t := range u.order {
		if t.restoring {
			continue
		}
		n, err := t.process(batch, now)
		processed += n
		if err != nil {
			return err
		}
		if err := t.punctuate(WallClock, now.UnixMilli()); err != nil {
			return err
		}
	}
	if processed > 0 {
		u.uncommitted = true
	}
	if u.commitDue(now, processed) {
		if err := u.commit(context.Background()); err != nil {
			return err
		}
	}
	return nil
}

func (u *unit) route(fetches kgo.Fetches) {
	fetches.EachError(func(topic string, p int32, err error) {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || errors.Is(err, kgo.ErrClientClosed) {
			return
		}
		u.log.Warn("fetch error", "topic", topic, "partition", p, "error", err)
	})
	fetches.EachPartition(func(p kgo.FetchTopicPartition) {
		in := u.inputs[p.Topic][p.Partition]
		if in == nil {
			if len(p.Records) > 0 {
				u.log.Warn("records for a partition this unit has no task for", "topic", p.Topic, "partition", p.Partition)
			}
			return
		}
		st := in.state()
		if p.HighWatermark >= 0 {
			st.hwm = p.HighWatermark
		}
		recs := p.Records
		// After a rebalance a fetch may repeat what was already taken.
		for len(recs) > 0 && st.next >= 0 && recs[0].Offset < st.next {
			recs = recs[1:]
		}
		in.push(recs)
	})
}

// pollBudget is how many records the unit takes from the client: the free
// room in its tasks' input buffers (BufferRecords each). What it leaves
// stays in franz-go, which fetches nothing more from a broker until its
// buffered fetch has been taken, so a slow unit slows fetching without
// pausing partitions (a resumed partition would wait out the fetch in
// flight for the others, up to the fetch max wait).
func (u *unit) pollBudget() int {
	free, inputs := 0, 0
	for _, t := range u.order {
		for _, in := range t.inputs {
			inputs++
			free += max(u.cfg.bufferRecords-in.buffered(), 0)
		}
	}
	if inputs == 0 {
		return u.cfg.bufferRecords
	}
	return max(free, 1)
}

func (u *unit) commitDue(now time.Time, processed int) bool {
	if !u.uncommitted {
		return false
	}
	for _, t := range u.order {
		if t.commitRequested {
			return true
		}
	}
	if now.Sub(u.lastCommit) >= u.cfg.commitInterval {
		return true
	}
	// A batch job commits as soon as it has nothing more to do.
	return u.cfg.exitCaughtUp && processed == 0 && !u.hasWork()
}

// commit makes everything processed so far durable, in order: stores
// flushed, producer flushed (every output and changelog record
// acknowledged), checkpoints written, input offsets committed.
func (u *unit) commit(ctx context.Context) error {
	if u.sess != nil {
		return u.commitTxn(ctx)
	}
	start := time.Now()
	for _, t := range u.order {
		t.sm.prepare()
	}
	if err := u.cl.Flush(ctx); err != nil {
		return fmt.Errorf("commit: flush producer: %w", err)
	}
	if err := u.producedErr(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	for _, t := range u.order {
		if err := t.sm.committed(); err != nil {
			return err
		}
	}
	u.checkpointStandbys()
	offsets := map[string]map[int32]kgo.EpochOffset{}
	for _, t := range u.order {
		for _, in := range t.inputs {
			st := in.state()
			if st.next >= 0 && st.next != st.committed {
				if offsets[in.topic()] == nil {
					offsets[in.topic()] = map[int32]kgo.EpochOffset{}
				}
				offsets[in.topic()][st.partition] = kgo.EpochOffset{Epoch: st.epoch, Offset: st.next}
			}
		}
	}
	if len(offsets) > 0 {
		var cerr error
		u.cl.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err != nil {
				cerr = err
				return
			}
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					if err := kerr.ErrorForCode(p.ErrorCode); err != nil && cerr == nil {
						cerr = fmt.Errorf("%s/%d: %w", t.Topic, p.Partition, err)
					}
				}
			}
		})
		if cerr != nil {
			// Under at-least-once a failed commit only means some records
			// may be processed again by the next owner.
			u.log.Warn("commit offsets failed", "error", cerr)
		} else {
			for _, t := range u.order {
				for _, in := range t.inputs {
					st := in.state()
					if o, ok := offsets[in.topic()][st.partition]; ok {
						st.committed = o.Offset
					}
				}
			}
		}
	}
	for _, t := range u.order {
		t.commitRequested = false
	}
	u.uncommitted = false
	u.lastCommit = u.cfg.now()
	u.commits++
	u.commitDur += time.Since(start)
	return nil
}

// commitTxn is the exactly-once commit. Everything polled is processed
// first, because the transaction commits the consumer's polled positions;
// the store caches log their dirty entries inside the transaction and hold
// them as pending; the transaction ends; then, only if it committed, the
// pending writes reach the stores and the checkpoints. An aborted
// transaction (a rebalance, a fence, an unconfirmed outcome franz-go
// downgraded to an abort) rebuilds every task from committed state: the
// consumer has been rewound to the committed offsets.
func (u *unit) commitTxn(ctx context.Context) error {
	start := time.Now()
	now := u.cfg.now()
	for _, t := range u.order {
		if !t.restoring {
			if err := t.drain(now); err != nil {
				return err
			}
		}
	}
	for _, t := range u.order {
		t.sm.prepare()
	}
	if !u.inTxn && u.uncommitted {
		u.beginTxn() // progress without output still commits offsets
	}
	if err := u.producedErr(); err != nil {
		if u.inTxn {
			u.sess.End(ctx, kgo.TryAbort)
			u.inTxn = false
		}
		return fmt.Errorf("commit: %w", err)
	}
	if !u.inTxn {
		return nil
	}
	// A deadline: with the broker gone, ending a transaction can wait
	// forever on a heartbeat that cannot happen.
	endCtx, cancel := context.WithTimeout(ctx, txnEndTimeout)
	committed, err := u.sess.End(endCtx, kgo.TryCommit)
	cancel()
	u.inTxn = false
	u.commitDur += time.Since(start)
	if err != nil {
		err = fmt.Errorf("end transaction (outcome unknown): %w", err)
		if errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.TransactionalIDAuthorizationFailed) {
			return err // another producer has our id, or we may not use it
		}
		// The client is in an unknown state (a transaction the broker timed
		// out, a broker outage). Local state holds only committed data: a
		// fresh client rebuilds everything from what Kafka committed.
		return &restartError{err}
	}
	if !committed {
		u.log.Warn("transaction aborted; rebuilding tasks from committed state")
		u.aborts++
		return u.rebuildTasks(ctx)
	}
	u.commits++
	for _, t := range u.order {
		if err := t.sm.committed(); err != nil {
			return err
		}
		for _, in := range t.inputs {
			in.state().committed = in.state().next
		}
		t.commitRequested = false
	}
	u.checkpointStandbys()
	u.uncommitted = false
	u.lastCommit = u.cfg.now()
	return nil
}

// checkpointStandbys makes the standbys' progress survive a restart.
func (u *unit) checkpointStandbys() {
	for _, sb := range u.standbys {
		if err := sb.sm.checkpoint(); err != nil {
			u.log.Warn("checkpoint standby", "task", sb.id.String(), "error", err)
		}
	}
}

// txnEndTimeout bounds ending a transaction before the unit restarts.
const txnEndTimeout = 30 * time.Second

// restartError asks the App to replace the unit with a fresh one.
type restartError struct{ err error }

func (e *restartError) Error() string { return "unit restart: " + e.err.Error() }
func (e *restartError) Unwrap() error { return e.err }

// rebuildTasks drops every task without committing and creates them again
// for the current assignment, restoring from checkpoints and changelogs.
func (u *unit) rebuildTasks(ctx context.Context) error {
	// The aborted writes never reached the stores: each new task takes
	// over its predecessor's open stores, at their committed positions, and
	// replays nothing from the changelog. Its processors start afresh.
	old := map[TaskID]*task{}
	for _, t := range u.order {
		t.sm.aborted()
		old[t.id] = t
	}
	u.forget(u.order)
	u.uncommitted = false
	assigned := map[string][]int32{}
	for topic, ps := range u.assigned {
		for p := range ps {
			assigned[topic] = append(assigned[topic], p)
		}
	}
	u.createTasks(ctx, assigned, old)
	for _, t := range old {
		// Its stores are the new task's now (or, for a task no longer
		// assigned, closed here): only its processors are left.
		if err := t.close(false); err != nil {
			u.log.Error("close task", "task", t.id.String(), "error", err)
		}
	}
	u.lastCommit = u.cfg.now()
	return u.fatal
}

// onAssigned creates the tasks of newly assigned partitions and starts
// restoring their stores.
func (u *unit) onAssigned(ctx context.Context, _ *kgo.Client, assigned map[string][]int32) {
	if u.closed || u.fatal != nil {
		return
	}
	u.a.markBusy(1)
	defer u.a.markBusy(-1)
	for topic, parts := range assigned {
		if u.assigned[topic] == nil {
			u.assigned[topic] = map[int32]bool{}
		}
		for _, p := range parts {
			u.assigned[topic][p] = true
		}
	}
	u.createTasks(ctx, assigned, nil)
}

// createTasks creates the missing tasks for assigned partitions and starts
// restoring their stores; a failure is left in u.fatal.
// A task in handoff takes over the open stores of the task it replaces.
func (u *unit) createTasks(ctx context.Context, assigned map[string][]int32, handoff map[TaskID]*task) {
	if err := u.a.awaitChangelogs(ctx); err != nil {
		if ctx.Err() == nil {
			u.fatal = err
		}
		return
	}
	var created []*task
	for topic, parts := range assigned {
		sub, ok := u.a.topicSub[topic]
		if !ok {
			continue
		}
		for _, p := range parts {
			id := TaskID{Subtopology: sub, Partition: p}
			if _, ok := u.tasks[id]; ok {
				continue
			}
			from := handoff[id]
			if sb := u.standbys[id]; sb != nil && from == nil {
				// Promote: the active task takes the standby's warm stores
				// and replays only the changelog's tail.
				for _, s := range sb.sm.order {
					u.stopRestore(s)
				}
				delete(u.standbys, id)
				u.log.Info("promoting standby", "task", id.String())
				from = sb
			}
			t, err := newTaskFrom(id, u.a.topo, u, from)
			if errors.Is(err, state.ErrDirLocked) {
				// Another unit of this instance has not let go yet.
				u.retry[id] = true
				continue
			}
			if err != nil {
				u.fatal = err
				return
			}
			delete(u.retry, id)
			u.tasks[id] = t
			created = append(created, t)
			for _, in := range t.inputs {
				if u.inputs[in.topic()] == nil {
					u.inputs[in.topic()] = map[int32]input{}
				}
				u.inputs[in.topic()][p] = in
			}
		}
	}
	u.reorder()
	markersBy := time.Now().Add(markerWait)
	for _, t := range created {
		if err := u.startRestore(ctx, t, markersBy); err != nil {
			u.fatal = err
			return
		}
	}
	if len(created) > 0 {
		u.log.Info("tasks assigned", "tasks", taskIDs(created))
		u.reportState()
		u.publish(true) // ownership shows in Stats at once
	}
}

// reconcileStandbys follows the standby tasks of the latest assignment, and
// retries tasks whose directories were locked.
func (u *unit) reconcileStandbys() error {
	if len(u.retry) > 0 {
		parts := map[string][]int32{}
		for id := range u.retry {
			for _, topic := range u.a.topo.subs[id.Subtopology].topics {
				if u.assigned[topic][id.Partition] {
					parts[topic] = append(parts[topic], id.Partition)
				}
			}
		}
		clear(u.retry)
		u.createTasks(context.Background(), parts, nil)
		if u.fatal != nil {
			return u.fatal
		}
	}
	ids, actives, version := u.bal.standbyTasks()
	if version == u.standbyVersion {
		if time.Since(u.lastReport) > 5*time.Second {
			u.reportState()
		}
		return nil
	}
	u.standbyVersion = version
	want := map[TaskID]bool{}
	for _, id := range ids {
		if u.tasks[id] == nil && len(u.a.topo.subs[id.Subtopology].stores) > 0 {
			want[id] = true
		}
	}
	for id, sb := range u.standbys {
		// A standby about to become active stays warm for its promotion,
		// which the assignment callback does.
		if !want[id] && !actives[id] {
			u.closeStandby(sb)
		}
	}
	if len(want) > 0 {
		if err := u.a.awaitChangelogs(context.Background()); err != nil {
			return err
		}
	}
	for id := range want {
		if u.standbys[id] != nil {
			continue
		}
		sb, err := newStandby(id, u.a.topo, u)
		if errors.Is(err, state.ErrDirLocked) {
			u.standbyVersion = -1 // try again next window
			continue
		}
		if err != nil {
			return err
		}
		if err := u.followChangelogs(context.Background(), sb); err != nil {
			sb.close(false)
			return err
		}
		u.standbys[id] = sb
		u.log.Info("standby task", "task", id.String())
	}
	u.reportState()
	return nil
}

// followChangelogs starts reading a standby's changelogs from its
// checkpoint; it never stops until the standby closes.
func (u *unit) followChangelogs(ctx context.Context, t *task) error {
	topics := t.sm.changelogs()
	if len(topics) == 0 {
		return nil
	}
	ends, err := u.a.endOffsets(ctx, u.cfg.guarantee == ExactlyOnce, topics...)
	if err != nil {
		return fmt.Errorf("standby %s: changelog end offsets: %w", t.id, err)
	}
	consume := map[string]map[int32]kgo.Offset{}
	for _, s := range t.sm.order {
		if s.changelog == "" {
			continue
		}
		end, _ := ends.Lookup(s.changelog, s.partition)
		s.restoreEnd = end.Offset // the lag is known before the first fetch
		u.readChangelog(s, consume)
	}
	if err := u.ensureRestoreClient(); err != nil {
		return err
	}
	u.rcl.AddConsumePartitions(consume)
	return nil
}

func (u *unit) closeStandby(t *task) {
	for _, s := range t.sm.order {
		u.stopRestore(s)
	}
	if err := t.close(true); err != nil {
		u.log.Error("close standby", "task", t.id.String(), "error", err)
	}
	delete(u.standbys, t.id)
}

// reportState tells the balancer which tasks this unit holds state for:
// its active and standby tasks and, for unit 0, task directories on disk.
func (u *unit) reportState() {
	info := memberInfo{Instance: u.cfg.instanceID}
	seen := map[TaskID]bool{}
	add := func(id TaskID, off int64) {
		if off > 0 && !seen[id] {
			seen[id] = true
			info.State = append(info.State, taskOffset{Sub: id.Subtopology, Part: id.Partition, Offset: off})
		}
	}
	for _, t := range u.order {
		add(t.id, t.sm.offset())
	}
	for _, t := range u.standbys {
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
				for _, parts := range cp {
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

// onRevoked commits and closes the tasks of revoked partitions, so their
// next owner starts exactly where this one stopped.
func (u *unit) onRevoked(ctx context.Context, _ *kgo.Client, revoked map[string][]int32) {
	if u.closed {
		return
	}
	gone := u.tasksOf(revoked)
	if len(gone) == 0 {
		return
	}
	u.unassign(revoked)
	u.a.markBusy(1)
	defer u.a.markBusy(-1)
	clean := true
	if u.sess != nil {
		// The session aborts the open transaction at the next commit; the
		// revoked tasks' work since the last commit is redone by their next
		// owner, and what this unit keeps is rebuilt then.
		clean = false
	} else if u.fatal == nil {
		if err := u.commit(ctx); err != nil {
			u.log.Error("commit before revocation failed", "error", err)
			clean = false
		}
	}
	u.drop(gone, clean)
	u.log.Info("tasks revoked", "tasks", taskIDs(gone))
}

// onLost drops tasks without committing: another member owns them now.
func (u *unit) onLost(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	if u.closed {
		return
	}
	u.unassign(lost)
	gone := u.tasksOf(lost)
	u.drop(gone, false)
	if len(gone) > 0 {
		u.log.Warn("tasks lost", "tasks", taskIDs(gone))
	}
}

func (u *unit) unassign(parts map[string][]int32) {
	for topic, ps := range parts {
		for _, p := range ps {
			delete(u.assigned[topic], p)
		}
	}
}

func (u *unit) tasksOf(parts map[string][]int32) []*task {
	seen := map[TaskID]bool{}
	var out []*task
	for topic, ps := range parts {
		sub, ok := u.a.topicSub[topic]
		if !ok {
			continue
		}
		for _, p := range ps {
			id := TaskID{Subtopology: sub, Partition: p}
			if t := u.tasks[id]; t != nil && !seen[id] {
				seen[id] = true
				out = append(out, t)
			}
		}
	}
	return out
}

func (u *unit) drop(tasks []*task, clean bool) {
	tasks = slices.Clone(tasks)
	u.forget(tasks)
	for _, t := range tasks {
		if err := t.close(clean); err != nil {
			u.log.Error("close task", "task", t.id.String(), "error", err)
		}
	}
	u.publish(true)
}

// forget takes tasks out of the unit's books without closing them.
func (u *unit) forget(tasks []*task) {
	for _, t := range slices.Clone(tasks) {
		for _, in := range t.inputs {
			delete(u.inputs[in.topic()], t.id.Partition)
		}
		for _, s := range t.sm.order {
			u.stopRestore(s)
		}
		u.setRestoring(t, false)
		u.accumulate(t)
		delete(u.tasks, t.id)
	}
	u.reorder()
}

func (u *unit) reorder() {
	u.order = u.order[:0]
	for _, t := range u.tasks {
		u.order = append(u.order, t)
	}
	sort.Slice(u.order, func(i, j int) bool {
		a, b := u.order[i].id, u.order[j].id
		return a.Subtopology < b.Subtopology || a.Subtopology == b.Subtopology && a.Partition < b.Partition
	})
}

// startRestore positions each logged store of t at its checkpoint and
// starts reading its changelog to the end; the task processes nothing until
// every store has caught up.
func (u *unit) startRestore(ctx context.Context, t *task, markersBy time.Time) error {
	topics := t.sm.changelogs()
	if len(topics) == 0 {
		return t.initProcessors()
	}
	ends, err := u.a.changelogEnds(ctx, markersBy, topics...)
	if err != nil {
		return fmt.Errorf("task %s: changelog end offsets: %w", t.id, err)
	}
	consume := map[string]map[int32]kgo.Offset{}
	for _, s := range t.sm.order {
		if s.changelog == "" {
			continue
		}
		end, _ := ends.Lookup(s.changelog, s.partition)
		s.restoreEnd = end.Offset
		if s.restoredTo > s.restoreEnd {
			u.log.Warn("checkpoint is past the changelog's end; restoring from the start", "store", s.def.name, "checkpoint", s.restoredTo, "end", s.restoreEnd)
			s.restoredTo = 0
		}
		if s.restoredTo >= s.restoreEnd {
			continue
		}
		u.log.Info("restoring store", "task", t.id.String(), "store", s.def.name, "from", s.restoredTo, "to", s.restoreEnd)
		u.readChangelog(s, consume)
	}
	if len(consume) == 0 {
		return t.initProcessors()
	}
	u.setRestoring(t, true)
	if err := u.ensureRestoreClient(); err != nil {
		return fmt.Errorf("task %s: restore client: %w", t.id, err)
	}
	u.rcl.AddConsumePartitions(consume)
	return nil
}

// readChangelog makes the restore client feed s from its changelog, from
// its checkpoint on: s joins u.restoring, and its partition joins consume,
// the partitions to add to the client.
func (u *unit) readChangelog(s *taskStore, consume map[string]map[int32]kgo.Offset) {
	if u.restoring[s.changelog] == nil {
		u.restoring[s.changelog] = map[int32]*taskStore{}
	}
	u.restoring[s.changelog][s.partition] = s
	if consume[s.changelog] == nil {
		consume[s.changelog] = map[int32]kgo.Offset{}
	}
	consume[s.changelog][s.partition] = kgo.NewOffset().At(s.restoredTo)
}

func (u *unit) ensureRestoreClient() error {
	if u.rcl == nil {
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
		u.rcl = cl
	}
	return nil
}

// stopRestore stops reading one store's changelog.
func (u *unit) stopRestore(s *taskStore) {
	if u.restoring[s.changelog][s.partition] != s {
		return
	}
	delete(u.restoring[s.changelog], s.partition)
	if len(u.restoring[s.changelog]) == 0 {
		delete(u.restoring, s.changelog)
	}
	u.rcl.RemoveConsumePartitions(map[string][]int32{s.changelog: {s.partition}})
}

// setRestoring is the one place a task's restoring flag changes, keeping
// the App's busy count (its rebalancing state) in step with it.
func (u *unit) setRestoring(t *task, on bool) {
	if t.restoring == on {
		return
	}
	t.restoring = on
	if on {
		u.a.markBusy(1)
	} else {
		u.a.markBusy(-1)
	}
}

// restoreStep applies one batch of changelog records to restoring stores.
func (u *unit) restoreStep() error {
	if len(u.restoring) == 0 {
		return nil
	}
	wait := time.Millisecond
	if !u.hasWork() && u.anyActiveRestoring() {
		wait = 20 * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	fetches := u.rcl.PollRecords(ctx, 100_000)
	cancel()
	var ferr error
	fetches.EachError(func(topic string, p int32, err error) {
		if !errors.Is(err, context.DeadlineExceeded) && ferr == nil {
			ferr = fmt.Errorf("restore %s/%d: %w", topic, p, err)
		}
	})
	if ferr != nil {
		return ferr
	}
	var changes []state.Change
	var err error
	fetches.EachPartition(func(p kgo.FetchTopicPartition) {
		s := u.restoring[p.Topic][p.Partition]
		if s == nil || len(p.Records) == 0 || err != nil {
			return
		}
		if s.t.standby && p.HighWatermark >= 0 {
			s.restoreEnd = p.HighWatermark // how far a standby has to go
		}
		changes = changes[:0]
		for _, r := range p.Records {
			if !r.Attrs.IsControl() {
				changes = append(changes, state.Change{Key: r.Key, Value: r.Value})
			}
		}
		if err = state.ApplyChanges(s.inner, changes); err != nil {
			err = fmt.Errorf("task %s: restore store %q: %w", s.t.id, s.def.name, err)
			return
		}
		s.restoredTo = p.Records[len(p.Records)-1].Offset + 1
		if s.t.standby {
			u.standbyRestored += uint64(len(changes))
			return
		}
		u.restored += uint64(len(changes))
		if s.restoredTo >= s.restoreEnd {
			u.finishRestore(s)
		}
	})
	if err != nil {
		return err
	}
	return u.fatal
}

func (u *unit) anyActiveRestoring() bool {
	for _, t := range u.order {
		if t.restoring {
			return true
		}
	}
	return false
}

func (u *unit) anyRestoring(t *task) bool {
	for _, s := range t.sm.order {
		if u.restoring[s.changelog][s.partition] == s {
			return true
		}
	}
	return false
}

func (u *unit) finishRestore(s *taskStore) {
	t := s.t
	u.stopRestore(s)
	if u.anyRestoring(t) {
		return
	}
	u.setRestoring(t, false)
	u.log.Info("restored task", "task", t.id.String())
	// Record the position reached, so a restart does not restore again.
	if err := t.sm.checkpoint(); err != nil && u.fatal == nil {
		u.fatal = err
		return
	}
	if err := t.initProcessors(); err != nil && u.fatal == nil {
		u.fatal = err
	}
}

// shutdown commits (when clean), closes every task and leaves the group.
func (u *unit) shutdown(clean bool) error {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	// Polling with a done context returns at once and blocks rebalances
	// while the tasks close.
	u.cl.PollRecords(done, 1)
	var err error
	if clean {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = u.commit(ctx)
		cancel()
		clean = err == nil
	} else if u.inTxn {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		u.sess.End(ctx, kgo.TryAbort)
		cancel()
		u.inTxn = false
	} else if u.sess == nil {
		// Outputs already handed to the producer are delivered, as Kafka
		// Streams' producer does when it closes; nothing is committed, so
		// their inputs are processed again after a restart.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = u.cl.Flush(ctx)
		cancel()
	}
	u.drop(append([]*task(nil), u.order...), clean)
	for _, sb := range u.standbys {
		u.closeStandby(sb)
	}
	u.closed = true
	u.cl.AllowRebalance()
	u.cl.Close()
	if u.rcl != nil {
		u.rcl.Close()
	}
	return err
}

// abandon closes a unit whose client can no longer be trusted: tasks are
// dropped without a commit and the client is closed in the background, with
// bounded waits, since the broker may be unreachable.
func (u *unit) abandon() {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	u.cl.PollRecords(done, 1)
	u.drop(append([]*task(nil), u.order...), false)
	for _, sb := range u.standbys {
		u.closeStandby(sb)
	}
	u.closed = true
	u.cl.AllowRebalance()
	cl, rcl := u.cl, u.rcl
	go func() {
		// Closing leaves the group and may wait for a broker that is down.
		cl.Close()
		if rcl != nil {
			rcl.Close()
		}
	}()
}

// accumulate folds a closing task's counters into the unit's totals.
func (u *unit) accumulate(t *task) {
	u.totals.Processed += t.processed
	u.totals.Skipped += t.skipped
	u.totals.DeadLettered += t.deadLettered
	u.totals.Punctuations += t.punctuations
	u.totals.EnforcedSteps += t.enforcedSteps
	t.processed, t.skipped, t.deadLettered, t.punctuations, t.enforcedSteps = 0, 0, 0, 0, 0
}

// publish refreshes the snapshot Stats reads, at most every 200 ms unless forced.
func (u *unit) publish(force bool) {
	now := time.Now()
	if !force && now.Sub(u.lastPub) < 200*time.Millisecond {
		return
	}
	u.lastPub = now
	s := u.totals
	s.Commits, s.Aborts, s.CommitTime, s.Restored, s.ProcessTime = u.commits, u.aborts, u.commitDur, u.restored, u.procDur
	s.StandbyRestored = u.standbyRestored
	for id, sb := range u.standbys {
		s.Standbys = append(s.Standbys, id)
		for _, st := range sb.sm.order {
			if st.changelog != "" {
				s.StandbyLag += max(st.restoreEnd-st.restoredTo, 0)
			}
		}
	}
	s.Tasks = make(map[TaskID]TaskStats, len(u.order))
	for _, t := range u.order {
		s.Processed += t.processed
		s.Skipped += t.skipped
		s.DeadLettered += t.deadLettered
		s.Punctuations += t.punctuations
		s.EnforcedSteps += t.enforcedSteps
		ts := TaskStats{Processed: t.processed, Restoring: t.restoring, ProcessorCount: map[string]uint64{}}
		for _, in := range t.inputs {
			st := in.state()
			if st.hwm >= 0 {
				ts.Lag += st.hwm - max(st.next, 0)
			}
		}
		for _, p := range t.procs {
			ts.ProcessorCount[p.nodeName()] = p.processedCount()
		}
		s.Tasks[t.id] = ts
	}
	u.statsMu.Lock()
	u.published = s
	u.statsMu.Unlock()
}

func taskIDs(ts []*task) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.id.String()
	}
	sort.Strings(out)
	return out
}
