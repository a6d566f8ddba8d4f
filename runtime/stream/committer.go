package stream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// committer makes a unit's progress durable, by its guarantee. Both forms
// run each task's state manager through the same steps, in the same order:
// prepare (cached writes logged), the commit in Kafka, then committed
// (writes and positions into the stores) or aborted (dropped).
type committer struct {
	u           *unit
	lastCommit  time.Time
	uncommitted bool // records processed since the last commit
	// queriesIn is set while the unit's loop commits holding the query
	// lock: the commit's waits on Kafka then let queries read
	// (outsideQueryLock).
	queriesIn bool
	// openedToQueries counts the waits run with the query lock released,
	// for tests (read by other goroutines).
	openedToQueries atomic.Uint64

	commits uint64
	aborts  uint64
	dur     time.Duration
	latency histogram
}

// txnEndTimeout bounds ending a transaction before the unit restarts.
const txnEndTimeout = 30 * time.Second

// restartError asks the App to replace the unit with a fresh one.
type restartError struct{ err error }

func (e *restartError) Error() string { return "unit restart: " + e.err.Error() }
func (e *restartError) Unwrap() error { return e.err }

// due says whether to commit now: on request, every CommitInterval, and for
// a batch job as soon as it has nothing more to do.
func (c *committer) due(now time.Time, processed int) bool {
	moved := c.uncommitted
	for _, t := range c.u.tm.order {
		if t.commitRequested && c.uncommitted {
			return true
		}
		moved = moved || t.timesDirty
	}
	if !moved {
		return false
	}
	if now.Sub(c.lastCommit) >= c.u.cfg.commitInterval {
		return true
	}
	return c.u.cfg.exitCaughtUp && processed == 0 && !c.u.tm.hasWork()
}

func (c *committer) commit(ctx context.Context) error {
	if c.u.tx != nil {
		return c.exactlyOnce(ctx)
	}
	return c.atLeastOnce(ctx)
}

// atLeastOnce commits in order: cached writes logged (prepare), producer
// flushed (every output and changelog record acknowledged), stores written
// with their positions (committed), input offsets committed. A crash in
// between only repeats work.
func (c *committer) atLeastOnce(ctx context.Context) error {
	u := c.u
	start := time.Now()
	for _, t := range u.tm.order {
		t.sm.prepare()
	}
	if err := c.outsideQueryLock(func() error { return u.rc.flush(ctx) }); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	if err := c.committed(); err != nil {
		return err
	}
	u.sb.checkpoint()
	offsets := c.processed()
	var err error
	if len(offsets) > 0 {
		err = c.outsideQueryLock(func() error {
			return commitWithTimes(u.log, offsets, func() error { return commitOffsets(ctx, u.cl, offsets) })
		})
	}
	if err != nil {
		// Under at-least-once a failed offset commit only means some
		// records may be processed again by the next owner.
		u.log.Warn("commit offsets failed", "error", err)
	} else {
		c.committedOffsets(offsets)
	}
	c.done(start)
	c.commits++
	u.pg.afterCommit(ctx)
	return nil
}

// offsetCommit is one input partition's commit: the offset after the last
// record processed, and the stream times as metadata (streamtime.go).
type offsetCommit struct {
	kgo.EpochOffset
	meta string
}

// offsetCommits are a commit's offsets by topic and partition.
type offsetCommits map[string]map[int32]offsetCommit

// processed is the offset after the last record each task input has
// processed, with its stream times, where it moved since the last commit;
// every input of a task whose observed times moved (a punctuation may move
// them without a record), so that a restart resumes them.
func (c *committer) processed() offsetCommits {
	offsets := offsetCommits{}
	for _, t := range c.u.tm.order {
		for _, in := range t.inputs {
			st := in.state()
			if st.next >= 0 && st.readTo > st.next && in.buffered() == 0 {
				// Only control records (a transaction's marker) follow
				// the last record taken: they count as taken, as Kafka
				// Streams commits the consumer's position, so that the
				// group's offset reaches the partition's end.
				st.next = st.readTo
			}
			if st.next >= 0 && (st.next != st.committed || t.timesDirty) {
				if offsets[in.topic()] == nil {
					offsets[in.topic()] = map[int32]offsetCommit{}
				}
				offsets[in.topic()][st.partition] = offsetCommit{kgo.EpochOffset{Epoch: st.epoch, Offset: st.next}, t.commitMetadata(in)}
			}
		}
	}
	return offsets
}

