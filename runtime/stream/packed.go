package stream

import (
	"context"
	"encoding/binary"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// An input that holds more than its share of records (BufferRecords) keeps
// the excess packed: each record's fields and bytes encoded into a shared,
// pointer-free chunk, and the fetched kgo.Record given up. A fetched record
// costs some 200 bytes beside its payload (the record, in an array of its
// whole batch, and the fetch response its bytes point into, which any one
// record of it keeps alive), so a task of several inputs, which can be
// handed most of a partition while it waits for another input (the poll
// budget bounds a unit's inputs only together, see unit.pollBudget), held
// it at several times its size; packed it costs its key, value and headers
// and a few bytes more, none of which the garbage collector scans. Packed
// records are made records again, a run at a time, as the input reaches
// them. Only the excess pays for the copies: an input within its share
// holds its records as fetched.

// packAbove is how many times its share (BufferRecords) an input of a task
// of several inputs holds as fetched before it packs what comes. A fetch
// brings a partition up to a megabyte (thousands of records) at once, so
// past one share nearly every push of a waiting input is packed: at four,
// the stream-stream join's peak RSS was some 30 MiB higher for no less CPU.
const packAbove = 1

// packedRun is how many packed records an input makes records again at a
// time, once its fetched records are all taken.
const packedRun = 256

// packedChunkRecords is how many records a chunk holds at most: a chunk's
// bytes are freed once its last record is made a record again, and records
// made from it are done with.
const packedChunkRecords = 1024

// A packed record is, in its chunk's bytes: a flags byte (packedMeta: its
// producer id and epoch, leader epoch and attributes are the chunk's next
// meta, else the previous record's), the offset's difference from the
// previous record's (uvarint; the first record of a chunk: the offset
// itself, varint), the timestamp's in nanoseconds (varint), the key and the
// value (uvarint length + 1, 0 for nil, then the bytes), the header count
// (uvarint) and each header's key (uvarint length, bytes) and value (as the
// key and value).
const packedMeta = 1

// packedChunk holds packed records of one input, in offset order. Records
// made from it point into data, which is never written again where it was
// written once.
type packedChunk struct {
	data  []byte
	metas []packedMetaFields
	n     int // records in data
	// The encoder's and the decoder's previous record.
	enc, dec packedState
	pos      int // where the decoder is in data
	meta     int // the decoder's next meta
	taken    int // records decoded
}

// packedMetaFields are the fields of a record that seldom change from one
// record to the next.
type packedMetaFields struct {
	producerID    int64
	leaderEpoch   int32
	producerEpoch int16
	attrs         kgo.RecordAttrs
}

type packedState struct {
	offset, ts int64
	meta       packedMetaFields
}

// packedQueue is an input's packed records, oldest first.
type packedQueue struct {
	chunks []*packedChunk
	n      int // records packed and not yet taken
	// bytes is the capacity of the chunks' data: what the queue holds.
	bytes int
	// lastSize is a little more than the last full chunk's bytes.
	lastSize int
	// ctx is the Context of the records packed (franz-go gives every
	// fetched record its client's).
	ctx context.Context
}

func (q *packedQueue) len() int { return q.n }

// size is the bytes the packed records take.
func (q *packedQueue) size() int { return q.bytes }

func appendPackedBytes(dst, b []byte) []byte {
	if b == nil {
		return append(dst, 0)
	}
	dst = binary.AppendUvarint(dst, uint64(len(b))+1)
	return append(dst, b...)
}

// push packs recs after the records packed so far.
func (q *packedQueue) push(recs []*kgo.Record) {
	var c *packedChunk
	if len(q.chunks) > 0 {
		c = q.chunks[len(q.chunks)-1]
	}
	for _, r := range recs {
		if c == nil || c.n == packedChunkRecords {
			// Sized as the last chunk ended, so that it seldom grows.
			q.chunks = append(q.chunks, &packedChunk{data: make([]byte, 0, max(q.lastSize, 4<<10))})
			c = q.chunks[len(q.chunks)-1]
			q.bytes += cap(c.data)
		}
		q.ctx = r.Context
		ts := r.Timestamp.UnixNano()
		meta := packedMetaFields{producerID: r.ProducerID, leaderEpoch: r.LeaderEpoch, producerEpoch: r.ProducerEpoch, attrs: r.Attrs}
		flags := byte(0)
		if c.n == 0 || meta != c.enc.meta {
			flags = packedMeta
			c.metas = append(c.metas, meta)
		}
		d := append(c.data, flags)
		if c.n == 0 {
			d = binary.AppendVarint(d, r.Offset)
		} else {
			d = binary.AppendUvarint(d, uint64(r.Offset-c.enc.offset))
		}
		d = binary.AppendVarint(d, ts-c.enc.ts)
		d = appendPackedBytes(d, r.Key)
		d = appendPackedBytes(d, r.Value)
		d = binary.AppendUvarint(d, uint64(len(r.Headers)))
		for _, h := range r.Headers {
			d = binary.AppendUvarint(d, uint64(len(h.Key)))
			d = append(d, h.Key...)
			d = appendPackedBytes(d, h.Value)
		}
		q.bytes += cap(d) - cap(c.data)
		c.data = d
		if c.n == packedChunkRecords-1 {
			q.lastSize = len(d) + len(d)/16
		}
		c.enc = packedState{offset: r.Offset, ts: ts, meta: meta}
		c.n++
		q.n++
	}
}

// take makes up to n of the oldest packed records records again, of topic
// and partition, appending them to dst.
func (q *packedQueue) take(dst []*kgo.Record, n int, topic string, partition int32) []*kgo.Record {
	n = min(n, q.n)
	recs := make([]kgo.Record, n)
	for i := range recs {
		c := q.chunks[0]
		recs[i] = c.next(topic, partition, q.ctx)
		dst = append(dst, &recs[i])
		q.n--
		if c.taken == c.n {
			q.bytes -= cap(c.data)
			q.chunks[0] = nil
			q.chunks = q.chunks[1:]
		}
	}
	if q.n == 0 {
		q.chunks = nil
	}
	return dst
}

// next decodes c's next record.
func (c *packedChunk) next(topic string, partition int32, ctx context.Context) kgo.Record {
	d := c.data[c.pos:]
	flags := d[0]
	d = d[1:]
	if flags&packedMeta != 0 {
		c.dec.meta = c.metas[c.meta]
		c.meta++
	}
	if c.taken == 0 {
		o, w := binary.Varint(d)
		c.dec.offset, d = o, d[w:]
	} else {
		o, w := binary.Uvarint(d)
		c.dec.offset, d = c.dec.offset+int64(o), d[w:]
	}
	ts, w := binary.Varint(d)
	c.dec.ts, d = c.dec.ts+ts, d[w:]
	r := kgo.Record{
		Timestamp:     time.Unix(0, c.dec.ts),
		Topic:         topic,
		Partition:     partition,
		Attrs:         c.dec.meta.attrs,
		ProducerEpoch: c.dec.meta.producerEpoch,
		ProducerID:    c.dec.meta.producerID,
		LeaderEpoch:   c.dec.meta.leaderEpoch,
		Offset:        c.dec.offset,
		Context:       ctx,
	}
	r.Key, d = packedBytes(d)
	r.Value, d = packedBytes(d)
	nh, w := binary.Uvarint(d)
	d = d[w:]
	if nh > 0 {
		r.Headers = make([]kgo.RecordHeader, nh)
		for i := range r.Headers {
			kl, w := binary.Uvarint(d)
			r.Headers[i].Key, d = string(d[w:w+int(kl)]), d[w+int(kl):]
			r.Headers[i].Value, d = packedBytes(d)
		}
	}
	c.pos = len(c.data) - len(d)
	c.taken++
	return r
}

// packedBytes reads bytes appended by appendPackedBytes: a slice of the
// chunk, capped so that appending to it cannot write over what follows.
func packedBytes(d []byte) ([]byte, []byte) {
	l, w := binary.Uvarint(d)
	if l == 0 {
		return nil, d[w:]
	}
	n := w + int(l) - 1
	return d[w:n:n], d[n:]
}
