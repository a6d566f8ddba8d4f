// Command rawloop is the "physical limit" contender of kgen's benchmark: the
// workloads written directly on franz-go, with nothing between the consumer
// and the producer but the work itself. Each of -parallelism goroutines is a
// member of the consumer group with its own client; each polls, processes
// everything it polled, produces asynchronously and, every commit interval
// and before giving up partitions, flushes the producer and commits the
// polled offsets (at-least-once).
//
// Its stores are Go maps, one per input partition, shared by the goroutines
// so that a partition moved by a rebalance keeps its state without a
// restore; their changelog is a plain produce to the changelog topic the
// harness created. Sink and changelog records go to the input record's
// partition: the source is keyed with Kafka's partitioner and the output
// topics have as many partitions, so this is the partition a keyed producer
// would choose.
package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kgen-dev/kgen/bench/internal/protocol"
	"github.com/kgen-dev/kgen/bench/internal/track"
)

const name = "raw"

func main() {
	var a protocol.Args
	a.Register(flag.CommandLine)
	flag.Parse()
	if a.Probe {
		r := protocol.Result{Contender: name, Workload: a.Workload, Guarantee: a.Guarantee}
		protocol.Print(os.Stdout, r)
		return
	}
	if err := a.Check(); err != nil {
		protocol.Fail(name, &a, err)
	}
	res, err := run(&a)
	if err != nil {
		res.Error = err.Error()
		protocol.Print(os.Stdout, res)
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
	protocol.Print(os.Stdout, res)
}

// partState is one input partition's store.
type partState struct {
	mu     sync.Mutex
	kv     map[string][]byte
	counts map[string]int64
}

type loop struct {
	a         *protocol.Args
	exp       protocol.Expect
	changelog string
	tr        *track.Tracker
	// repartition-count: the intermediate topic, its partition count, and
	// the partitioner of its new keys (murmur2, as Kafka's producer).
	repart      string
	repartParts int32
	partitioner kgo.TopicPartitioner

	mu    sync.Mutex
	parts map[int32]*partState

	stopping context.Context // done once the run is over: no more work

	errOnce sync.Once
	err     error
	failed  chan struct{}
}

func (l *loop) fail(err error) {
	l.errOnce.Do(func() {
		l.err = err
		close(l.failed)
	})
}

func (l *loop) part(p int32) *partState {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.parts[p]
	if s == nil {
		s = &partState{kv: map[string][]byte{}, counts: map[string]int64{}}
		l.parts[p] = s
	}
	return s
}

func run(a *protocol.Args) (protocol.Result, error) {
	res := protocol.Result{Contender: name, Workload: a.Workload, Guarantee: a.Guarantee}
	if protocol.ProcessorForm(a.Workload) != a.Workload {
		res.Unsupported, res.Error = true, a.Workload+": operators are kgen's and Kafka Streams' (the raw loop's figures are under "+protocol.ProcessorForm(a.Workload)+")"
		return res, nil
	}
	exp, _ := protocol.Expected(a.Workload, a.Expect)
	switch a.Workload {
	case protocol.KVPut, protocol.Count, protocol.RepartitionCount:
		res.Store = "Go map per partition, changelogged by a plain produce"
	}
	eos := a.Guarantee == protocol.ExactlyOnce
	l := &loop{a: a, exp: exp, tr: track.New(a.Expect, exp), parts: map[int32]*partState{}, failed: make(chan struct{})}
	if eos {
		l.tr = track.NewTransactional()
	}
	if exp.Store != "" {
		l.changelog = protocol.Changelog(a.App, exp.Store)
	}
	if a.Workload == protocol.RepartitionCount {
		if eos {
			// Reported as unsupported, not as a failure.
			res.Unsupported, res.Error = true, a.Workload+": the raw loop has no exactly-once form of the two hops"
			return res, nil
		}
		if err := l.createRepartition(); err != nil {
			return res, err
		}
	}
	ctx, stop := context.WithCancel(context.Background())
	l.stopping = ctx
	var wg sync.WaitGroup
	for i := range a.Parallelism {
		if eos {
			sess, err := l.session(i)
			if err != nil {
				stop()
				wg.Wait()
				return res, err
			}
			wg.Go(func() {
				if err := l.workEOS(ctx, sess); err != nil {
					l.fail(err)
				}
			})
			continue
		}
		cl, err := l.client(i)
		if err != nil {
			stop()
			wg.Wait()
			return res, err
		}
		wg.Go(func() {
			if err := l.work(ctx, cl); err != nil {
				l.fail(err)
			}
		})
	}
	if eos {
		wg.Go(func() {
			if err := track.WatchCommitted(ctx, strings.Split(a.Brokers, ","), a.App, a.Source, l.tr); err != nil {
				l.fail(fmt.Errorf("watch commits: %w", err))
			}
		})
	}
	timeout := time.NewTimer(a.Timeout)
	defer timeout.Stop()
	var err error
	select {
	case <-l.tr.Done():
	case <-l.failed:
	case <-timeout.C:
		err = fmt.Errorf("timed out after %v", a.Timeout)
	}
	stop()
	wg.Wait()
	l.tr.Fill(&res)
	if err == nil {
		err = l.err
	}
	return res, err
}

func (l *loop) client(i int) (*kgo.Client, error) {
	var cl *kgo.Client
	// Before partitions go to another member, everything polled from them is
	// processed (rebalances are blocked while a poll is being worked on);
	// flush it and commit, so the next owner starts after it.
	flushCommit := func(ctx context.Context, _ *kgo.Client, _ map[string][]int32) {
		if l.stopping.Err() != nil {
			return // the member is closing; its final commit is done
		}
		if err := l.commit(ctx, cl); err != nil {
			l.fail(fmt.Errorf("commit before revocation: %w", err))
		}
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(strings.Split(l.a.Brokers, ",")...),
		kgo.ClientID(fmt.Sprintf("%s-%d", l.a.App, i)),
		kgo.ConsumerGroup(l.a.App),
		kgo.ConsumeTopics(l.topics()...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsRevoked(flushCommit),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
	)
	if err != nil {
		return nil, fmt.Errorf("client %d: %w", i, err)
	}
	return cl, nil
}

func (l *loop) commit(ctx context.Context, cl *kgo.Client) error {
	if err := cl.Flush(ctx); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	return cl.CommitUncommittedOffsets(ctx)
}

func (l *loop) work(ctx context.Context, cl *kgo.Client) error {
	defer cl.Close()
	onSink := func(r *kgo.Record, err error) {
		if err != nil {
			l.fail(fmt.Errorf("produce to %s/%d: %w", r.Topic, r.Partition, err))
			return
		}
		l.tr.SinkAck()
	}
	onChangelog := func(r *kgo.Record, err error) {
		if err != nil {
			l.fail(fmt.Errorf("produce to %s/%d: %w", r.Topic, r.Partition, err))
			return
		}
		l.tr.ChangelogAck()
	}
	onHop := func(r *kgo.Record, err error) {
		if err != nil {
			l.fail(fmt.Errorf("produce to %s/%d: %w", r.Topic, r.Partition, err))
		}
	}
	// count counts fp's records per key into its partition's map and
	// produces each new count to the changelog and the sink.
	count := func(fp kgo.FetchTopicPartition, inputs bool) {
		s := l.part(fp.Partition)
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, r := range fp.Records {
			if inputs {
				l.tr.Input()
			}
			n := s.counts[string(r.Key)] + 1
			s.counts[string(r.Key)] = n
			v := binary.BigEndian.AppendUint64(make([]byte, 0, 8), uint64(n))
			cl.Produce(ctx, &kgo.Record{Topic: l.changelog, Partition: r.Partition, Key: r.Key, Value: v}, onChangelog)
			cl.Produce(ctx, &kgo.Record{Topic: l.a.Sink, Partition: r.Partition, Key: r.Key, Value: v}, onSink)
		}
	}
	lastCommit := time.Now()
	for {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		var ferr error
		fetches.EachError(func(topic string, p int32, err error) {
			if ferr == nil {
				ferr = fmt.Errorf("fetch %s/%d: %w", topic, p, err)
			}
		})
		if ferr != nil {
			cl.AllowRebalance()
			return ferr
		}
		fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
			if len(fp.Records) == 0 {
				return
			}
			switch l.a.Workload {
			case protocol.SourceOnly:
				for range fp.Records {
					l.tr.Input()
				}
			case protocol.Passthrough:
				for _, r := range fp.Records {
					l.tr.Input()
					cl.Produce(ctx, &kgo.Record{Topic: l.a.Sink, Partition: r.Partition, Key: r.Key, Value: r.Value}, onSink)
				}
			case protocol.KVPut:
				s := l.part(fp.Partition)
				s.mu.Lock()
				for _, r := range fp.Records {
					l.tr.Input()
					v := bytes.Clone(r.Value)
					s.kv[string(r.Key)] = v
					cl.Produce(ctx, &kgo.Record{Topic: l.changelog, Partition: r.Partition, Key: r.Key, Value: v}, onChangelog)
				}
				s.mu.Unlock()
			case protocol.RepartitionCount:
				if fp.Topic == l.a.Source {
					// First hop: re-key by the value's group.
					for _, r := range fp.Records {
						l.tr.Input()
						out := &kgo.Record{Topic: l.repart, Key: []byte(protocol.Group(r.Value)), Value: r.Value}
						out.Partition = int32(l.partitioner.Partition(out, int(l.repartParts)))
						cl.Produce(ctx, out, onHop)
					}
					return
				}
				// Second hop: count per group, as count does per key; the
				// records were counted as inputs on the first.
				count(fp, false)
			case protocol.Count:
				count(fp, true)
			}
		})
		if time.Since(lastCommit) >= l.a.CommitInterval {
			if err := l.commit(ctx, cl); err != nil && ctx.Err() == nil {
				cl.AllowRebalance()
				return err
			}
			lastCommit = time.Now()
		}
		cl.AllowRebalance()
	}
	// Clean close: everything processed is acknowledged and committed
	// before the member leaves the group.
	cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := l.commit(cctx, cl); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("final commit: %w", err)
	}
	cl.AllowRebalance()
	return nil
}

// topics are what the loop consumes: the source, and for repartition-count
// its intermediate topic too.
func (l *loop) topics() []string {
	if l.repart != "" {
		return []string{l.a.Source, l.repart}
	}
	return []string{l.a.Source}
}

// createRepartition creates the intermediate topic of repartition-count,
// with the source's partition count, as kgen and Kafka Streams create
// their repartition topics.
func (l *loop) createRepartition() error {
	l.repart = l.a.App + "-" + protocol.RepartitionName + "-repartition"
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(l.a.Brokers, ",")...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	details, err := adm.ListTopics(ctx, l.a.Source)
	if err != nil {
		return fmt.Errorf("describe %s: %w", l.a.Source, err)
	}
	l.repartParts = int32(len(details[l.a.Source].Partitions))
	if l.repartParts == 0 {
		return fmt.Errorf("source topic %s has no partitions", l.a.Source)
	}
	resp, err := adm.CreateTopic(ctx, l.repartParts, -1, nil, l.repart)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("create %s: %w", l.repart, err)
	}
	l.partitioner = kgo.StickyKeyPartitioner(nil).ForTopic(l.repart)
	return nil
}
