package stream

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/twmb/franz-go/pkg/kgo"
)

// input is one source topic-partition of a task: the buffered raw records of
// that partition and the node that decodes them.
type input interface {
	topic() string
	// push appends fetched records, in offset order.
	push(recs []*kgo.Record)
	buffered() int
	// packedBytes is the size of the records the input holds packed
	// (packed.go).
	packedBytes() int
	// peek decodes the head record if needed and returns its timestamp in
	// epoch milliseconds. ok is false when nothing is buffered.
	peek() (ts int64, ok bool, err error)
	head() *kgo.Record
	// forwardHead hands the decoded head to the source's children.
	forwardHead()
	// pop drops the head.
	pop()
	state() *inputState
}

// inputState is the bookkeeping of one input partition that does not
// depend on types.
type inputState struct {
	partition int32
	next      int64     // offset after the last record taken off the buffer; -1 before the first
	committed int64     // next as of the last commit; -1 before the first
	start     int64     // offset of the first record fetched; -1 before it
	end       int64     // end offset from the last fetch (the last stable offset under read_committed); -1 while unknown
	fetchedTo int64     // offset after the last record fetched, control records included, or the end offset an empty fetch answer gave
	readTo    int64     // fetch position: offset after the last record fetched, control records included; before any, where fetching began; -1 unknown
	epoch     int32     // leader epoch of the last record taken
	time      int64     // partition time: the largest timestamp taken; -1 before any
	idleSince time.Time // when the task began waiting for this input while empty; zero when not waiting
}

// rewindTo is where consuming must start again to redo everything since
// the last commit: the committed offset, or before the first commit, the
// first record fetched (where the group's committed offset, or the reset,
// put the consumer). -1: nothing was fetched, nothing to redo.
func (s *inputState) rewindTo() int64 {
	if s.committed >= 0 {
		return s.committed
	}
	return s.start
}

type sourceNode[K, V any] struct {
	name      string
	topicName string
	kd        serde.Deserializer[K]
	vd        serde.Deserializer[V]
	timestamp func(K, V, time.Time) time.Time
	t         *task
	children  []receiver[K, V]
	// keyNull and valueNull say the deserializers decode a null
	// (serde.NullDecoder); where one does not, a null is dropped before
	// it is decoded, so it never becomes a zero value or a size error.
	keyNull, valueNull bool
	warned             *nullWarnings

	buf   []*kgo.Record
	first int // index of the head in buf
	// packed holds the records after buf's beyond the input's share
	// (packed.go).
	packed  packedQueue
	decoded bool
	drop    DropReason // the decoded head is dropped, for this reason
	rec     Record[K, V]
	ts      int64
	st      inputState
}

func (s *sourceNode[K, V]) topic() string      { return s.topicName }
func (s *sourceNode[K, V]) state() *inputState { return &s.st }
func (s *sourceNode[K, V]) buffered() int      { return len(s.buf) - s.first + s.packed.len() }
func (s *sourceNode[K, V]) head() *kgo.Record  { return s.buf[s.first] }
func (s *sourceNode[K, V]) packedBytes() int   { return s.packed.size() }

func (s *sourceNode[K, V]) push(recs []*kgo.Record) {
	if s.first > 0 && s.first >= len(s.buf)/2 {
		n := copy(s.buf, s.buf[s.first:])
		clear(s.buf[n:])
		s.buf = s.buf[:n]
		s.first = 0
	}
	if n := len(recs); n > 0 {
		// Records that would take an input of several past packAbove times
		// its share are packed (packed.go), all of them: one kept as fetched
		// would keep its fetch alive. A task of one input never waits for
		// another, so it takes its records as fast as they come.
		if s.packed.len() == 0 && (len(s.t.inputs) < 2 || s.buffered()+n <= packAbove*s.t.env.config().bufferRecords) {
			s.buf = append(s.buf, recs...)
		} else {
			s.packed.push(recs)
			if s.first == len(s.buf) {
				s.buf = s.packed.take(s.buf[:0], packedRun, s.topicName, s.st.partition)
				s.first = 0
			}
		}
		s.st.fetchedTo = recs[n-1].Offset + 1
		if s.st.start < 0 {
			s.st.start = recs[0].Offset
		}
	}
}

