package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kgen-dev/kgen/bench/internal/protocol"
)

// Exactly-once: each member is a franz-go GroupTransactSession. It opens a
// transaction when it polls records, produces into it, and ends it (outputs
// and input offsets together) every commit interval; a rebalance during a
// transaction aborts it, and the records are polled again from the last
// commit. Count keeps the transaction's new counts aside and folds them into
// the partition's map only when the transaction commits, so an abort leaves
// the map as the committed outputs say.

func (l *loop) session(i int) (*kgo.GroupTransactSession, error) {
	s, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(strings.Split(l.a.Brokers, ",")...),
		kgo.ClientID(fmt.Sprintf("%s-%d", l.a.App, i)),
		kgo.TransactionalID(fmt.Sprintf("%s-%d", l.a.App, i)),
		kgo.ConsumerGroup(l.a.App),
		kgo.ConsumeTopics(l.a.Source),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
	)
	if err != nil {
		return nil, fmt.Errorf("session %d: %w", i, err)
	}
	return s, nil
}

func (l *loop) workEOS(ctx context.Context, s *kgo.GroupTransactSession) error {
	defer s.Close()
	onSink := func(r *kgo.Record, err error) {
		if err == nil {
			l.tr.SinkAck()
		}
	}
	onChangelog := func(r *kgo.Record, err error) {
		if err == nil {
			l.tr.ChangelogAck()
		}
	}
	// Counts written by the open transaction, per partition.
	pending := map[int32]map[string]int64{}
	inTxn := false
	var began time.Time
	end := func(ctx context.Context) error {
		committed, err := s.End(ctx, kgo.TryCommit)
		inTxn = false
		if err != nil {
			clear(pending)
			return fmt.Errorf("end transaction: %w", err)
		}
		if committed {
			for p, counts := range pending {
				st := l.part(p)
				st.mu.Lock()
				for k, n := range counts {
					st.counts[k] = n
				}
				st.mu.Unlock()
			}
		}
		clear(pending)
		return nil
	}
	for {
		// A bounded poll, so that an open transaction ends on time even
		// when no more records come.
		pctx, cancel := context.WithTimeout(ctx, l.a.CommitInterval)
		fetches := s.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			break
		}
		var ferr error
		fetches.EachError(func(topic string, p int32, err error) {
			if ferr == nil && !errors.Is(err, context.DeadlineExceeded) {
				ferr = fmt.Errorf("fetch %s/%d: %w", topic, p, err)
			}
		})
		if ferr != nil {
			return ferr
		}
		if fetches.NumRecords() > 0 && !inTxn {
			if err := s.Begin(); err != nil {
				return fmt.Errorf("begin transaction: %w", err)
			}
			inTxn, began = true, time.Now()
		}
		fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
			for _, r := range fp.Records {
				l.tr.Input()
				switch l.a.Workload {
				case protocol.Passthrough:
					s.Produce(ctx, &kgo.Record{Topic: l.a.Sink, Partition: r.Partition, Key: r.Key, Value: r.Value}, onSink)
				case protocol.KVPut:
					st := l.part(fp.Partition)
					v := bytes.Clone(r.Value)
					st.mu.Lock()
					st.kv[string(r.Key)] = v // a repeated put after an abort writes the same value
					st.mu.Unlock()
					s.Produce(ctx, &kgo.Record{Topic: l.changelog, Partition: r.Partition, Key: r.Key, Value: v}, onChangelog)
				case protocol.Count:
					counts := pending[fp.Partition]
					if counts == nil {
						counts = map[string]int64{}
						pending[fp.Partition] = counts
					}
					n, ok := counts[string(r.Key)]
					if !ok {
						st := l.part(fp.Partition)
						st.mu.Lock()
						n = st.counts[string(r.Key)]
						st.mu.Unlock()
					}
					n++
					counts[string(r.Key)] = n
					v := binary.BigEndian.AppendUint64(make([]byte, 0, 8), uint64(n))
					s.Produce(ctx, &kgo.Record{Topic: l.changelog, Partition: r.Partition, Key: r.Key, Value: v}, onChangelog)
					s.Produce(ctx, &kgo.Record{Topic: l.a.Sink, Partition: r.Partition, Key: r.Key, Value: v}, onSink)
				}
			}
		})
		if inTxn && time.Since(began) >= l.a.CommitInterval {
			if err := end(ctx); err != nil {
				return err
			}
		}
	}
	if inTxn {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := end(cctx); err != nil {
			return err
		}
	}
	return nil
}
