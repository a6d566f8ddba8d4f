package dsl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// Stream–stream joins: Kafka Streams 4.4's KStream#join, #ssLeft and
// #ssOuter of two KStreams in JoinWindows, by hand. A record of the left
// stream at time t joins each record of the right stream with the same key
// and a time in [t-before, t+after] (a right record at time t joins the left
// records in [t-after, t+before]), whichever arrives second making the
// result, stamped with the larger of the two times. Both streams must be
// co-partitioned: their sources are in one sub-topology, whose topics the
// app checks have one partition count; put a stream.AddRepartition before a
// side whose key was changed.
//
// Each side's records are kept in a window store (duplicates retained) for
// before+after+grace, measured in that side's own records' times (a record
// older than that is not stored, but still joins the other side's). A left (outer) join emits a
// left (either) record that found no partner only once its window has
// closed, never a spurious early result: until then it waits in a third,
// key-value store of unmatched records, from which a later partner removes
// it. The join's stream time is shared by both sides (the largest time of
// any record that reached the join, nulls included), as Kafka Streams 4.x's
// shared time tracker; unlike Kafka Streams' (kept in memory, so a restarted
// task starts from nothing) it is committed with the task's offsets.

// JoinWindows are the windows of a stream–stream join (Kafka Streams'
// JoinWindows): a left record at t joins the right records in
// [t-before, t+after]; grace is how long, in the join's stream time, a record
// may be late and still join, and how long a left or outer join waits before
// it emits a record without a partner.
type JoinWindows struct {
	before, after, grace int64 // milliseconds
}

// JoinWindowsOf are windows of d before and after a record, with no grace
// (Kafka Streams' JoinWindows.ofTimeDifferenceWithNoGrace).
func JoinWindowsOf(d time.Duration) JoinWindows {
	return JoinWindows{before: d.Milliseconds(), after: d.Milliseconds()}
}

// Before returns w looking back d from a left record (negative: the window
// starts after the record).
func (w JoinWindows) Before(d time.Duration) JoinWindows { w.before = d.Milliseconds(); return w }

// After returns w looking forward d from a left record.
func (w JoinWindows) After(d time.Duration) JoinWindows { w.after = d.Milliseconds(); return w }

// Grace returns w with grace period g (Kafka Streams'
// ofTimeDifferenceAndGrace).
func (w JoinWindows) Grace(g time.Duration) JoinWindows { w.grace = g.Milliseconds(); return w }

func (w JoinWindows) check() error {
	switch {
	case w.before+w.after < 0:
		return fmt.Errorf("join windows: before %dms plus after %dms is negative", w.before, w.after)
	case w.grace < 0:
		return fmt.Errorf("join windows: grace %dms is negative", w.grace)
	}
	return nil
}

// StreamJoinOptions are the per-operator settings of a stream–stream join.
type StreamJoinOptions struct {
	// Store configures the join's three stores (in memory or persistent,
	// changelogged or not): <name>-left-store and <name>-right-store, the
	// window stores of each side's records, and, for left and outer joins,
	// <name>-outer-store, the records waiting for a partner.
	Store stream.StoreOptions
}

// ssJoinKind is inner, left or outer.
type ssJoinKind int

const (
	ssInner ssJoinKind = iota
	ssLeft
	ssOuter
)

// JoinStreams is the inner join of the streams left and right in w: for
// each pair of records with one key within the windows, joiner's result,
// keyed by the key. A record with a nil key or value joins nothing and is
// dropped (stream.DropNullKey, stream.DropNullValue). Children read the node
// name; the nodes name-left and name-right are added too.
func JoinStreams[K, V1, V2, VR any](t *stream.Topology, name string, w JoinWindows, ks serde.Serde[K], v1 serde.Serde[V1], v2 serde.Serde[V2], opts StreamJoinOptions, joiner func(key K, left V1, right V2) VR, left, right string) {
	addStreamJoin(t, name, w, ks, v1, v2, opts, ssInner, func(k K, l *V1, r *V2) VR { return joiner(k, *l, *r) }, left, right)
}

