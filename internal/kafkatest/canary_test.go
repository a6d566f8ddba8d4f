package kafkatest_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kgen-dev/kgen/internal/kafkatest"
)

// The canary tests check that the broker kafkatest.New gives (kfake, or the
// real one named by KGEN_TEST_BROKERS) does what the runtime relies on:
// keyed produce and consume, group commits, and transactions.

// rec is the part of a record the canaries compare.
type rec struct {
	Partition int32
	Offset    int64
	Key       string
	Value     string
}

func recs(rs []*kgo.Record) []rec {
	out := make([]rec, 0, len(rs))
	for _, r := range rs {
		out = append(out, rec{r.Partition, r.Offset, string(r.Key), string(r.Value)})
	}
	return out
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// produce writes each record and fails the test unless all are acknowledged.
func produce(ctx context.Context, t *testing.T, cl *kgo.Client, rs ...*kgo.Record) {
	t.Helper()
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// pollN polls cl until it has n records, failing the test at the deadline.
func pollN(ctx context.Context, t *testing.T, cl *kgo.Client, n int) []*kgo.Record {
	t.Helper()
	var got []*kgo.Record
	for len(got) < n {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("poll: got %d of %d records before the deadline: %v", len(got), n, recs(got))
		}
		if err := fetches.Err(); err != nil {
			t.Fatalf("poll: %v", err)
		}
		got = append(got, fetches.Records()...)
	}
	return got
}

func TestCanaryProduceConsume(t *testing.T) {
	t.Parallel()
	c := kafkatest.New(t)
	ctx := testContext(t)
	topic := c.CreateTopic(t, 3, nil)
	cl := c.Client(t, kgo.DefaultProduceTopic(topic))

	// Same key, same partition: per key, values come back in produce order.
	for i := range 30 {
		key := fmt.Sprintf("key-%d", i%5)
		produce(ctx, t, cl, &kgo.Record{Key: []byte(key), Value: []byte(fmt.Sprintf("value-%d", i))})
	}
	got := recs(c.ReadToEnd(t, topic))
	if len(got) != 30 {
		t.Fatalf("read %d records, want 30: %v", len(got), got)
	}
	partitionOf := map[string]int32{}
	next := map[int32]int64{}
	byKey := map[string][]string{}
	for _, r := range got {
		if p, ok := partitionOf[r.Key]; ok && p != r.Partition {
			t.Errorf("key %q in partitions %d and %d", r.Key, p, r.Partition)
		}
		partitionOf[r.Key] = r.Partition
		if r.Offset != next[r.Partition] {
			t.Errorf("partition %d: offset %d, want %d", r.Partition, r.Offset, next[r.Partition])
		}
		next[r.Partition] = r.Offset + 1
		byKey[r.Key] = append(byKey[r.Key], r.Value)
	}
	wantByKey := map[string][]string{}
	for i := range 30 {
		key := fmt.Sprintf("key-%d", i%5)
		wantByKey[key] = append(wantByKey[key], fmt.Sprintf("value-%d", i))
	}
	if diff := cmp.Diff(wantByKey, byKey); diff != "" {
		t.Errorf("values per key (-want +got):\n%s", diff)
	}

	// A group consumer from the start sees the same records.
	consumer := c.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumerGroup(kafkatest.TopicName(t)),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if diff := cmp.Diff(got, sortRecs(recs(pollN(ctx, t, consumer, 30)))); diff != "" {
		t.Errorf("group consumer (-ReadToEnd +polled):\n%s", diff)
	}
}

func TestCanaryReadToEndEmpty(t *testing.T) {
	t.Parallel()
	c := kafkatest.New(t)
	topic := c.CreateTopic(t, 2, nil)
	if got := c.ReadToEnd(t, topic, kafkatest.ReadTimeout(10*time.Second)); len(got) != 0 {
		t.Errorf("empty topic: read %v, want nothing", recs(got))
	}
}

func TestCanaryGroupManualCommit(t *testing.T) {
	t.Parallel()
	c := kafkatest.New(t)
	ctx := testContext(t)
	topic := c.CreateTopic(t, 2, nil)
	group := kafkatest.TopicName(t)

	producer := c.Client(t, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 10 {
		p := int32(i % 2)
		produce(ctx, t, producer, &kgo.Record{Partition: p, Value: []byte(fmt.Sprintf("p%d-%d", p, i/2))})
	}

	groupOpts := []kgo.Opt{
		kgo.ConsumeTopics(topic),
		kgo.ConsumerGroup(group),
		kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	}
	// The first consumer is closed by hand before the second starts, so
	// that it leaves the group; it is not one of c.Client's.
	first, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.Seeds()...)}, groupOpts...)...)
	if err != nil {
		t.Fatalf("create first consumer: %v", err)
	}
	var closeFirst sync.Once
	t.Cleanup(func() { closeFirst.Do(first.Close) })
	all := pollN(ctx, t, first, 10)
	// Commit partition 0 through offset 2 and partition 1 through offset 1.
	var done []*kgo.Record
	for _, r := range all {
		if (r.Partition == 0 && r.Offset <= 2) || (r.Partition == 1 && r.Offset <= 1) {
			done = append(done, r)
		}
	}
	if len(done) != 5 {
		t.Fatalf("first consumer: %d records to commit, want 5: %v", len(done), recs(all))
	}
	if err := first.CommitRecords(ctx, done...); err != nil {
		t.Fatalf("first consumer: commit records: %v", err)
	}
	closeFirst.Do(first.Close) // leaves the group without committing more

	second := c.Client(t, groupOpts...)
	got := recs(pollN(ctx, t, second, 5))
	want := []rec{
		{0, 3, "", "p0-3"}, {0, 4, "", "p0-4"},
		{1, 2, "", "p1-2"}, {1, 3, "", "p1-3"}, {1, 4, "", "p1-4"},
	}
	if diff := cmp.Diff(want, sortRecs(got)); diff != "" {
		t.Errorf("second consumer resumed with (-want +got):\n%s", diff)
	}
	if err := second.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("second consumer: commit uncommitted offsets: %v", err)
	}

	offsets, err := c.Admin(t).FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("fetch offsets of group %q: %v", group, err)
	}
	committed := map[int32]int64{}
	offsets.Each(func(o kadm.OffsetResponse) { committed[o.Partition] = o.At })
	if diff := cmp.Diff(map[int32]int64{0: 5, 1: 5}, committed); diff != "" {
		t.Errorf("committed offsets (-want +got):\n%s", diff)
	}
}

