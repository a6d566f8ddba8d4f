package dsl

import (
	"bytes"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// graceBuffer is a stream–table join's grace buffer (Kafka Streams'
// time-ordered key-value buffer, KIP-923): the stream records waiting for
// the join's stream time to pass their time + grace, in a key-value store of
// bytes so that a range scan walks them in the order they leave:
//
//	0x00 ‖ time (8 bytes, sign bit flipped, big-endian) ‖ serialized key ‖ seq (4 bytes)
//
// time first, then the serialized key, then arrival (seq), as Kafka Streams'
// time-first buffer key orders records of one time (oracle case
// verjoin-grace-order). The value is the record's headers and serialized
// value (encodeGraceEntry).
//
// The stream time is the largest time of the records put in the buffer:
// as Kafka Streams', a dropped record (a null value) does not advance it
// (oracle case verjoin-grace). With a grace above 0 the record of that
// time stays in the buffer until a later one comes, so the stream time is
// the time of the last entry, and init finds it, and the next seq, in the
// restored entries: nothing else is written.
type graceBuffer[K, V any] struct {
	storeName string
	ks        serde.Serde[K]
	vs        serde.Serde[V]
	grace     int64 // milliseconds
	store     state.KeyValueStore[[]byte, []byte]
	observed  int64 // math.MinInt64: no record yet
	seq       uint32
	// waiting holds the backend keys of the buffered records, a min-heap
	// in the store's order, rebuilt by one scan at init: so a record
	// leaves by a Get rather than a range scan per record (a range read
	// costs a snapshot of the in-memory backend, and a walk of the record
	// cache). It costs a key's bytes per waiting record.
	waiting keyHeap
}

// keyHeap is a min-heap of byte strings (container/heap).
type keyHeap [][]byte

func (h keyHeap) Len() int           { return len(h) }
func (h keyHeap) Less(i, j int) bool { return bytes.Compare(h[i], h[j]) < 0 }
func (h keyHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *keyHeap) Push(x any)        { *h = append(*h, x.([]byte)) }
func (h *keyHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// graceEntryPrefix leads every entry's key, so that other keys could
// follow them (0x01 on) without a change of format.
const graceEntryPrefix = 0x00

func (b *graceBuffer[K, V]) init(ctx stream.StoreGetter) error {
	if b.ks == nil || b.vs == nil {
		return fmt.Errorf("stream-table join %q: a grace period needs the stream's key and value serdes, to buffer its records", ctx.NodeName())
	}
	var err error
	if b.store, err = stream.GetKeyValueStore[[]byte, []byte](ctx, b.storeName); err != nil {
		return err
	}
	b.observed, b.seq, b.waiting = math.MinInt64, 0, nil
	it, err := b.store.Range([]byte{graceEntryPrefix}, []byte{graceEntryPrefix + 1})
	if err != nil {
		return err
	}
	for it.Next() {
		k := it.Key()
		if len(k) < 1+8+4 {
			it.Close()
			return fmt.Errorf("stream-table join %q: grace buffer %q: entry key of %d bytes: %w", ctx.NodeName(), b.storeName, len(k), state.ErrCorrupt)
		}
		b.waiting = append(b.waiting, k) // in order: already a heap
		b.observed = entryTime(k)        // the last is the largest
		b.seq = max(b.seq, binary.BigEndian.Uint32(k[len(k)-4:])+1)
	}
	return errors.Join(it.Err(), it.Close())
}

// deadline is the time at or before which a record leaves the buffer (or
// is not buffered at all): stream time - grace.
func (b *graceBuffer[K, V]) deadline() int64 {
	if b.observed < math.MinInt64+b.grace {
		return math.MinInt64
	}
	return b.observed - b.grace
}

// put buffers r, unless it is older than stream time - grace: then it
// returns false, and the join joins r at once, as Kafka Streams does.
func (b *graceBuffer[K, V]) put(r stream.Record[K, V]) (bool, error) {
	ts := r.Timestamp.UnixMilli()
	if b.observed != math.MinInt64 && ts < b.deadline() {
		return false, nil
	}
	kb, err := b.ks.Serialize(r.Key)
	if err != nil {
		return false, fmt.Errorf("grace buffer %q: key: %w", b.storeName, err)
	}
	vb, err := b.vs.Serialize(r.Value)
	if err != nil {
		return false, fmt.Errorf("grace buffer %q: value: %w", b.storeName, err)
	}
	key := make([]byte, 0, 1+8+len(kb)+4)
	key = append(key, graceEntryPrefix)
	key = binary.BigEndian.AppendUint64(key, uint64(ts)^(1<<63))
	key = append(key, kb...)
	key = binary.BigEndian.AppendUint32(key, b.seq)
	if err := b.store.Put(key, encodeGraceEntry(r.Headers, vb)); err != nil {
		return false, err
	}
	heap.Push(&b.waiting, key)
	b.seq++
	b.observed = max(b.observed, ts)
	return true, nil
}

// evict takes out every record whose time is at or before stream time -
// grace, in the buffer's order, and hands each to join.
func (b *graceBuffer[K, V]) evict(join func(stream.Record[K, V]) error) error {
	d := b.deadline()
	for len(b.waiting) > 0 && entryTime(b.waiting[0]) <= d {
		key := heap.Pop(&b.waiting).([]byte)
		value, found, err := b.store.Get(key)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("grace buffer %q: a waiting record is not in the store: %w", b.storeName, state.ErrCorrupt)
		}
		r, err := b.decode(key, value)
		if err != nil {
			return err
		}
		if err := b.store.Delete(key); err != nil {
			return err
		}
		if err := join(r); err != nil {
			return err
		}
	}
	return nil
}

// entryTime is the time of a buffered record's backend key.
func entryTime(key []byte) int64 { return int64(binary.BigEndian.Uint64(key[1:9]) ^ (1 << 63)) }

func (b *graceBuffer[K, V]) decode(key, value []byte) (stream.Record[K, V], error) {
	var r stream.Record[K, V]
	ts := entryTime(key)
	k, err := b.ks.Deserialize(bytes.Clone(key[9 : len(key)-4]))
	if err != nil {
		return r, fmt.Errorf("grace buffer %q: key: %w", b.storeName, err)
	}
	hs, vb, err := decodeGraceEntry(value)
	if err != nil {
		return r, fmt.Errorf("grace buffer %q: %w", b.storeName, err)
	}
	v, err := b.vs.Deserialize(vb)
	if err != nil {
		return r, fmt.Errorf("grace buffer %q: value: %w", b.storeName, err)
	}
	return stream.Record[K, V]{Key: k, Value: v, Timestamp: time.UnixMilli(ts), Headers: hs}, nil
}

// encodeGraceEntry writes a buffered record's headers and value: the
// number of headers, each header's key and value (a value's length + 1, 0
// for a nil value), then the value's bytes. Uvarints throughout.
func encodeGraceEntry(hs []stream.Header, value []byte) []byte {
	out := binary.AppendUvarint(nil, uint64(len(hs)))
	for _, h := range hs {
		out = binary.AppendUvarint(out, uint64(len(h.Key)))
		out = append(out, h.Key...)
		if h.Value == nil {
			out = binary.AppendUvarint(out, 0)
			continue
		}
		out = binary.AppendUvarint(out, uint64(len(h.Value))+1)
		out = append(out, h.Value...)
	}
	return append(out, value...)
}

func decodeGraceEntry(b []byte) ([]stream.Header, []byte, error) {
	bad := fmt.Errorf("buffered record of %d bytes: %w", len(b), state.ErrCorrupt)
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)) {
		return nil, nil, bad
	}
	b = b[w:]
	var hs []stream.Header
	for range n {
		kl, w := binary.Uvarint(b)
		if w <= 0 || kl > uint64(len(b)-w) {
			return nil, nil, bad
		}
		key := string(b[w : w+int(kl)])
		b = b[w+int(kl):]
		vl, w := binary.Uvarint(b)
		if w <= 0 || (vl > 0 && vl-1 > uint64(len(b)-w)) {
			return nil, nil, bad
		}
		var val []byte
		if vl > 0 {
			val = bytes.Clone(b[w : w+int(vl-1)])
			b = b[w+int(vl-1):]
		} else {
			b = b[w:]
		}
		hs = append(hs, stream.Header{Key: key, Value: val})
	}
	return hs, bytes.Clone(b), nil
}