// LeftJoinStreams is the left join of left and right in w: the inner join's
// results, and each left record that joined no right record, with a nil
// right side, once its window has closed (or at once when it arrives after
// its window closed). A left record with a nil key and a value is passed to
// joiner as it is (nil key, nil right side), at once, as Kafka Streams 4.4
// does; other nil keys and values are dropped as by JoinStreams.
func LeftJoinStreams[K, V1, V2, VR any](t *stream.Topology, name string, w JoinWindows, ks serde.Serde[K], v1 serde.Serde[V1], v2 serde.Serde[V2], opts StreamJoinOptions, joiner func(key K, left V1, right *V2) VR, left, right string) {
	addStreamJoin(t, name, w, ks, v1, v2, opts, ssLeft, func(k K, l *V1, r *V2) VR { return joiner(k, *l, r) }, left, right)
}

// OuterJoinStreams is the outer join of left and right in w: the left
// join's results, and likewise each right record that joined no left
// record, with a nil left side. A record of either side with a nil key and a
// value is passed to joiner at once.
func OuterJoinStreams[K, V1, V2, VR any](t *stream.Topology, name string, w JoinWindows, ks serde.Serde[K], v1 serde.Serde[V1], v2 serde.Serde[V2], opts StreamJoinOptions, joiner func(key K, left *V1, right *V2) VR, left, right string) {
	addStreamJoin(t, name, w, ks, v1, v2, opts, ssOuter, joiner, left, right)
}

// ssJoinInput is a record of either side, as the join node receives it: the
// two sides reach one processor, so that the stream time, the stores and
// the pending records have one owner.
type ssJoinInput[V1, V2 any] struct {
	left bool
	v1   V1
	v2   V2
}

func addStreamJoin[K, V1, V2, VR any](t *stream.Topology, name string, w JoinWindows, ks serde.Serde[K], v1 serde.Serde[V1], v2 serde.Serde[V2], opts StreamJoinOptions, kind ssJoinKind, joiner func(K, *V1, *V2) VR, left, right string) {
	type in = ssJoinInput[V1, V2]
	stream.AddProcessor(t, name+"-left", func() stream.Processor[K, V1, K, in] {
		return stream.ProcessorFunc[K, V1, K, in](func(ctx *stream.Context[K, in], r stream.Record[K, V1]) error {
			ctx.Forward(stream.Record[K, in]{Key: r.Key, Value: in{left: true, v1: r.Value}, Timestamp: r.Timestamp, Headers: r.Headers})
			return nil
		})
	}, left)
	stream.AddProcessor(t, name+"-right", func() stream.Processor[K, V2, K, in] {
		return stream.ProcessorFunc[K, V2, K, in](func(ctx *stream.Context[K, in], r stream.Record[K, V2]) error {
			ctx.Forward(stream.Record[K, in]{Key: r.Key, Value: in{v2: r.Value}, Timestamp: r.Timestamp, Headers: r.Headers})
			return nil
		})
	}, right)
	names := streamJoinStores{left: name + "-left-store", right: name + "-right-store"}
	if kind != ssInner {
		names.outer = name + "-outer-store"
	}
	stream.AddProcessor(t, name, func() stream.Processor[K, in, K, VR] {
		return &streamJoin[K, V1, V2, VR]{
			w: w, kind: kind, joiner: joiner, stores: names, ks: ks, v1s: v1, v2s: v2,
			keyNil: nilTest[K](), v1Nil: nilTest[V1](), v2Nil: nilTest[V2](),
		}
	}, name+"-left", name+"-right")
	// Kafka Streams' join window stores: size before+after, kept for
	// before+after+grace, every record kept even under one key and time.
	// At least 1ms: Kafka Streams' stores kept 0ms (no difference, no
	// grace) return nothing, and its join joins nothing (the oracle's
	// join-ss-inner-zero); kgen joins records of the same time.
	size := max(w.before+w.after, 1)
	opt := state.WindowStoreOptions{
		Retention:        time.Duration(max(w.before+w.after+w.grace, size)) * time.Millisecond,
		WindowSize:       time.Duration(size) * time.Millisecond,
		RetainDuplicates: true,
	}
	stream.AddWindowStore(t, names.left, ks, v1, opt, opts.Store, name)
	stream.AddWindowStore(t, names.right, ks, v2, opt, opts.Store, name)
	if names.outer != "" {
		stream.AddKeyValueStore(t, names.outer, serde.Serde[[]byte](serde.Bytes{}), serde.Serde[[]byte](serde.Bytes{}), opts.Store, name)
	}
}

