package dsl

import (
	"bytes"
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
// value (graceEntry). One more key, 0x01 "observed", holds the buffer's
// stream time and next seq, so that both survive a restart with the
// entries (the store's changelog restores them together).
//
// The stream time is the largest time of the records put in the buffer:
// as Kafka Streams', a dropped record (a null value) does not advance it
// (oracle case verjoin-grace).
type graceBuffer[K, V any] struct {
	storeName string
	ks        serde.Serde[K]
	vs        serde.Serde[V]
	grace     int64 // milliseconds
	store     state.KeyValueStore[[]byte, []byte]
	observed  int64 // math.MinInt64: no record yet
	seq       uint32
}

const (
	graceEntryPrefix = 0x00
	graceMetaPrefix  = 0x01
)

var graceObservedKey = []byte{graceMetaPrefix, 'o', 'b', 's', 'e', 'r', 'v', 'e', 'd'}

func (b *graceBuffer[K, V]) init(ctx stream.StoreGetter) error {
	if b.ks == nil || b.vs == nil {
		return fmt.Errorf("stream-table join %q: a grace period needs the stream's key and value serdes, to buffer its records", ctx.NodeName())
	}
	var err error
	if b.store, err = stream.GetKeyValueStore[[]byte, []byte](ctx, b.storeName); err != nil {
		return err
	}
	b.observed, b.seq = math.MinInt64, 0
	meta, found, err := b.store.Get(graceObservedKey)
	if err != nil || !found {
		return err
	}
	if len(meta) != 12 {
		return fmt.Errorf("stream-table join %q: grace buffer %q: stream time entry of %d bytes: %w", ctx.NodeName(), b.storeName, len(meta), state.ErrCorrupt)
	}
	b.observed, b.seq = int64(binary.BigEndian.Uint64(meta)), binary.BigEndian.Uint32(meta[8:])
	return nil
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
	b.seq++
	b.observed = max(b.observed, ts)
	meta := binary.BigEndian.AppendUint64(make([]byte, 0, 12), uint64(b.observed))
	meta = binary.BigEndian.AppendUint32(meta, b.seq)
	return true, b.store.Put(graceObservedKey, meta)
}

// evict takes out every record whose time is at or before stream time -
// grace, in the buffer's order, and hands each to join.
func (b *graceBuffer[K, V]) evict(join func(stream.Record[K, V]) error) error {
	if b.observed == math.MinInt64 {
		return nil
	}
	to := []byte{graceEntryPrefix}
	if d := b.deadline(); d == math.MaxInt64 {
		to = []byte{graceMetaPrefix}
	} else {
		to = binary.BigEndian.AppendUint64(to, uint64(d+1)^(1<<63))
	}
	it, err := b.store.Range([]byte{graceEntryPrefix}, to)
	if err != nil {
		return err
	}
	type entry struct{ key, value []byte }
	var due []entry
	for it.Next() {
		due = append(due, entry{it.Key(), it.Value()})
	}
	err = errors.Join(it.Err(), it.Close())
	if err != nil {
		return err
	}
	for _, e := range due {
		if len(e.key) < 1+8+4 {
			return fmt.Errorf("grace buffer %q: entry key of %d bytes: %w", b.storeName, len(e.key), state.ErrCorrupt)
		}
		r, err := b.decode(e.key, e.value)
		if err != nil {
			return err
		}
		if err := b.store.Delete(e.key); err != nil {
			return err
		}
		if err := join(r); err != nil {
			return err
		}
	}
	return nil
}

func (b *graceBuffer[K, V]) decode(key, value []byte) (stream.Record[K, V], error) {
	var r stream.Record[K, V]
	ts := int64(binary.BigEndian.Uint64(key[1:9]) ^ (1 << 63))
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
