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
	"slices"
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
	win    windows
}

// windows are one partition's open windows of the windowed counts: counts
// per window start and key, the starts in ascending order, and the
// partition's stream time (-1: nothing seen). A window is forgotten once
// it closes, which is all the retention a correct count needs.
type windows struct {
	streamTime int64
	starts     []int64
	counts     map[int64]map[string]int64
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
		s = &partState{kv: map[string][]byte{}, counts: map[string]int64{}, win: windows{streamTime: -1, counts: map[int64]map[string]int64{}}}
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
	if protocol.IsJoin(a.Workload) {
		res.Unsupported, res.Error = true, a.Workload+": the raw loop has no join"
		return res, nil
	}
	if protocol.IsRestore(a.Workload) {
		return restoreRead(a)
	}
	exp, _ := a.Expected()
	switch a.Workload {
	case protocol.KVPut, protocol.Count, protocol.RepartitionCount, protocol.WindowedCount, protocol.WindowedCountFinal:
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
	if eos && protocol.IsWindowed(a.Workload) {
		res.Unsupported, res.Error = true, a.Workload+": the raw loop has no exactly-once form of the windowed counts"
		return res, nil
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
			case protocol.WindowedCount, protocol.WindowedCountFinal:
				s := l.part(fp.Partition)
				s.mu.Lock()
				for _, r := range fp.Records {
					l.tr.Input()
					s.win.add(r, l.a.Workload == protocol.WindowedCountFinal, func(key []byte, start, n int64, sink bool) {
						wk := binary.BigEndian.AppendUint64(append(make([]byte, 0, len(key)+12), key...), uint64(start))
						v := binary.BigEndian.AppendUint64(make([]byte, 0, 8), uint64(n))
						if sink {
							cl.Produce(ctx, &kgo.Record{Topic: l.a.Sink, Partition: r.Partition, Key: wk, Value: v}, onSink)
							return
						}
						// The changelog key of a window store: key ‖ start ‖ sequence number.
						cl.Produce(ctx, &kgo.Record{Topic: l.changelog, Partition: r.Partition, Key: binary.BigEndian.AppendUint32(wk, 0), Value: v}, onChangelog)
					})
				}
				s.mu.Unlock()
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
	// Wait until every partition has a leader that answers: a member whose
	// first metadata lacks the topic would not consume it until its next
	// metadata refresh, seconds later (kgen and Kafka Streams create their
	// repartition topics before they join the group too).
	for {
		ends, err := adm.ListEndOffsets(ctx, l.repart)
		ready := 0
		if err == nil {
			ends.Each(func(o kadm.ListedOffset) {
				if o.Err == nil {
					ready++
				}
			})
		}
		if ready == int(l.repartParts) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: partitions not ready: %w", l.repart, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// add counts r in its tumbling window and calls out with the window's new
// count for the changelog (sink false) and, emitting updates, for the sink;
// emitting final results, it first calls out for the sink with every window
// the record's time closes. A record too late for its window is dropped
// (none is: the source's timestamps never go back within a partition).
func (w *windows) add(r *kgo.Record, final bool, out func(key []byte, start, n int64, sink bool)) {
	size, grace := protocol.WindowSize.Milliseconds(), protocol.WindowGrace.Milliseconds()
	ts := r.Timestamp.UnixMilli()
	w.streamTime = max(w.streamTime, ts)
	closeT := w.streamTime - grace
	for len(w.starts) > 0 && w.starts[0]+size <= closeT {
		start := w.starts[0]
		if final {
			for k, n := range w.counts[start] {
				out([]byte(k), start, n, true)
			}
		}
		delete(w.counts, start)
		w.starts = w.starts[1:]
	}
	start := ts - ts%size
	if start+size <= closeT {
		return
	}
	byKey := w.counts[start]
	if byKey == nil {
		byKey = map[string]int64{}
		w.counts[start] = byKey
		i, _ := slices.BinarySearch(w.starts, start)
		w.starts = slices.Insert(w.starts, i, start)
	}
	n := byKey[string(r.Key)] + 1
	byKey[string(r.Key)] = n
	out(r.Key, start, n, false)
	if !final {
		out(r.Key, start, n, true)
	}
}

// restoreRead is the raw form of the restore workloads: one franz-go
// client reads the store's changelog from its start to the end offsets it
// had when the read began, touching every record's key and value.
func restoreRead(a *protocol.Args) (protocol.Result, error) {
	res := protocol.Result{Contender: name, Workload: a.Workload, Guarantee: a.Guarantee, Store: "franz-go read of the changelog"}
	exp, _ := a.Expected()
	topic := protocol.Changelog(a.App, exp.Store)
	tr := track.New(a.Expect, protocol.Expect{})
	brokers := strings.Split(a.Brokers, ",")
	adm, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return res, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.Timeout)
	defer cancel()
	ends, err := kadm.NewClient(adm).ListEndOffsets(ctx, topic)
	adm.Close()
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return res, fmt.Errorf("end offsets of %s: %w", topic, err)
	}
	remaining := map[int32]int64{}
	offsets := map[string]map[int32]kgo.Offset{topic: {}}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			remaining[o.Partition] = o.Offset
			offsets[topic][o.Partition] = kgo.NewOffset().AtStart()
		}
	})
	tr.Begin()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumePartitions(offsets))
	if err != nil {
		return res, err
	}
	defer cl.Close()
	var touched int
	for len(remaining) > 0 {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			tr.Fill(&res)
			return res, fmt.Errorf("read %s: %w (%d partitions not read to the end)", topic, err, len(remaining))
		}
		var ferr error
		fetches.EachError(func(t string, p int32, err error) {
			if ferr == nil {
				ferr = fmt.Errorf("read %s/%d: %w", t, p, err)
			}
		})
		if ferr != nil {
			tr.Fill(&res)
			return res, ferr
		}
		fetches.EachPartition(func(p kgo.FetchTopicPartition) {
			for _, r := range p.Records {
				touched += len(r.Key) + len(r.Value)
				tr.Input()
				if r.Offset+1 >= remaining[p.Partition] {
					delete(remaining, p.Partition)
				}
			}
		})
	}
	tr.Fill(&res)
	if touched == 0 && res.Consumed > 0 {
		return res, errors.New("read only empty records")
	}
	return res, nil
}