type streamJoinStores struct{ left, right, outer string }

// streamJoin is Kafka Streams' KStreamKStreamJoin (both sides) with its
// KStreamJoinWindow nodes.
type streamJoin[K, V1, V2, VR any] struct {
	w      JoinWindows
	kind   ssJoinKind
	joiner func(K, *V1, *V2) VR
	stores streamJoinStores
	ks     serde.Serde[K]
	v1s    serde.Serde[V1]
	v2s    serde.Serde[V2]
	keyNil func(K) bool
	v1Nil  func(V1) bool
	v2Nil  func(V2) bool

	left  state.WindowStore[K, V1]
	right state.WindowStore[K, V2]
	// outer holds the records waiting for a partner (left and outer joins),
	// keyed as Kafka Streams' TimestampedKeyAndJoinSide (time, side, key:
	// see pendingKey), each key's records in arrival order (pendingList).
	outer state.KeyValueStore[[]byte, []byte]
	// seen is the join's stream time, shared by both sides.
	seen *stream.ObservedTime
	// minTime is Kafka Streams' shared minTime: a lower bound of the pending
	// records' times when nothing was emitted since it was set, else the
	// time of the last pending record the emission looked at; emission is
	// not attempted while minTime's window is open. In memory (unknown,
	// math.MaxInt64, after a restart: then the store is read).
	minTime int64
}

func (p *streamJoin[K, V1, V2, VR]) Init(ctx *stream.Context[K, VR]) error {
	if err := p.w.check(); err != nil {
		return fmt.Errorf("stream join %q: %w", ctx.NodeName(), err)
	}
	var err error
	if p.left, err = stream.GetWindowStore[K, V1](ctx, p.stores.left); err != nil {
		return err
	}
	if p.right, err = stream.GetWindowStore[K, V2](ctx, p.stores.right); err != nil {
		return err
	}
	if p.stores.outer != "" {
		if p.outer, err = stream.GetKeyValueStore[[]byte, []byte](ctx, p.stores.outer); err != nil {
			return err
		}
	}
	p.seen = ctx.ObservedTime("stream")
	p.minTime = math.MaxInt64
	return nil
}

// side is what differs between a left and a right record: the window it
// looks in (after: forward from the record) and whether it is kept when it
// finds no partner.
func (p *streamJoin[K, V1, V2, VR]) side(left bool) (before, after int64, outer bool) {
	if left {
		return p.w.before, p.w.after, p.kind != ssInner
	}
	return p.w.after, p.w.before, p.kind == ssOuter
}