func (s *sourceNode[K, V]) peek() (int64, bool, error) {
	if s.first >= len(s.buf) {
		return 0, false, nil
	}
	if s.decoded {
		return s.ts, true, nil
	}
	raw := s.buf[s.first]
	switch {
	case raw.Key == nil && !s.keyNull:
		s.drop = DropNullKey
	case raw.Value == nil && !s.valueNull:
		s.drop = DropNullValue
	}
	if s.drop != "" {
		// Processed as any record (its offset, and stream time as Kafka
		// Streams' partition time), but reaches no node. An extractor
		// cannot run without a key and value, and the record's own time
		// may be far from the event times it extracts: then the drop
		// leaves stream time where it is.
		s.ts = raw.Timestamp.UnixMilli()
		if s.timestamp != nil {
			s.ts = s.t.streamTime
		}
		s.decoded = true
		return s.ts, true, nil
	}
	k, err := s.kd.Deserialize(raw.Key)
	if err != nil {
		return 0, true, fmt.Errorf("key: %w", err)
	}
	v, err := s.vd.Deserialize(raw.Value)
	if err != nil {
		return 0, true, fmt.Errorf("value: %w", err)
	}
	ts := raw.Timestamp
	if s.timestamp != nil {
		if et := s.timestamp(k, v, ts); !et.IsZero() {
			ts = et
		}
	}
	s.rec = Record[K, V]{Key: k, Value: v, Timestamp: ts, Headers: raw.Headers}
	s.ts = ts.UnixMilli()
	s.decoded = true
	return s.ts, true, nil
}

func (s *sourceNode[K, V]) forwardHead() {
	if s.drop != "" {
		s.t.recordDropped(s.name, s.drop)
		s.warned.warn(s.t, s.name, s.topicName, s.drop)
		return
	}
	for _, c := range s.children {
		if s.t.err != nil {
			return
		}
		c.receive(s.rec)
	}
}

func (s *sourceNode[K, V]) pop() {
	raw := s.buf[s.first]
	s.st.next = raw.Offset + 1
	s.st.epoch = raw.LeaderEpoch
	s.buf[s.first] = nil
	s.first++
	if s.first == len(s.buf) {
		s.buf = s.buf[:0]
		s.first = 0
		if s.packed.len() > 0 {
			s.buf = s.packed.take(s.buf, packedRun, s.topicName, s.st.partition)
		}
	}
	s.decoded, s.drop = false, ""
	var zero Record[K, V]
	s.rec = zero
}

type sinkNode[K, V any] struct {
	name        string
	topic       string
	ks          serde.Serializer[K]
	vs          serde.Serializer[V]
	partitioner func(K, V, []byte, int32) int32
	t           *task
	partitions  int32
	roundRobin  int32
}

func (s *sinkNode[K, V]) receive(rec Record[K, V]) {
	t := s.t
	if t.err != nil {
		return
	}
	kb, err := s.ks.Serialize(rec.Key)
	if err != nil {
		t.fail(s.name, fmt.Errorf("serialize key for topic %q: %w", s.topic, err))
		return
	}
	vb, err := s.vs.Serialize(rec.Value)
	if err != nil {
		t.fail(s.name, fmt.Errorf("serialize value for topic %q: %w", s.topic, err))
		return
	}
	n := s.partitions
	var p int32
	switch {
	case s.partitioner != nil:
		p = s.partitioner(rec.Key, rec.Value, kb, n)
		if p < 0 || p >= n {
			t.fail(s.name, fmt.Errorf("partitioner chose partition %d of topic %q, which has %d", p, s.topic, n))
			return
		}
	case kb == nil:
		p = s.roundRobin % n
		s.roundRobin++
	default:
		p = KafkaPartition(kb, n)
	}
	ts := rec.Timestamp
	if ts.IsZero() {
		ts = fromMillis(t.recordTime())
	}
	if t.current != nil && t.processed%latencySample == 0 {
		// From the written record's timestamp (a join's or a window's
		// time, not necessarily the input's) to its output: Kafka
		// Streams' record-e2e-latency, taken at the sink.
		t.endToEndLat.observe(time.Since(ts))
	}
	o := &outRecord{rec: kgo.Record{Topic: s.topic, Partition: p, Key: kb, Value: vb, Headers: rec.Headers, Timestamp: ts}}
	o.src = produceSource{Context: context.Background(), in: t.current, node: s.name}
	o.rec.Context = &o.src
	t.env.send(t, o)
}

// KafkaPartition is the partition Apache Kafka's Java producer picks for a
// serialized key: murmur2 of the key, made positive, modulo the count.
func KafkaPartition(key []byte, partitions int32) int32 {
	return int32(murmur2(key)&0x7fffffff) % partitions
}

// murmur2 is the 32-bit MurmurHash2 variant with the seed Kafka uses.
func murmur2(data []byte) uint32 {
	const (
		seed = 0x9747b28c
		m    = 0x5bd1e995
		r    = 24
	)
	h := uint32(seed) ^ uint32(len(data))
	for len(data) >= 4 {
		k := binary.LittleEndian.Uint32(data)
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
		data = data[4:]
	}
	switch len(data) {
	case 3:
		h ^= uint32(data[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(data[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(data[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return h
}
