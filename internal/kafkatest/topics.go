package kafkatest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	// topicTimeout bounds creating a topic and waiting until it is usable.
	topicTimeout = 30 * time.Second
	// defaultReadTimeout bounds ReadToEnd unless ReadTimeout says otherwise.
	defaultReadTimeout = 30 * time.Second
	// pollInterval is how often a condition on the cluster is checked again.
	pollInterval = 50 * time.Millisecond
	// maxTopicBase leaves room for the random suffix in Kafka's 249 character limit.
	maxTopicBase = 200
)

// TopicName returns a topic name for t that no other test, and no earlier run
// of t, uses: the test name with every character other than an ASCII letter,
// digit or '-' replaced by '-', then a random suffix. Unique names let tests
// share one real broker.
func TopicName(t testing.TB) string {
	var b strings.Builder
	for _, r := range t.Name() {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
		if b.Len() >= maxTopicBase {
			break
		}
	}
	return fmt.Sprintf("%s-%08x", b.String(), rand.Uint32())
}

// CreateTopic creates a topic named by TopicName(t) with the given number of
// partitions, the cluster's default replication factor and configs (nil for
// none), waits until every partition has a leader that answers, and returns
// the name. On a real broker the topic is deleted when the test ends.
func (c *Cluster) CreateTopic(t testing.TB, partitions int32, configs map[string]*string) string {
	t.Helper()
	name := TopicName(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds...))
	if err != nil {
		t.Fatalf("kafkatest: create admin client for topic %q: %v", name, err)
	}
	adm := kadm.NewClient(cl)
	t.Cleanup(func() {
		defer cl.Close()
		if !c.real {
			return // the kfake cluster goes away with its topics
		}
		ctx, cancel := context.WithTimeout(context.Background(), topicTimeout)
		defer cancel()
		if _, err := adm.DeleteTopic(ctx, name); err != nil {
			t.Logf("kafkatest: delete topic %q: %v", name, err)
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), topicTimeout)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, partitions, -1, configs, name); err != nil {
		t.Fatalf("kafkatest: create topic %q with %d partitions: %v", name, partitions, err)
	}
	if err := waitTopic(ctx, adm, name, partitions); err != nil {
		t.Fatalf("kafkatest: wait for topic %q: %v", name, err)
	}
	return name
}

// waitTopic polls until metadata shows every partition of topic with a leader
// and the leaders answer a list offsets request, or until ctx ends.
func waitTopic(ctx context.Context, adm *kadm.Client, topic string, partitions int32) error {
	for {
		err := topicReady(ctx, adm, topic, partitions)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not usable before the deadline: %w", err)
		case <-time.After(pollInterval):
		}
	}
}

// topicReady returns nil when topic is usable, or why it is not yet.
func topicReady(ctx context.Context, adm *kadm.Client, topic string, partitions int32) error {
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		return fmt.Errorf("metadata request: %w", err)
	}
	td, ok := md.Topics[topic]
	switch {
	case !ok:
		return errors.New("not in metadata")
	case td.Err != nil:
		return fmt.Errorf("metadata: %w", td.Err)
	case int32(len(td.Partitions)) != partitions:
		return fmt.Errorf("metadata lists %d of %d partitions", len(td.Partitions), partitions)
	}
	for _, p := range td.Partitions {
		if p.Err != nil {
			return fmt.Errorf("partition %d: %w", p.Partition, p.Err)
		}
		if p.Leader < 0 {
			return fmt.Errorf("partition %d has no leader", p.Partition)
		}
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return fmt.Errorf("list end offsets: %w", err)
	}
	if err := ends.Error(); err != nil {
		return fmt.Errorf("list end offsets: %w", err)
	}
	return nil
}

// ReadOption changes how ReadToEnd reads.
type ReadOption func(*readConfig)

type readConfig struct {
	committed bool
	timeout   time.Duration
	settle    time.Duration
}

// ReadCommitted makes ReadToEnd read with the read_committed isolation level:
// records of aborted and still open transactions are not returned, and the
// end is the last stable offset instead of the high watermark. Because a
// committed transaction's markers land shortly after its commit returns,
// ReadToEnd first waits (see SettleTimeout) for the last stable offset to
// reach the high watermark.
func ReadCommitted() ReadOption {
	return func(rc *readConfig) { rc.committed = true }
}

// SettleTimeout bounds how long ReadToEnd with ReadCommitted waits for open
// transactions to end before it reads to the last stable offset anyway; the
// default is 10 s.
func SettleTimeout(d time.Duration) ReadOption {
	return func(rc *readConfig) { rc.settle = d }
}

// ReadTimeout bounds how long ReadToEnd may take; the default is 30 s.
func ReadTimeout(d time.Duration) ReadOption {
	return func(rc *readConfig) { rc.timeout = d }
}