func (p *streamJoin[K, V1, V2, VR]) Process(ctx *stream.Context[K, VR], r stream.Record[K, ssJoinInput[V1, V2]]) error {
	ts := r.Timestamp.UnixMilli()
	p.seen.ObserveMillis(ts) // every record moves it, even one dropped below, as in Kafka Streams
	in := r.Value
	before, after, outer := p.side(in.left)
	valNil := (in.left && p.v1Nil != nil && p.v1Nil(in.v1)) || (!in.left && p.v2Nil != nil && p.v2Nil(in.v2))
	if p.keyNil != nil && p.keyNil(r.Key) {
		if outer && !valNil {
			// Kafka Streams 4.4 (KIP-962): a record that can never join is
			// a left (outer) result at once
			ctx.Forward(stream.Record[K, VR]{Key: r.Key, Value: p.alone(r.Key, in), Timestamp: r.Timestamp, Headers: r.Headers})
			return nil
		}
		ctx.RecordDropped(stream.DropNullKey)
		return nil
	}
	if valNil {
		ctx.RecordDropped(stream.DropNullValue)
		return nil
	}
	if p.outer != nil && ts == p.seen.Millis() {
		if err := p.emitClosed(ctx, after, r.Headers); err != nil {
			return err
		}
	}
	from, to := max(0, ts-before), max(0, ts+after)
	matched := false
	var err error
	if in.left {
		matched, err = ssJoinWith(ctx, p, r, p.right, from, to, false, func(v2 *V2) VR { return p.joiner(r.Key, &in.v1, v2) })
	} else {
		matched, err = ssJoinWith(ctx, p, r, p.left, from, to, true, func(v1 *V1) VR { return p.joiner(r.Key, v1, &in.v2) })
	}
	if err != nil {
		return err
	}
	if outer && !matched {
		if to < p.seen.Millis() {
			// its window closed already: no partner can come
			ctx.Forward(stream.Record[K, VR]{Key: r.Key, Value: p.alone(r.Key, in), Timestamp: r.Timestamp, Headers: r.Headers})
		} else if err := p.addPending(r.Key, ts, in); err != nil {
			return err
		}
	}
	// The record joins later records of the other side: Kafka Streams'
	// KStreamJoinWindow puts it after the join.
	if in.left {
		err = p.left.Put(r.Key, in.v1, ts)
	} else {
		err = p.right.Put(r.Key, in.v2, ts)
	}
	if errors.Is(err, state.ErrExpired) {
		ctx.RecordDropped(stream.DropExpiredWindow)
		return nil
	}
	return err
}

// alone is the joiner's result for a record without a partner.
func (p *streamJoin[K, V1, V2, VR]) alone(key K, in ssJoinInput[V1, V2]) VR {
	if in.left {
		return p.joiner(key, &in.v1, nil)
	}
	return p.joiner(key, nil, &in.v2)
}

// ssJoinWith joins r with the other side's records of r's key in [from, to],
// forwarding each result stamped with the later of the two times, and
// removes the partners from the pending records.
func ssJoinWith[K, V1, V2, VR, VO any](ctx *stream.Context[K, VR], p *streamJoin[K, V1, V2, VR], r stream.Record[K, ssJoinInput[V1, V2]], other state.WindowStore[K, VO], from, to int64, otherLeft bool, join func(*VO) VR) (bool, error) {
	it, err := other.FetchRange(r.Key, from, to)
	if err != nil {
		return false, err
	}
	matched := false
	ts := r.Timestamp.UnixMilli()
	for it.Next() {
		matched = true
		if p.outer != nil {
			if err := p.unpend(r.Key, it.Start(), otherLeft); err != nil {
				it.Close()
				return false, err
			}
		}
		v := it.Value()
		ctx.Forward(stream.Record[K, VR]{Key: r.Key, Value: join(&v), Timestamp: time.UnixMilli(max(ts, it.Start())), Headers: r.Headers})
	}
	return matched, errors.Join(it.Err(), it.Close())
}

// pendingKey is Kafka Streams' TimestampedKeyAndJoinSide bytes: the time
// (8 bytes, big-endian), the side (1 left, 0 right), the serialized key;
// so the pending records are read by time, right before left, then key.
func (p *streamJoin[K, V1, V2, VR]) pendingKey(key K, ts int64, left bool) ([]byte, error) {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 16), uint64(ts))
	side := byte(0)
	if left {
		side = 1
	}
	b = append(b, side)
	kb, err := p.ks.Serialize(key)
	if err != nil {
		return nil, fmt.Errorf("key of a pending join record: %w", err)
	}
	return append(b, kb...), nil
}

// unpend removes the pending records of a key, time and side: a partner
// came. A read first, so that a record with no pending partner writes
// nothing to the store's changelog.
func (p *streamJoin[K, V1, V2, VR]) unpend(key K, ts int64, left bool) error {
	kb, err := p.pendingKey(key, ts, left)
	if err != nil {
		return err
	}
	_, found, err := p.outer.Get(kb)
	if err != nil || !found {
		return err
	}
	return p.outer.Delete(kb)
}

