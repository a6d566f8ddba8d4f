package stream

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// transaction is a unit's exactly-once transaction (Kafka Streams'
// StreamsProducer under exactly-once v2): the unit's client produces every
// output and changelog record inside it, and it commits the offsets the
// unit's tasks have processed with them.
//
// kgen runs it itself rather than through franz-go's GroupTransactSession,
// which aborts a transaction whenever a rebalance revokes a partition, and
// decides so before the revoke callback runs: every rebalance then threw
// away the work of every task since the last commit. Here a revocation
// commits instead, as Kafka Streams does, and the tasks the unit keeps go
// on. Offsets are the ones the tasks report, not the consumer's polled
// positions, so nothing has to be processed in a hurry before a commit.
//
// Fencing is Kafka's (KIP-447): the offset commit carries the member id and
// generation, so a member the group has moved on from cannot commit, and a
// partition's next owner reads its committed offset with require_stable,
// which waits for an open transaction to end. All methods run on the unit's
// goroutine or in its rebalance callbacks, never both at once; acked is
// written by the producer's callbacks.
type transaction struct {
	cl    *kgo.Client
	log   *slog.Logger
	id    string // the transactional id
	group string
	// instance is the static member id (group.instance.id), nil if none.
	instance *string
	open     bool
	// ids are the topic ids the offset commit names topics by (since
	// TxnOffsetCommit v6), looked up once per topic.
	ids map[string][16]byte
	// acked counts records the broker acknowledged in the open transaction.
	// With none, franz-go ends the transaction without an EndTxn (Kafka has
	// nothing to end), so offsets must not have been added to it.
	acked atomic.Uint64
}

// begin opens a transaction if none is open.
func (x *transaction) begin() error {
	if x.open {
		return nil
	}
	if err := x.cl.BeginTransaction(); err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	x.acked.Store(0)
	x.open = true
	return nil
}

// produced counts an acknowledged record of the open transaction.
func (x *transaction) produced() { x.acked.Add(1) }

// commit makes offsets and everything produced since begin durable at once;
// the caller has flushed the producer (the collector's flush, which also
// sends dead letters). committed is false when Kafka refused in a way that
// only means this transaction must go (a rebalance ended the generation,
// the coordinator moved): it has then been aborted, and the caller rewinds
// to the last commit. An error means the outcome is unknown or the producer
// is fenced.
func (x *transaction) commit(ctx context.Context, offsets offsetCommits) (committed bool, err error) {
	if !x.open || x.acked.Load() == 0 {
		// Nothing reached a partition, so nothing but offsets changed (a
		// store write always logs a changelog record). End whatever was
		// begun and commit the offsets as a consumer does; the member id
		// and generation fence them just the same.
		if x.open {
			if _, err := x.end(ctx, kgo.TryAbort); err != nil {
				return false, err
			}
		}
		if len(offsets) == 0 {
			return true, nil
		}
		if err := commitWithTimes(x.log, offsets, func() error { return commitOffsets(ctx, x.cl, offsets) }); err != nil {
			if abortable(err) {
				return false, nil
			}
			return false, fmt.Errorf("commit offsets: %w", err)
		}
		return true, nil
	}
	if len(offsets) > 0 {
		if err := commitWithTimes(x.log, offsets, func() error { return x.commitOffsets(ctx, offsets) }); err != nil {
			if _, aerr := x.end(ctx, kgo.TryAbort); aerr != nil {
				return false, aerr
			}
			if abortable(err) {
				return false, nil
			}
			return false, err
		}
	}
	return x.end(ctx, kgo.TryCommit)
}

// abort ends the open transaction without committing it. Buffered records
// are dropped when the unit is going away (they fail with ErrAborting);
// otherwise they are flushed first, so no producer callback reports a
// failure for a unit that goes on.
func (x *transaction) abort(ctx context.Context, closing bool) error {
	if !x.open {
		return nil
	}
	flush := x.cl.Flush
	if closing {
		flush = x.cl.AbortBufferedRecords
	}
	if err := flush(ctx); err != nil {
		return err
	}
	_, err := x.end(ctx, kgo.TryAbort)
	return err
}

