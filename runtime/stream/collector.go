package stream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"unicode/utf8"

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
	// topicMaxBytes gives a dead-letter topic's max.message.bytes, read at
	// start (0 if unknown).
	topicMaxBytes func(topic string) int
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

// ProduceError is an output record or a dead letter that could not be
// produced, with the input record it came from.
type ProduceError struct {
	Topic     string // the output topic, or the dead-letter topic
	Partition int32
	// DeadLetter is true when the record that failed is the dead letter of
	// the input record.
	DeadLetter bool
	// Source is the input record being processed when the output was made:
	// its topic, partition and offset. SourceTopic is empty for an output of
	// a punctuation.
	SourceTopic     string
	SourcePartition int32
	SourceOffset    int64
	Err             error
}

func (e *ProduceError) Error() string {
	if e.DeadLetter {
		return fmt.Sprintf("produce the dead letter of input record %s/%d@%d to %s/%d: %v", e.SourceTopic, e.SourcePartition, e.SourceOffset, e.Topic, e.Partition, e.Err)
	}
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

func newCollector(cfg *config, log *slog.Logger, partitions func(string) int32, topicMaxBytes func(string) int) *collector {
	c := &collector{cfg: cfg, log: log, partitions: partitions, topicMaxBytes: topicMaxBytes}
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

// batchOverhead is a record batch's header (magic v2): a broker measures a
// batch, header included, against max.message.bytes, and franz-go a record
// in its own batch against ProducerBatchMaxBytes.
const batchOverhead = 61

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
	if dl, ok := r.Context.(*deadLetterSource); ok {
		c.deadLetterFailed(r, dl, err)
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
			perr.Err = errNoInputToDeadLetter(err)
			c.fail(perr)
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
		c.deadLetters = append(c.deadLetters, deadLetter(topic, c.partitions(topic), c.deadLetterLimit(topic), src.in, src.node, perr))
		c.mu.Unlock()
	default:
		c.fail(perr)
	}
}

// errNoInputToDeadLetter says why an output that failed under DeadLetter
// stopped the app.
func errNoInputToDeadLetter(err error) error {
	return fmt.Errorf("%w (a punctuation's output has no input record to dead-letter)", err)
}

func produceError(r *kgo.Record, src *produceSource, err error) *ProduceError {
	perr := &ProduceError{Topic: r.Topic, Partition: r.Partition, Err: err}
	if src != nil && src.in != nil {
		perr.SourceTopic, perr.SourcePartition, perr.SourceOffset = src.in.Topic, src.in.Partition, src.in.Offset
	}
	return perr
}

// deadLetterSource is a dead letter's Context: the input record it
// carries, so that its failure names that record, and whether it is
// already the smallest form, a reference to the input.
type deadLetterSource struct {
	context.Context // Background: franz-go reads the record's context
	in              *kgo.Record
	node            string
	cause           error
	reference       bool
}

// The headers kgen adds to a dead letter, after the input's own.
const (
	hdrError     = "kgen.error"
	hdrNode      = "kgen.error.node"
	hdrTopic     = "kgen.source.topic"
	hdrPartition = "kgen.source.partition"
	hdrOffset    = "kgen.source.offset"
	// hdrTruncated is on a dead letter that could not carry the input
	// whole: "key=K/K' value=V/V' headers=H/H'", what was kept of each
	// (bytes, or the input's headers) out of the input's. The whole input
	// is at the kgen.source.* coordinates while the topic retains it.
	hdrTruncated = "kgen.truncated"
)

// maxTruncatedError bounds the kgen.error header of a truncated dead
// letter, so that kgen's own headers always fit.
const maxTruncatedError = 1024

// deadLetter is the record sent to a dead-letter topic of partitions
// partitions for the input record in: its original bytes, with the cause in
// headers. If that is larger than limit bytes (what the producer and the
// topic accept, as recordSize counts it), it carries what fits of the
// input's key, headers and value, in that order, and the kgen.truncated
// header; limit <= 0 is no limit. The partition follows the input's key
// either way.
func deadLetter(topic string, partitions int32, limit int, in *kgo.Record, node string, cause error) *kgo.Record {
	src := &deadLetterSource{Context: context.Background(), in: in, node: node, cause: cause}
	p := int32(0)
	if partitions > 0 && in.Key != nil {
		p = KafkaPartition(in.Key, partitions)
	}
	r := &kgo.Record{Topic: topic, Partition: p, Key: in.Key, Value: in.Value, Timestamp: in.Timestamp, Context: src}
	r.Headers = append(append([]kgo.RecordHeader(nil), in.Headers...), kgenHeaders(in, node, cause.Error())...)
	if limit <= 0 || recordSize(r) <= limit {
		return r
	}
	// Too large whole: kgen's headers (with the error bounded) and the
	// truncation header first, then what room is left.
	msg := cause.Error()
	if len(msg) > maxTruncatedError {
		n := maxTruncatedError
		for n > 0 && !utf8.RuneStart(msg[n]) {
			n--
		}
		msg = msg[:n] + "..."
	}
	r.Key, r.Value = nil, nil
	r.Headers = kgenHeaders(in, node, msg)
	// The truncation header's value is at most this long.
	const truncatedLen = len("key=/ value=/ headers=/") + 6*20
	room := limit - recordSize(r) - len(hdrTruncated) - truncatedLen - 10
	take := func(b []byte) []byte {
		n := max(0, min(len(b), room))
		room -= n
		if n == 0 && len(b) > 0 {
			return nil // cut whole: null, not empty
		}
		return b[:n:n]
	}
	if in.Key != nil {
		r.Key = take(in.Key)
	}
	kept := 0
	var hdrs []kgo.RecordHeader
	for _, h := range in.Headers {
		n := len(h.Key) + len(h.Value) + 10
		if n > room {
			break
		}
		room -= n
		hdrs = append(hdrs, h)
		kept++
	}
	if in.Value != nil {
		r.Value = take(in.Value)
	}
	r.Headers = append(hdrs, r.Headers...)
	r.Headers = append(r.Headers, kgo.RecordHeader{Key: hdrTruncated,
		Value: fmt.Appendf(nil, "key=%d/%d value=%d/%d headers=%d/%d", len(r.Key), len(in.Key), len(r.Value), len(in.Value), kept, len(in.Headers))})
	return r
}

// kgenHeaders are kgen's headers of a dead letter for in.
func kgenHeaders(in *kgo.Record, node, msg string) []kgo.RecordHeader {
	return []kgo.RecordHeader{
		{Key: hdrError, Value: []byte(msg)},
		{Key: hdrNode, Value: []byte(node)},
		{Key: hdrTopic, Value: []byte(in.Topic)},
		{Key: hdrPartition, Value: fmt.Appendf(nil, "%d", in.Partition)},
		{Key: hdrOffset, Value: fmt.Appendf(nil, "%d", in.Offset)},
	}
}

// deadLetterLimit is the largest dead letter topic takes, as recordSize
// counts it: the producer's limit or the topic's max.message.bytes,
// whichever is smaller, less a batch's header.
func (c *collector) deadLetterLimit(topic string) int {
	limit := c.maxRecordBytes
	if m := c.topicMaxBytes(topic); m > 0 && m < limit {
		limit = m
	}
	return limit - batchOverhead
}

// sendDeadLetter produces the dead letter of a record that failed.
func (c *collector) sendDeadLetter(topic string, in *kgo.Record, node string, cause error) {
	c.begin()
	c.cl.Produce(context.Background(), deadLetter(topic, c.partitions(topic), c.deadLetterLimit(topic), in, node, cause), c.onProduced)
}

// deadLetterFailed handles a dead letter the producer or the broker
// refused. One refused for its size (the topic's limit lowered since the
// start, say) is sent again as a reference to its input: kgen's headers
// only. Any other failure, or of the reference, stops the app with an
// error naming the input record: the record would be lost otherwise.
func (c *collector) deadLetterFailed(r *kgo.Record, dl *deadLetterSource, err error) {
	perr := &ProduceError{Topic: r.Topic, Partition: r.Partition, DeadLetter: true,
		SourceTopic: dl.in.Topic, SourcePartition: dl.in.Partition, SourceOffset: dl.in.Offset, Err: err}
	if dl.reference || !(errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge)) {
		c.fail(perr)
		return
	}
	c.log.Warn("sending a dead letter too large for its topic as a reference to its input", "error", perr)
	ref := deadLetter(r.Topic, 0, 1, dl.in, dl.node, dl.cause) // a limit nothing fits in: headers only
	ref.Partition = r.Partition
	ref.Context.(*deadLetterSource).reference = true
	c.mu.Lock()
	c.deadLetters = append(c.deadLetters, ref)
	c.mu.Unlock()
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