// addPending keeps a record without a partner until its window closes,
// after the key's other records of that time and side.
func (p *streamJoin[K, V1, V2, VR]) addPending(key K, ts int64, in ssJoinInput[V1, V2]) error {
	p.minTime = min(p.minTime, ts)
	kb, err := p.pendingKey(key, ts, in.left)
	if err != nil {
		return err
	}
	var vb []byte
	if in.left {
		vb, err = p.v1s.Serialize(in.v1)
	} else {
		vb, err = p.v2s.Serialize(in.v2)
	}
	if err != nil {
		return fmt.Errorf("value of a pending join record: %w", err)
	}
	list, _, err := p.outer.Get(kb)
	if err != nil {
		return err
	}
	return p.outer.Put(kb, appendPending(list, vb))
}

// appendPending adds a value to a pending list: each value as its length
// (uvarint) and bytes.
func appendPending(list, v []byte) []byte {
	out := make([]byte, 0, len(list)+len(v)+binary.MaxVarintLen64)
	out = append(out, list...)
	out = binary.AppendUvarint(out, uint64(len(v)))
	return append(out, v...)
}

func splitPending(list []byte) ([][]byte, error) {
	var vs [][]byte
	for len(list) > 0 {
		n, w := binary.Uvarint(list)
		if w <= 0 || uint64(len(list)-w) < n {
			return nil, errors.New("corrupt pending join record list")
		}
		vs = append(vs, list[w:w+int(n)])
		list = list[w+int(n):]
	}
	return vs, nil
}

// emitClosed forwards, and removes, the pending records whose windows have
// closed in the join's stream time (a left record's at time+after+grace, a
// right record's at time+before+grace), in the store's order (time, right
// before left, key, arrival), each stamped with its own time and with the
// headers of the record that closed it. after is the window's forward reach
// on the side of that record, which Kafka Streams' first check uses.
func (p *streamJoin[K, V1, V2, VR]) emitClosed(ctx *stream.Context[K, VR], after int64, headers []stream.Header) error {
	now := p.seen.Millis()
	if p.minTime != math.MaxInt64 && p.minTime+after+p.w.grace >= now {
		return nil // nothing can have closed yet
	}
	p.minTime = math.MaxInt64
	it, err := p.outer.All()
	if err != nil {
		return err
	}
	var done [][]byte
	for it.Next() {
		kb := slices.Clone(it.Key()) // the iterator's may be reused
		if len(kb) < 9 {
			it.Close()
			return errors.New("corrupt pending join record key")
		}
		ts := int64(binary.BigEndian.Uint64(kb))
		left := kb[8] == 1
		p.minTime = ts
		reach := p.w.before
		if left {
			reach = p.w.after
		}
		if ts+reach+p.w.grace >= now {
			continue // still open: a partner may come
		}
		key, err := p.ks.Deserialize(kb[9:])
		if err != nil {
			it.Close()
			return fmt.Errorf("key of a pending join record: %w", err)
		}
		vals, err := splitPending(slices.Clone(it.Value()))
		if err != nil {
			it.Close()
			return err
		}
		for _, vb := range vals {
			var out VR
			if left {
				v, err := p.v1s.Deserialize(vb)
				if err != nil {
					it.Close()
					return fmt.Errorf("value of a pending join record: %w", err)
				}
				out = p.joiner(key, &v, nil)
			} else {
				v, err := p.v2s.Deserialize(vb)
				if err != nil {
					it.Close()
					return fmt.Errorf("value of a pending join record: %w", err)
				}
				out = p.joiner(key, nil, &v)
			}
			ctx.Forward(stream.Record[K, VR]{Key: key, Value: out, Timestamp: time.UnixMilli(ts), Headers: headers})
		}
		done = append(done, kb)
	}
	if err := errors.Join(it.Err(), it.Close()); err != nil {
		return err
	}
	for _, kb := range done {
		if err := p.outer.Delete(kb); err != nil {
			return err
		}
	}
	return nil
}