// end sends EndTxn. A commit franz-go could not attempt, or one Kafka says
// must abort, is retried as an abort and reported as not committed.
func (x *transaction) end(ctx context.Context, try kgo.TransactionEndTry) (committed bool, err error) {
	x.open = false
	err = x.cl.EndTransaction(ctx, try)
	if err != nil && try == kgo.TryCommit && (errors.Is(err, kerr.OperationNotAttempted) ||
		errors.Is(err, kerr.TransactionAbortable) || errors.Is(err, kerr.UnknownServerError)) {
		// franz-go documents this retry: an abort (an unconfirmed commit
		// included) bumps the epoch and fences whatever is still open.
		return false, x.cl.EndTransaction(ctx, kgo.TryAbort)
	}
	if err != nil {
		return false, err
	}
	return bool(try), nil
}

// commitOffsets adds the group's offsets to the open transaction
// (AddOffsetsToTxn, then TxnOffsetCommit with the member's generation), each
// with its stream times as metadata.
func (x *transaction) commitOffsets(ctx context.Context, offsets offsetCommits) error {
	pid, epoch, err := x.cl.ProducerID(ctx)
	if err != nil {
		return fmt.Errorf("producer id: %w", err)
	}
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = x.id, pid, epoch, x.group
	if err := retryConcurrent(ctx, func() error {
		resp, err := add.RequestWith(ctx, x.cl)
		if err != nil {
			return err
		}
		return kerr.ErrorForCode(resp.ErrorCode)
	}); err != nil {
		return fmt.Errorf("add offsets to transaction: %w", err)
	}
	member, generation := x.cl.GroupMetadata()
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = x.id, x.group, pid, epoch
	req.MemberID, req.Generation = member, generation
	req.InstanceID = x.instance
	ids, err := x.topicIDs(ctx, offsets)
	if err != nil {
		return err
	}
	names := map[[16]byte]string{}
	for topic, parts := range offsets {
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic, rt.TopicID = topic, ids[topic]
		names[rt.TopicID] = topic
		for p, o := range parts {
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = p, o.Offset, o.Epoch
			if o.meta != "" {
				rp.Metadata = &o.meta // the stream times (streamtime.go)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	return retryConcurrent(ctx, func() error {
		resp, err := req.RequestWith(ctx, x.cl)
		if err != nil {
			return err
		}
		for _, t := range resp.Topics {
			topic := t.Topic
			if topic == "" {
				topic = names[t.TopicID] // v6 answers with ids only
			}
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					if errors.Is(err, kerr.UnknownTopicID) {
						delete(x.ids, topic) // recreated: look it up again next time
					}
					return fmt.Errorf("commit offset %s/%d in transaction: %w", topic, p.Partition, err)
				}
			}
		}
		return nil
	})
}

// topicIDs returns the ids of the topics in offsets, asking the cluster
// for the ones not known yet.
func (x *transaction) topicIDs(ctx context.Context, offsets offsetCommits) (map[string][16]byte, error) {
	if x.ids == nil {
		x.ids = map[string][16]byte{}
	}
	var missing []string
	for topic := range offsets {
		if _, ok := x.ids[topic]; !ok {
			missing = append(missing, topic)
		}
	}
	if len(missing) == 0 {
		return x.ids, nil
	}
	details, err := kadm.NewClient(x.cl).ListTopics(ctx, missing...)
	if err != nil {
		return nil, fmt.Errorf("topic ids: %w", err)
	}
	for _, topic := range missing {
		d, ok := details[topic]
		if !ok || d.Err != nil {
			return nil, fmt.Errorf("topic id of %s: %w", topic, cmp.Or(d.Err, error(kerr.UnknownTopicOrPartition)))
		}
		x.ids[topic] = d.ID
	}
	return x.ids, nil
}

// retryConcurrent retries fn while Kafka answers CONCURRENT_TRANSACTIONS:
// the markers of the previous transaction are still being written.
func retryConcurrent(ctx context.Context, fn func() error) error {
	wait := 5 * time.Millisecond
	for tries := 0; ; tries++ {
		err := fn()
		if !errors.Is(err, kerr.ConcurrentTransactions) || tries == 20 {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, 200*time.Millisecond)
	}
}

// abortable says whether a failed offset commit only means the transaction
// cannot commit now: the group moved to a new generation or forgot the
// member, or the coordinator is away. The unit rewinds to its last commit
// and goes on.
func abortable(err error) bool {
	for _, e := range []error{
		kerr.IllegalGeneration, kerr.UnknownMemberID, kerr.StaleMemberEpoch,
		kerr.GroupIDNotFound, kerr.RebalanceInProgress, kerr.CoordinatorNotAvailable,
		kerr.CoordinatorLoadInProgress, kerr.NotCoordinator, kerr.ConcurrentTransactions,
		kerr.TransactionAbortable, kerr.UnknownServerError,
	} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
