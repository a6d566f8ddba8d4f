package stream

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// collector is everything a unit produces (Kafka Streams' RecordCollector):
// sink outputs, dead letters and changelog records, through the unit's one
// producer, inside the open transaction under exactly-once (it opens one
// before the first record of a commit period). It owns the first fatal
// production error.
// Producer callbacks run on franz-go's goroutines and touch only atomics and
// the dead-letter queue (under mu).
type collector struct {
	cl  *kgo.Client
	tx  *transaction // nil under at-least-once
	cfg *config
	log *slog.Logger
	// partitions gives a topic's partition count, for dead letters.
	partitions func(topic string) int32
	// maxRecordBytes is the largest record the producer accepts; larger
	// outputs are refused before they reach it, with the input in hand.
	maxRecordBytes int

	mu sync.Mutex
	// deadLetters are the dead letters of failed outputs, made by the
	// producer's callback, for flush to send.
	deadLetters []*kgo.Record

	failure      atomic.Pointer[error]
	skipped      atomic.Uint64 // outputs dropped by LogAndContinue
	deadLettered atomic.Uint64
	onProduced   func(*kgo.Record, error)
}

// ProduceError is an output record that could not be produced, with the
// input record it came from.
type ProduceError struct {
	Topic     string // the output topic
	Partition int32
	// Source is the input record being processed when the output was made:
	// its topic, partition and offset. SourceTopic is empty for an output of
	// a punctuation.
	SourceTopic     string
	SourcePartition int32
	SourceOffset    int64
	Err             error
}

func (e *ProduceError) Error() string {
	from := "from a punctuation"
	if e.SourceTopic != "" {
		from = fmt.Sprintf("from input record %s/%d@%d", e.SourceTopic, e.SourcePartition, e.SourceOffset)
	}
	return fmt.Sprintf("produce to %s/%d (%s): %v", e.Topic, e.Partition, from, e.Err)
}

func (e *ProduceError) Unwrap() error { return e.Err }

// outRecord is a sink's output with what produced it, in one allocation:
// the record's Context points at its own source, so a failure reported by
// the producer callback can name the input record.
type outRecord struct {
	rec kgo.Record
	src produceSource
}

type produceSource struct {
	context.Context // Background: franz-go reads the record's context
	in              *kgo.Record
	node            string
}

func newCollector(cfg *config, log *slog.Logger, partitions func(string) int32) *collector {
	c := &collector{cfg: cfg, log: log, partitions: partitions}
	c.onProduced = c.produced
	return c
}

// use sets the client the collector produces with (and, under exactly-once,
// its transaction).
func (c *collector) use(cl *kgo.Client, tx *transaction) {
	c.cl, c.tx = cl, tx
	c.maxRecordBytes = int(cl.OptValue(kgo.ProducerBatchMaxBytes).(int32))
}

// send produces a sink's output, made by task t.
func (c *collector) send(t *task, o *outRecord) {
	if size := recordSize(&o.rec); size > c.maxRecordBytes {
		t.outputFailed(o, tooLarge(size, c.maxRecordBytes))
		return
	}
	c.begin()
	c.cl.Produce(context.Background(), &o.rec, c.onProduced)
}

// tooLarge is the error of an output refused before the producer: the
// producer would fail it the same way, after the input was let go.
func tooLarge(size, limit int) error {
	return fmt.Errorf("record of %d bytes is larger than the producer's limit of %d (kgo.ProducerBatchMaxBytes): %w", size, limit, kerr.MessageTooLarge)
}

// recordSize overestimates a record's size in a batch a little: key, value
// and headers, plus the most the varints and fixed fields can take.
func recordSize(r *kgo.Record) int {
	n := len(r.Key) + len(r.Value) + 32
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value) + 10
	}
	return n
}

// produced is the producer callback of outputs and dead letters.
func (c *collector) produced(r *kgo.Record, err error) {
	if err == nil {
		if c.tx != nil {
			c.tx.produced()
		}
		return
	}
	src, _ := r.Context.(*produceSource)
	perr := produceError(r, src, err)
	switch c.cfg.onProduceError.action {
	case actionContinue:
		c.log.Warn("dropping output that could not be produced", "error", perr)
		c.skipped.Add(1)
	case actionDeadLetter:
		if src == nil || src.in == nil {
			c.fail(perr) // a dead letter that failed, or a punctuation's output: nothing to send
			return
		}
		c.log.Warn("dead-lettering the input of an output that could not be produced", "error", perr, "dead_letter_topic", c.cfg.onProduceError.topic)
		c.deadLettered.Add(1)
		// Queued for the unit's goroutine, which sends it before the
		// commit this output belongs to: here, on the producer's goroutine,
		// a produce could not wait for room in a full buffer (franz-go
		// frees the failed record's slot only after this callback).
		topic := c.cfg.onProduceError.topic
		c.mu.Lock()
		c.deadLetters = append(c.deadLetters, deadLetter(topic, c.partitions(topic), src.in, src.node, perr))
		c.mu.Unlock()
	default:
		c.fail(perr)
	}
}

