package dsl

import (
	"bytes"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// Suppression: Kafka Streams' KTable.suppress, both forms. A suppress node
// follows a table's updates (a windowed aggregation, or any table for the
// time limit) and holds the latest Change of each key in a buffer until the
// key's time comes, then forwards it once; later changes of a key already
// buffered replace its change but keep its place (Kafka Streams'
// non-resetting buffer). Its stream time is its own (the largest timestamp
// of the changes that reached it), so it emits nothing while no change
// arrives: IdleClose lets the wall clock move it.
//
// The buffer is kept in a key-value store named store (changelogged with
// opts.Store.Changelog, so a restart finds what was buffered), and its
// order in memory, rebuilt from the store when the task starts.

// BufferFull is what a suppression does when its buffer is over its bounds.
type BufferFull int

const (
	// ShutDownWhenFull fails processing with an error (the App stops), as
	// Kafka Streams' shutDownWhenFull: no result is emitted early. The
	// default, and the only policy SuppressUntilWindowCloses accepts.
	ShutDownWhenFull BufferFull = iota
	// EmitEarlyWhenFull forwards the buffered changes with the earliest
	// times, until the buffer is within its bounds again (Kafka Streams'
	// emitEarlyWhenFull): a key emitted early may be emitted again.
	EmitEarlyWhenFull
)

// SuppressOptions configure a suppress node.
type SuppressOptions struct {
	// Store configures the buffer's store.
	Store stream.StoreOptions
	// MaxRecords bounds the number of buffered keys; 0 is unbounded.
	MaxRecords int
	// MaxBytes bounds the buffer's size: the sum over buffered keys of the
	// serialized key and buffered entry (times, change and headers); 0 is
	// unbounded.
	MaxBytes int64
	// WhenFull is the policy once a bound is passed.
	WhenFull BufferFull
	// IdleClose: as WindowOptions.IdleClose, the wall clock moves the
	// node's stream time once no change has for IdleClose.
	IdleClose time.Duration
}

// ClosingWindows are windows a suppression can wait for: TimeWindows,
// SlidingWindowSpec or SessionWindowSpec.
type ClosingWindows interface {
	// closeDelay is how long after a window's end suppress emits it: the
	// grace (sessions: plus the gap), as Kafka Streams.
	closeDelay() int64
	// endInclusive says whether a window holds its end (sliding windows,
	// sessions): its aggregation then takes records for it one millisecond
	// longer than suppress waits.
	endInclusive() bool
}

func (w TimeWindows) closeDelay() int64       { return w.grace }
func (w SlidingWindowSpec) closeDelay() int64 { return w.grace }
func (w SessionWindowSpec) closeDelay() int64 { return w.grace + w.gap }

func (TimeWindows) endInclusive() bool       { return false }
func (SlidingWindowSpec) endInclusive() bool { return true }
func (SessionWindowSpec) endInclusive() bool { return true }

// SuppressUntilWindowCloses forwards only each window's final result: a
// window's last change, once the node's stream time reaches the window's
// end plus w's grace (sessions: plus the gap too). Give it the windows of
// the aggregation it follows. A window whose last change is a deletion (a
// session merged away) is not forwarded. The key serde is that of the
// windowed table (WindowedKey or SessionKey). Its buffer must not emit
// early (WhenFull ShutDownWhenFull; Init fails otherwise), as in Kafka
// Streams. A change for a window the node has already closed (which only
// IdleClose, or an aggregation with a longer grace, can make) is dropped
// as stream.DropLateRecord, so no window has two final results.
func SuppressUntilWindowCloses[K, V any](t *stream.Topology, name, store string, w ClosingWindows, ks serde.Serde[Windowed[K]], vs serde.Serde[V], opts SuppressOptions, parents ...string) {
	var check error
	if opts.WhenFull != ShutDownWhenFull {
		check = errors.New("until the window closes needs a buffer that shuts down when full: one that emits early would emit results that are not final")
	}
	addSuppress(t, name, store, ks, vs, opts, suppressRule[Windowed[K]]{
		delay:          w.closeDelay(),
		time:           func(k Windowed[K], _ int64) int64 { return k.End },
		dropTombstones: true,
		final:          true,
		closedAfter:    w.closeDelay() + inclusive(w.endInclusive()),
		check:          check,
	}, parents)
}

// SuppressUntilTimeLimit forwards a key's latest change once the node's
// stream time is limit past the first change buffered for it (Kafka
// Streams' untilTimeLimit), and forwards deletions too.
func SuppressUntilTimeLimit[K, V any](t *stream.Topology, name, store string, limit time.Duration, ks serde.Serde[K], vs serde.Serde[V], opts SuppressOptions, parents ...string) {
	var check error
	if limit < 0 {
		check = fmt.Errorf("time limit %v is negative", limit)
	}
	addSuppress(t, name, store, ks, vs, opts, suppressRule[K]{
		delay: limit.Milliseconds(),
		time:  func(_ K, ts int64) int64 { return ts },
		check: check,
	}, parents)
}

// suppressRule is what the two forms differ in.
type suppressRule[K any] struct {
	delay          int64                       // a key is due once stream time - delay reaches its time
	time           func(key K, ts int64) int64 // a key's buffer time, from its first change
	dropTombstones bool
	// final: until the window closes, a change for a window its aggregation
	// has closed is late; closedAfter is how long after a window's time
	// that is (the delay, plus 1 ms for windows that hold their end).
	final       bool
	closedAfter int64
	check       error
}

func addSuppress[K, V any](t *stream.Topology, name, store string, ks serde.Serde[K], vs serde.Serde[V], opts SuppressOptions, rule suppressRule[K], parents []string) {
	if opts.MaxRecords < 0 || opts.MaxBytes < 0 {
		rule.check = errors.Join(rule.check, errors.New("negative buffer bounds"))
	}
	if opts.IdleClose < 0 {
		rule.check = errors.Join(rule.check, fmt.Errorf("idle close %v is negative", opts.IdleClose))
	}
	if opts.WhenFull != ShutDownWhenFull && opts.WhenFull != EmitEarlyWhenFull {
		rule.check = errors.Join(rule.check, fmt.Errorf("unknown buffer policy %d", opts.WhenFull))
	}
	bs := bufferedSerde(vs)
	stream.AddProcessor(t, name, func() stream.Processor[K, Change[V], K, Change[V]] {
		return &suppress[K, V]{storeName: store, ks: ks, bs: bs, opts: opts, rule: rule, keyNil: nilTest[K]()}
	}, parents...)
	stream.AddKeyValueStore(t, store, ks, bs, opts.Store, name)
}

// buffered is one key's entry: its buffer time (fixed when first buffered)
// and its latest change with that record's time and headers.
type buffered[V any] struct {
	Time      int64
	Timestamp int64
	Change    Change[V]
	Headers   []stream.Header
}

// bufferedSerde encodes a buffered entry: time and timestamp (8 bytes
// each, big-endian), the headers (a 4-byte count, then each key and value
// with 4-byte lengths; a nil header value as length 0xFFFFFFFF) and the
// change as Changes encodes it.
func bufferedSerde[V any](vs serde.Serde[V]) serde.Serde[buffered[V]] {
	return bufferedCodec[V]{Changes(vs)}
}

type bufferedCodec[V any] struct{ ch serde.Serde[Change[V]] }

func (c bufferedCodec[V]) Serialize(b buffered[V]) ([]byte, error) {
	out := binary.BigEndian.AppendUint64(nil, uint64(b.Time))
	out = binary.BigEndian.AppendUint64(out, uint64(b.Timestamp))
	out = binary.BigEndian.AppendUint32(out, uint32(len(b.Headers)))
	for _, h := range b.Headers {
		out = binary.BigEndian.AppendUint32(out, uint32(len(h.Key)))
		out = append(out, h.Key...)
		if h.Value == nil {
			out = binary.BigEndian.AppendUint32(out, 0xFFFFFFFF)
			continue
		}
		out = binary.BigEndian.AppendUint32(out, uint32(len(h.Value)))
		out = append(out, h.Value...)
	}
	ch, err := c.ch.Serialize(b.Change)
	if err != nil {
		return nil, err
	}
	return append(out, ch...), nil
}

func (c bufferedCodec[V]) Deserialize(b []byte) (buffered[V], error) {
	var e buffered[V]
	bad := func() (buffered[V], error) {
		return buffered[V]{}, fmt.Errorf("suppress buffer entry: malformed (%d bytes)", len(b))
	}
	if len(b) < 20 {
		return bad()
	}
	e.Time = int64(binary.BigEndian.Uint64(b))
	e.Timestamp = int64(binary.BigEndian.Uint64(b[8:]))
	n := binary.BigEndian.Uint32(b[16:])
	rest := b[20:]
	read := func() ([]byte, bool, bool) { // bytes, null, ok
		if len(rest) < 4 {
			return nil, false, false
		}
		l := binary.BigEndian.Uint32(rest)
		rest = rest[4:]
		if l == 0xFFFFFFFF {
			return nil, true, true
		}
		if uint64(l) > uint64(len(rest)) {
			return nil, false, false
		}
		v := rest[:l:l]
		rest = rest[l:]
		return v, false, true
	}
	if uint64(n) > uint64(len(rest))/8 {
		return bad()
	}
	for range n {
		k, null, ok := read()
		if !ok || null {
			return bad()
		}
		v, null, ok := read()
		if !ok {
			return bad()
		}
		if !null && v == nil {
			v = []byte{}
		}
		e.Headers = append(e.Headers, stream.Header{Key: string(k), Value: bytes.Clone(v)})
	}
	ch, err := c.ch.Deserialize(rest)
	if err != nil {
		return buffered[V]{}, err
	}
	e.Change = ch
	return e, nil
}

// suppress is Kafka Streams' KTableSuppressProcessor.
type suppress[K, V any] struct {
	storeName string
	ks        serde.Serializer[K]
	bs        serde.Serializer[buffered[V]]
	opts      SuppressOptions
	rule      suppressRule[K]
	keyNil    func(K) bool

	store state.KeyValueStore[K, buffered[V]]
	seen  *stream.ObservedTime
	idle  idleClock
	order entryHeap[K] // by buffer time, then serialized key
	index map[string]*entry[K]
	bytes int64
}

// entry is a buffered key in the in-memory order.
type entry[K any] struct {
	key  K
	kb   []byte
	time int64
	size int64 // counted in MaxBytes
}

type entryHeap[K any] []*entry[K]

func (h entryHeap[K]) Len() int { return len(h) }
func (h entryHeap[K]) Less(i, j int) bool {
	if h[i].time != h[j].time {
		return h[i].time < h[j].time
	}
	return bytes.Compare(h[i].kb, h[j].kb) < 0
}
func (h entryHeap[K]) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *entryHeap[K]) Push(x any)   { *h = append(*h, x.(*entry[K])) }
func (h *entryHeap[K]) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