// committedOffsets records a successful commit of offsets in the tasks'
// inputs and in what the task manager knows of the group's metadata.
func (c *committer) committedOffsets(offsets offsetCommits) {
	for _, t := range c.u.tm.order {
		for _, in := range t.inputs {
			st := in.state()
			if o, ok := offsets[in.topic()][st.partition]; ok {
				st.committed = o.Offset
				c.u.tm.committedMeta(in.topic(), st.partition, o.meta)
			}
		}
		t.timesDirty = false
	}
}

// commitWithTimes runs commit and, if Kafka refused the metadata as too
// large (a broker whose offset.metadata.max.bytes is below the 4096 bytes the
// times are kept within), runs it again without the stream times, which then
// start afresh after a restart: the offsets matter more.
func commitWithTimes(log *slog.Logger, offsets offsetCommits, commit func() error) error {
	err := commit()
	if !errors.Is(err, kerr.OffsetMetadataTooLarge) {
		return err
	}
	log.Warn("the broker refuses the stream times in the offset metadata as too large; committing offsets without them", "error", err)
	for _, parts := range offsets {
		for p, o := range parts {
			o.meta = ""
			parts[p] = o
		}
	}
	return commit()
}

// commitOffsets commits offsets as a consumer does, fenced by the member id
// and generation franz-go sends, with the stream times as each partition's
// metadata (franz-go's own would be the member id).
func commitOffsets(ctx context.Context, cl *kgo.Client, offsets offsetCommits) error {
	plain := make(map[string]map[int32]kgo.EpochOffset, len(offsets))
	for topic, parts := range offsets {
		plain[topic] = make(map[int32]kgo.EpochOffset, len(parts))
		for p, o := range parts {
			plain[topic][p] = o.EpochOffset
		}
	}
	ctx = kgo.PreCommitFnContext(ctx, func(req *kmsg.OffsetCommitRequest) error {
		for i := range req.Topics {
			rt := &req.Topics[i]
			for j := range rt.Partitions {
				rp := &rt.Partitions[j]
				if o, ok := offsets[rt.Topic][rp.Partition]; ok && o.meta != "" {
					rp.Metadata = &o.meta
				}
			}
		}
		return nil
	})
	var cerr error
	cl.CommitOffsetsSync(ctx, plain, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
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
	return cerr
}

// exactlyOnce is the transactional commit: the state managers log their
// cached writes inside the transaction, which then commits with the offsets
// the tasks have processed; only if it committed do the writes reach the
// stores with their positions. An aborted transaction (a rebalance that
// ended the generation first, a coordinator away) drops them and rebuilds
// the tasks on their stores, which hold exactly the committed state, with
// the consumer rewound to the committed offsets. A commit in a rebalance
// callback leaves the rebuild to the unit's loop.
func (c *committer) exactlyOnce(ctx context.Context) error {
	u := c.u
	if u.tm.rebuildPending {
		// The open transaction holds work of tasks lost to another member:
		// it must not commit. Only the loop rewinds.
		if u.inRebalance > 0 {
			return nil
		}
		return u.tm.rebuild(ctx)
	}
	start := time.Now()
	for _, t := range u.tm.order {
		t.sm.prepare()
	}
	if err := u.rc.err(); err != nil {
		u.rc.abort(ctx, true)
		return fmt.Errorf("commit: %w", err)
	}
	offsets := c.processed()
	if !u.tx.open && len(offsets) == 0 {
		c.committedOffsets(offsets) // observed times with no input to carry them
		c.done(start)
		return nil
	}
	// A deadline: with the broker gone, ending a transaction can wait
	// forever.
	endCtx, cancel := context.WithTimeout(ctx, txnEndTimeout)
	defer cancel()
	// Everything produced is acknowledged (dead letters of failed outputs
	// included) before anything is committed; a record that failed for
	// good stops the unit, and its transaction must not commit.
	if err := c.outsideQueryLock(func() error { return u.rc.flush(endCtx) }); err != nil {
		if ferr := u.rc.err(); ferr != nil {
			u.rc.abort(ctx, true)
			return fmt.Errorf("commit: %w", ferr)
		}
		return &restartError{fmt.Errorf("commit transaction: %w", err)}
	}
	var committed bool
	err := c.outsideQueryLock(func() (err error) {
		committed, err = u.tx.commit(endCtx, offsets)
		return err
	})
	if err != nil {
		err = fmt.Errorf("commit transaction (outcome unknown): %w", err)
		if errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.TransactionalIDAuthorizationFailed) {
			return err // another producer has our id, or we may not use it
		}
		// The client is in an unknown state (a transaction the broker timed
		// out, a broker outage). Local state holds only committed data: a
		// fresh client rebuilds everything from what Kafka committed.
		return &restartError{err}
	}
	if !committed {
		u.log.Warn("transaction aborted; rebuilding tasks on their committed state")
		c.aborts++
		c.done(start)
		if u.inRebalance > 0 {
			u.tm.rebuildPending = true
			return nil
		}
		return u.tm.rebuild(ctx)
	}
	if err := c.committed(); err != nil {
		return err
	}
	c.committedOffsets(offsets)
	u.sb.checkpoint()
	c.done(start)
	c.commits++
	u.pg.afterCommit(ctx)
	return nil
}