func produceError(r *kgo.Record, src *produceSource, err error) *ProduceError {
	perr := &ProduceError{Topic: r.Topic, Partition: r.Partition, Err: err}
	if src != nil && src.in != nil {
		perr.SourceTopic, perr.SourcePartition, perr.SourceOffset = src.in.Topic, src.in.Partition, src.in.Offset
	}
	return perr
}

// deadLetter is the record sent to a dead-letter topic of partitions
// partitions for the input record in: its original bytes, with the cause in
// headers. Its Context is nil, so the callback knows a failed dead letter
// for what it is: final.
func deadLetter(topic string, partitions int32, in *kgo.Record, node string, cause error) *kgo.Record {
	hdrs := append(append([]kgo.RecordHeader(nil), in.Headers...),
		kgo.RecordHeader{Key: "kgen.error", Value: []byte(cause.Error())},
		kgo.RecordHeader{Key: "kgen.error.node", Value: []byte(node)},
		kgo.RecordHeader{Key: "kgen.source.topic", Value: []byte(in.Topic)},
		kgo.RecordHeader{Key: "kgen.source.partition", Value: fmt.Appendf(nil, "%d", in.Partition)},
		kgo.RecordHeader{Key: "kgen.source.offset", Value: fmt.Appendf(nil, "%d", in.Offset)},
	)
	p := int32(0)
	if partitions > 0 && in.Key != nil {
		p = KafkaPartition(in.Key, partitions)
	}
	return &kgo.Record{Topic: topic, Partition: p, Key: in.Key, Value: in.Value, Headers: hdrs, Timestamp: in.Timestamp}
}

// sendDeadLetter produces the dead letter of a record that failed.
func (c *collector) sendDeadLetter(topic string, in *kgo.Record, node string, cause error) {
	c.begin()
	c.cl.Produce(context.Background(), deadLetter(topic, c.partitions(topic), in, node, cause), c.onProduced)
}

// logChange produces one changelog record of s, stamped with the time of
// the record that caused the write. Its failure is always fatal: the write
// it carries would be lost.
func (c *collector) logChange(s *taskStore, key, value []byte, timestamp int64) {
	if s.ack == nil {
		s.ack = func(r *kgo.Record, err error) {
			if err != nil {
				c.fail(fmt.Errorf("produce changelog %s/%d of store %q: %w", r.Topic, r.Partition, s.def.name, err))
				return
			}
			s.produced.observe(r.Offset + 1)
			if c.tx != nil {
				c.tx.produced()
			}
		}
	}
	c.begin()
	c.cl.Produce(context.Background(), &kgo.Record{Topic: s.changelog, Partition: s.partition, Key: key, Value: value, Timestamp: changelogTime(timestamp)}, s.ack)
}

// begin opens a transaction before the first record of a commit period.
func (c *collector) begin() {
	if c.tx == nil || c.tx.open {
		return
	}
	if err := c.tx.begin(); err != nil {
		c.fail(err)
	}
}

// fail keeps the first fatal error; the unit's loop returns it.
func (c *collector) fail(err error) { c.failure.CompareAndSwap(nil, &err) }

// err is the first fatal production error, if any.
func (c *collector) err() error {
	if p := c.failure.Load(); p != nil {
		return *p
	}
	return nil
}

// flush waits until every record produced so far is acknowledged,
// including the dead letters of outputs that failed on the way.
func (c *collector) flush(ctx context.Context) error {
	for {
		if err := c.cl.Flush(ctx); err != nil {
			return fmt.Errorf("flush producer: %w", err)
		}
		c.mu.Lock()
		queued := c.deadLetters
		c.deadLetters = nil
		c.mu.Unlock()
		if len(queued) == 0 {
			return c.err()
		}
		for _, r := range queued {
			c.cl.Produce(ctx, r, c.onProduced)
		}
	}
}

// abort ends an open transaction without committing it; closing drops
// what is still buffered instead of flushing it.
func (c *collector) abort(ctx context.Context, closing bool) {
	if c.tx != nil {
		if err := c.tx.abort(ctx, closing); err != nil {
			c.log.Warn("abort transaction", "error", err)
		}
	}
}