func (p *suppress[K, V]) Init(ctx *stream.Context[K, Change[V]]) error {
	if p.rule.check != nil {
		return fmt.Errorf("suppress %q: %w", ctx.NodeName(), p.rule.check)
	}
	var err error
	if p.store, err = stream.GetKeyValueStore[K, buffered[V]](ctx, p.storeName); err != nil {
		return err
	}
	p.seen = ctx.ObservedTime("stream")
	p.order, p.index, p.bytes = nil, map[string]*entry[K]{}, 0
	it, err := p.store.All()
	if err != nil {
		return err
	}
	for it.Next() {
		if err := p.track(it.Key(), it.Value()); err != nil {
			it.Close()
			return err
		}
	}
	if err := errors.Join(it.Err(), it.Close()); err != nil {
		return fmt.Errorf("suppress %q: read the buffer: %w", ctx.NodeName(), err)
	}
	if p.opts.IdleClose > 0 {
		p.idle.schedule(ctx, p.opts.IdleClose, p.seen, func() error { return p.evict(ctx) })
	}
	return nil
}

// track adds or updates key's entry in the in-memory order; an entry keeps
// its place.
func (p *suppress[K, V]) track(key K, b buffered[V]) error {
	kb, err := p.ks.Serialize(key)
	if err != nil {
		return fmt.Errorf("suppress: key: %w", err)
	}
	var size int64
	if p.opts.MaxBytes > 0 {
		vb, err := p.bs.Serialize(b)
		if err != nil {
			return err
		}
		size = int64(len(kb) + len(vb))
	}
	if e := p.index[string(kb)]; e != nil {
		p.bytes += size - e.size
		e.size = size
		return nil
	}
	e := &entry[K]{key: key, kb: kb, time: b.Time, size: size}
	p.index[string(kb)] = e
	heap.Push(&p.order, e)
	p.bytes += size
	return nil
}