func TestCanaryTransactions(t *testing.T) {
	t.Parallel()
	c := kafkatest.New(t)
	ctx := testContext(t)
	topic := c.CreateTopic(t, 1, nil)
	producer := c.Client(t, kgo.DefaultProduceTopic(topic), kgo.TransactionalID(kafkatest.TopicName(t)))

	transact := func(commit kgo.TransactionEndTry, values ...string) {
		t.Helper()
		if err := producer.BeginTransaction(); err != nil {
			t.Fatalf("begin transaction: %v", err)
		}
		for _, v := range values {
			produce(ctx, t, producer, &kgo.Record{Value: []byte(v)})
		}
		if err := producer.EndTransaction(ctx, commit); err != nil {
			t.Fatalf("end transaction (commit %v): %v", commit, err)
		}
	}
	transact(kgo.TryCommit, "c1", "c2")
	transact(kgo.TryAbort, "a1", "a2")
	transact(kgo.TryCommit, "c3")

	values := func(rs []*kgo.Record) []string {
		var vs []string
		for _, r := range rs {
			vs = append(vs, string(r.Value))
		}
		return vs
	}
	if diff := cmp.Diff([]string{"c1", "c2", "c3"}, values(c.ReadToEnd(t, topic, kafkatest.ReadCommitted()))); diff != "" {
		t.Errorf("read_committed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"c1", "c2", "a1", "a2", "c3"}, values(c.ReadToEnd(t, topic))); diff != "" {
		t.Errorf("read_uncommitted (-want +got):\n%s", diff)
	}
}

// TestReadCommittedWithOpenTransaction checks that ReadToEnd with
// ReadCommitted gives up waiting for an open transaction after the settle
// timeout and returns the committed records before it.
func TestReadCommittedWithOpenTransaction(t *testing.T) {
	t.Parallel()
	c := kafkatest.New(t)
	ctx := testContext(t)
	topic := c.CreateTopic(t, 1, nil)
	producer := c.Client(t, kgo.DefaultProduceTopic(topic), kgo.TransactionalID(kafkatest.TopicName(t)))
	for _, v := range []string{"c1", "open"} {
		if err := producer.BeginTransaction(); err != nil {
			t.Fatalf("begin transaction: %v", err)
		}
		produce(ctx, t, producer, &kgo.Record{Value: []byte(v)})
		if v == "open" {
			break
		}
		if err := producer.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatalf("end transaction: %v", err)
		}
	}
	got := c.ReadToEnd(t, topic, kafkatest.ReadCommitted(), kafkatest.SettleTimeout(500*time.Millisecond))
	if len(got) != 1 || string(got[0].Value) != "c1" {
		t.Errorf("read_committed with an open transaction: got %d records, want only c1", len(got))
	}
	if err := producer.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatalf("abort: %v", err)
	}
}

// sortRecs orders records by partition, then offset, as ReadToEnd does.
func sortRecs(rs []rec) []rec {
	slices.SortFunc(rs, func(a, b rec) int {
		if a.Partition != b.Partition {
			return int(a.Partition - b.Partition)
		}
		return int(a.Offset - b.Offset)
	})
	return rs
}