// outsideQueryLock runs wait, a wait that changes no task or store (the
// producer's flush, the offset or transaction commit, the stores' syncs
// and the checkpoint file once committed applied the writes), with the
// query lock released when the unit's loop holds it (queriesIn): a commit
// is the longest the loop holds it, and queries need not wait it out. What
// they read meanwhile is right: prepare marked the cached writes clean but
// left them cached with their values, over stores that hold the last
// commit, and no rebalance callback runs before the loop allows it. The
// one exception is a range drop held for the commit: the cache no longer
// hides the dropped keys, which the store still has, so a commit holding
// one keeps the lock.
func (c *committer) outsideQueryLock(wait func() error) error {
	if !c.queriesIn || c.holdsDrops() {
		return wait()
	}
	c.openedToQueries.Add(1)
	// The loop holds both locks: taken again in their order.
	c.u.qmu.Unlock()
	c.u.pmu.Unlock()
	defer func() {
		c.u.pmu.Lock()
		c.u.qmu.Lock()
	}()
	if testCommitWait != nil {
		testCommitWait()
	}
	return wait()
}

// holdsDrops says whether a store of an active task holds a range drop for
// the commit under way.
func (c *committer) holdsDrops() bool {
	for _, t := range c.u.tm.order {
		if t.sm == nil {
			continue
		}
		for _, s := range t.sm.order {
			if len(s.heldDrops) > 0 {
				return true
			}
		}
	}
	return false
}

// committed runs every task's committed step, whose store syncs let
// queries in when the loop commits.
func (c *committer) committed() error {
	for _, t := range c.u.tm.order {
		t.sm.syncOutside = c.outsideQueryLock
		err := t.sm.committed()
		t.sm.syncOutside = nil
		if err != nil {
			return err
		}
	}
	return nil
}

// testCommitWait, set by tests before any App runs, is called at the start
// of each wait open to queries: it can widen the window queries read in.
var testCommitWait func()

// done closes a commit period, whatever its outcome.
func (c *committer) done(start time.Time) {
	for _, t := range c.u.tm.order {
		t.commitRequested = false
	}
	c.uncommitted = false
	c.lastCommit = c.u.cfg.now()
	c.dur += time.Since(start)
	c.latency.observe(time.Since(start))
}