func (p *suppress[K, V]) Process(ctx *stream.Context[K, Change[V]], r stream.Record[K, Change[V]]) error {
	if p.keyNil != nil && p.keyNil(r.Key) {
		ctx.RecordDropped(stream.DropNullKey)
		return nil
	}
	ts := r.Timestamp.UnixMilli()
	kb, err := p.ks.Serialize(r.Key)
	if err != nil {
		return fmt.Errorf("suppress: key: %w", err)
	}
	b := buffered[V]{Time: p.rule.time(r.Key, ts), Timestamp: ts, Change: r.Value, Headers: r.Headers}
	e := p.index[string(kb)]
	if e != nil {
		b.Time = e.time // non-resetting: the key keeps its place
	} else if p.rule.final && p.seen.Millis() >= 0 && b.Time <= p.seen.Millis()-p.rule.closedAfter {
		// A change for a window this node's stream time has closed, and
		// so its final result went out: only the wall clock (IdleClose)
		// or an aggregation with a longer grace upstream can send one, and
		// emitting it would make a second final result. (A window that
		// holds its end is emitted at end+delay, as Kafka Streams does, but
		// takes records until end+delay+1 ms: such a change is emitted
		// again, as in Kafka Streams.)
		ctx.RecordDropped(stream.DropLateRecord)
		return nil
	}
	p.seen.ObserveMillis(ts)
	if err := p.store.Put(r.Key, b); err != nil {
		return err
	}
	if err := p.track(r.Key, b); err != nil {
		return err
	}
	if err := p.evict(ctx); err != nil {
		return err
	}
	if !p.over() {
		return nil
	}
	if p.opts.WhenFull == EmitEarlyWhenFull {
		for p.over() {
			if err := p.emitFirst(ctx); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("suppress buffer %q is full: %d of %d records, %d of %d bytes (the policy is to stop; raise the bounds or emit early)",
		p.storeName, len(p.index), p.opts.MaxRecords, p.bytes, p.opts.MaxBytes)
}

func (p *suppress[K, V]) over() bool {
	return (p.opts.MaxRecords > 0 && len(p.index) > p.opts.MaxRecords) || (p.opts.MaxBytes > 0 && p.bytes > p.opts.MaxBytes)
}

// evict forwards every entry whose time is due: at or before the stream
// time less the delay.
func (p *suppress[K, V]) evict(ctx *stream.Context[K, Change[V]]) error {
	due := p.seen.Millis() - p.rule.delay
	for len(p.order) > 0 && p.order[0].time <= due {
		if err := p.emitFirst(ctx); err != nil {
			return err
		}
	}
	return nil
}

// emitFirst removes the earliest entry and forwards its change (unless it
// is a deletion the rule drops), with its record's time and headers.
func (p *suppress[K, V]) emitFirst(ctx *stream.Context[K, Change[V]]) error {
	e := heap.Pop(&p.order).(*entry[K])
	delete(p.index, string(e.kb))
	p.bytes -= e.size
	b, ok, err := p.store.Get(e.key)
	if err != nil {
		return err
	}
	if err := p.store.Delete(e.key); err != nil {
		return err
	}
	if !ok || (p.rule.dropTombstones && b.Change.New == nil) {
		return nil
	}
	ctx.Forward(stream.Record[K, Change[V]]{Key: e.key, Value: b.Change, Timestamp: time.UnixMilli(b.Timestamp), Headers: b.Headers})
	return nil
}

// inclusive is 1 for true.
func inclusive(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