// ReadToEnd reads every partition of topic from its start offset up to its end
// offset at the time of the call, and returns the records ordered by partition
// and then offset. Control records (transaction markers) are not returned. The
// test fails if the end is not reached before the timeout (see ReadTimeout).
func (c *Cluster) ReadToEnd(t testing.TB, topic string, opts ...ReadOption) []*kgo.Record {
	t.Helper()
	rc := readConfig{timeout: defaultReadTimeout, settle: defaultSettleTimeout}
	for _, o := range opts {
		o(&rc)
	}
	ctx, cancel := context.WithTimeout(context.Background(), rc.timeout)
	defer cancel()

	starts, ends, err := c.offsetRange(ctx, topic, rc.committed, rc.settle)
	if errors.Is(err, errOpenTransaction) {
		t.Logf("kafkatest: topic %q still has an open transaction after %v; reading to the last stable offset", topic, rc.settle)
		err = nil
	}
	if err != nil {
		t.Fatalf("kafkatest: read topic %q: %v", topic, err)
	}
	from := make(map[int32]kgo.Offset)
	pos := make(map[int32]int64) // next offset to see, per partition still to read
	for p, end := range ends {
		if start := starts[p]; start < end {
			from[p] = kgo.NewOffset().At(start)
			pos[p] = start
		}
	}
	if len(from) == 0 {
		return nil
	}

	level := kgo.ReadUncommitted()
	if rc.committed {
		level = kgo.ReadCommitted()
	}
	// Control records are kept so that the end is seen even when the last
	// offsets before it are transaction markers or aborted records.
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(c.seeds...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from}),
		kgo.FetchIsolationLevel(level),
		kgo.KeepControlRecords(),
	)
	if err != nil {
		t.Fatalf("kafkatest: read topic %q: create client: %v", topic, err)
	}
	defer cl.Close()

	var out []*kgo.Record
	for !reachedEnd(pos, ends) {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("kafkatest: read topic %q: end not reached within %v: %s",
				topic, rc.timeout, progress(pos, ends))
		}
		if errs := fetches.Errors(); len(errs) > 0 {
			e := errs[0]
			t.Fatalf("kafkatest: read topic %q partition %d: %v", e.Topic, e.Partition, e.Err)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			if r.Offset >= ends[r.Partition] {
				return // produced after the call
			}
			pos[r.Partition] = r.Offset + 1
			if !r.Attrs.IsControl() {
				out = append(out, r)
			}
		})
	}
	slices.SortFunc(out, func(a, b *kgo.Record) int {
		return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
	})
	return out
}

// offsetRange lists the start and end offset of every partition of topic;
// with committed, the end is the last stable offset once it has reached the
// high watermark, or, with errOpenTransaction, when settleTimeout ran out.
func (c *Cluster) offsetRange(ctx context.Context, topic string, committed bool, settleTimeout time.Duration) (starts, ends map[int32]int64, err error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds...))
	if err != nil {
		return nil, nil, fmt.Errorf("create admin client: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	list := func(which string, fn func(context.Context, ...string) (kadm.ListedOffsets, error)) (map[int32]int64, error) {
		listed, err := fn(ctx, topic)
		if err == nil {
			err = listed.Error()
		}
		if err != nil {
			return nil, fmt.Errorf("list %s offsets: %w", which, err)
		}
		offsets := make(map[int32]int64)
		listed.Each(func(o kadm.ListedOffset) { offsets[o.Partition] = o.Offset })
		if len(offsets) == 0 {
			return nil, fmt.Errorf("list %s offsets: topic has no partitions", which)
		}
		return offsets, nil
	}
	if starts, err = list("start", adm.ListStartOffsets); err != nil {
		return nil, nil, err
	}
	if !committed {
		ends, err = list("end", adm.ListEndOffsets)
		return starts, ends, err
	}
	// A transaction's EndTxn returns once the coordinator has logged its
	// decision; the markers reach the partitions a little later, and until
	// then the last stable offset stays before the transaction. Tests read
	// after their writers finished, so wait for the markers to land.
	settle := time.NewTimer(settleTimeout)
	defer settle.Stop()
	for {
		if ends, err = list("last stable", adm.ListCommittedOffsets); err != nil {
			return nil, nil, err
		}
		highs, err := list("end", adm.ListEndOffsets)
		if err != nil {
			return nil, nil, err
		}
		if maps.Equal(ends, highs) {
			return starts, ends, nil
		}
		select {
		case <-settle.C:
			return starts, ends, errOpenTransaction
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// defaultSettleTimeout is long enough for markers to land on a loaded
// machine; a writer's transaction timeout is not needed, since a test's
// writers have ended their transactions by the time it reads.
const defaultSettleTimeout = 10 * time.Second

// errOpenTransaction says a topic still had an open transaction after the
// settle timeout; ReadToEnd then reads to the last stable offset.
var errOpenTransaction = errors.New("a transaction is still open")

// reachedEnd reports whether every partition in pos has been read to its end.
func reachedEnd(pos, ends map[int32]int64) bool {
	for p, next := range pos {
		if next < ends[p] {
			return false
		}
	}
	return true
}

// progress describes, for a failure message, how far each partition was read.
func progress(pos, ends map[int32]int64) string {
	parts := make([]string, 0, len(pos))
	for _, p := range slices.Sorted(maps.Keys(pos)) {
		parts = append(parts, fmt.Sprintf("partition %d at offset %d of %d", p, pos[p], ends[p]))
	}
	return strings.Join(parts, ", ")
}
