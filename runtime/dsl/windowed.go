package dsl

import (
	"bytes"
	"container/heap"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// Windowed aggregations of a grouped stream: Kafka Streams 4.4's
// windowedBy(...).count/reduce/aggregate, by hand. As for Count, the
// records of one key must meet in one task (put a stream.AddRepartition
// before, where the key may have changed). Each aggregation keeps its
// windows in its own window store (session store for sessions), named
// store, with values timestamped as Kafka Streams' timestamped window
// stores (the largest record time in the window), and forwards
// Change values keyed by Windowed[K]:
//
//   - with EmitUpdates (the default), every update of a window, as it
//     happens, stamped with the window's largest record time (a session's
//     updates and tombstones with the session's end), as Kafka Streams with
//     its record cache off;
//   - with EmitFinal, each window once, when it closes, with its final
//     aggregate (Change.Old nil), stamped as an update would be.
//
// A record with a nil key is dropped (stream.DropNullKey); so is, by
// sliding windows, a record with a nil value (stream.DropNullValue): time
// and session windows hand a nil value (of a type that can be nil) to the
// aggregator, and Count counts it, as Kafka Streams does. A record too late
// for a window (the window closed: the operator's stream time passed its
// end plus grace) is not added to it; a record too late for one or more of
// its windows is counted once as stream.DropLateRecord (Kafka Streams counts
// each window) and logged at debug.

// WindowOptions are the per-operator settings of a windowed aggregation.
type WindowOptions struct {
	// Store configures the window (session) store: in memory or persistent,
	// changelogged or not. Its changelog is compacted and deleted past the
	// retention (plus a day's margin).
	Store stream.StoreOptions
	// Retention is how long the store keeps a window, past its start
	// (sessions: past their end) in the store's observed time. Zero, and anything shorter, is
	// the least a correct result needs: the windows' size plus grace
	// (sliding windows: twice the difference plus grace; sessions: gap plus
	// grace), Kafka Streams' default. Longer keeps windows readable from the
	// store after they closed.
	Retention time.Duration
	// Emit is when results are forwarded: EmitUpdates (the default) or
	// EmitFinal.
	Emit Emit
	// IdleClose, with EmitFinal, lets the wall clock close windows while
	// no record moves the operator's stream time: once none has for
	// IdleClose of wall-clock time, the stream time follows the wall
	// clock from where the last record left it, closing and emitting
	// windows as if records kept arriving (checked every IdleClose/2 of
	// wall-clock time; idleness starts at the first check after the last
	// record, so a test driver must advance its wall clock in steps of at
	// most IdleClose/2, as a real clock does). Records that arrive
	// afterwards with older timestamps are late for the windows it closed
	// and are dropped. Zero (the default) waits for records, as Kafka
	// Streams does: an idle input emits nothing.
	IdleClose time.Duration
}

func (o WindowOptions) check() error {
	switch {
	case o.Emit != EmitUpdates && o.Emit != EmitFinal:
		return fmt.Errorf("%w %d", errEmit, o.Emit)
	case o.IdleClose < 0:
		return fmt.Errorf("idle close %v is negative", o.IdleClose)
	case o.IdleClose > 0 && o.Emit != EmitFinal:
		return errors.New("idle close needs EmitFinal: updates are emitted as they happen")
	}
	return nil
}

// Windows are the windows a windowed Count, Reduce or Aggregate groups by:
// TimeWindows (tumbling or hopping) or SlidingWindowSpec. Sessions have
// their own functions (SessionCount, ...), since they merge.
type Windows interface {
	// windowSize is the size of a window, which the key serde needs to
	// give a window its end.
	windowSize() int64
	retention() int64
}

func (w TimeWindows) windowSize() int64       { return w.size }
func (w TimeWindows) retention() int64        { return w.size + w.grace }
func (w SlidingWindowSpec) windowSize() int64 { return w.diff }
func (w SlidingWindowSpec) retention() int64  { return 2*w.diff + w.grace }

// WindowedKey is the serde of the keys a windowed Count, Reduce or
// Aggregate over w forwards: Kafka Streams' time-windowed key serde (the
// key, then the window's start), the end given by the windows' size.
func WindowedKey[K any](ks serde.Serde[K], w Windows) serde.Serde[Windowed[K]] {
	return serde.TimeWindowed(ks, time.Duration(w.windowSize())*time.Millisecond)
}

// WindowedCount counts the records of each key per window.
func WindowedCount[K, V any](t *stream.Topology, name, store string, w Windows, ks serde.Serde[K], opts WindowOptions, parents ...string) {
	WindowedAggregate(t, name, store, w, ks, serde.Serde[int64](serde.Int64{}), opts,
		func() int64 { return 0 }, func(_ K, _ V, n int64) int64 { return n + 1 }, parents...)
}

// WindowedReduce combines the values of each key per window: a window's
// first value is its aggregate, and each later one is combined into it.
func WindowedReduce[K, V any](t *stream.Topology, name, store string, w Windows, ks serde.Serde[K], vs serde.Serde[V], opts WindowOptions, reducer func(agg, value V) V, parents ...string) {
	addWindowed(t, name, store, w, ks, vs, opts, func(_ K, v V, agg V, found bool) V {
		if !found {
			return v
		}
		return reducer(agg, v)
	}, parents)
}

// WindowedAggregate folds the values of each key per window into an
// aggregate of type VA, starting from init() in a new window.
func WindowedAggregate[K, V, VA any](t *stream.Topology, name, store string, w Windows, ks serde.Serde[K], vas serde.Serde[VA], opts WindowOptions, init func() VA, agg func(key K, value V, agg VA) VA, parents ...string) {
	addWindowed(t, name, store, w, ks, vas, opts, func(k K, v V, a VA, found bool) VA {
		if !found {
			a = init()
		}
		return agg(k, v, a)
	}, parents)
}

// step folds a value into a window's aggregate; found says whether the
// window had one (else agg is the zero value).
type step[K, V, VA any] func(key K, value V, agg VA, found bool) VA

func addWindowed[K, V, VA any](t *stream.Topology, name, store string, w Windows, ks serde.Serde[K], vas serde.Serde[VA], opts WindowOptions, fold step[K, V, VA], parents []string) {
	base := windowedBase[K, VA]{storeName: store, ks: ks, opts: opts, keyNil: nilTest[K]()}
	var size int64
	switch w := w.(type) {
	case TimeWindows:
		base.check = errors.Join(w.check(), opts.check())
		base.grace, size = w.grace, w.size
		base.closedThrough = func(closeT int64) int64 { return closeT - w.size }
		base.end = w.end
		base.anyStart = w.anyStart
		stream.AddProcessor(t, name, func() stream.Processor[K, V, Windowed[K], Change[VA]] {
			return &timeWindowed[K, V, VA]{windowedBase: base, w: w, fold: fold}
		}, parents...)
	case SlidingWindowSpec:
		base.check = errors.Join(w.check(), opts.check())
		base.grace, size = w.grace, w.diff
		// both ends inclusive: a window is open while its end >= close time
		base.closedThrough = func(closeT int64) int64 { return closeT - w.diff - 1 }
		base.end = func(start int64) int64 { return addCapped(start, w.diff) }
		stream.AddProcessor(t, name, func() stream.Processor[K, V, Windowed[K], Change[VA]] {
			return &sliding[K, V, VA]{windowedBase: base, w: w, fold: fold, valNil: nilTest[V]()}
		}, parents...)
	default:
		panic(fmt.Sprintf("dsl: windows of type %T", w)) // Windows is sealed: unreachable
	}
	retention := max(opts.Retention.Milliseconds(), w.retention()+finalMargin(opts.Emit))
	stream.AddTimestampedWindowStore(t, store, ks, vas, state.WindowStoreOptions{
		Retention:  time.Duration(retention) * time.Millisecond,
		WindowSize: time.Duration(size) * time.Millisecond,
	}, opts.Store, name)
}

// windowedBase is what the time and sliding window aggregations share: the
// store, the operator's stream time, and final emission.
type windowedBase[K, VA any] struct {
	storeName string
	ks        serde.Serializer[K]
	opts      WindowOptions
	check     error // the windows' or options' mistake, reported by Init
	keyNil    func(K) bool
	grace     int64
	// closedThrough is the largest window start closed at a close time
	// (stream time minus grace); end is a window's end from its start.
	closedThrough func(closeT int64) int64
	end           func(start int64) int64
	// anyStart says whether a window can start in [lo, hi] (nil: any can),
	// so that emission reads the store only when a window may have closed.
	anyStart func(lo, hi int64) bool

	store state.WindowStore[K, state.ValueAndTimestamp[VA]]
	// seen is the operator's stream time; emitted the close time final
	// results were emitted up to (-1: none yet). Both are committed with the
	// task's offsets, so a restart neither emits a window again nor skips
	// one: the windows themselves are in the store.
	seen, emitted *stream.ObservedTime
	idle          idleClock
	// pending indexes, with EmitFinal and windows that may start anywhere
	// (sliding), the windows in the store not yet emitted: by start, the
	// keys (by serialized key) with a window there; starts orders the
	// starts. Emission then reads those windows alone, as Kafka Streams
	// reads its time-ordered store, instead of every window of the store's
	// segments. Filled from the store at Init.
	pending map[int64]map[string]K
	starts  endHeap
}

func (b *windowedBase[K, VA]) init(ctx *stream.Context[Windowed[K], Change[VA]]) error {
	if b.check != nil {
		return fmt.Errorf("windowed aggregation %q: %w", ctx.NodeName(), b.check)
	}
	var err error
	if b.store, err = stream.GetWindowStore[K, state.ValueAndTimestamp[VA]](ctx, b.storeName); err != nil {
		return err
	}
	b.seen = ctx.ObservedTime("stream")
	if b.opts.Emit == EmitFinal {
		b.emitted = ctx.ObservedTime("emitted")
		if b.anyStart == nil {
			if err := b.loadPending(); err != nil {
				return fmt.Errorf("windowed aggregation %q: read the pending windows: %w", ctx.NodeName(), err)
			}
		}
		if b.opts.IdleClose > 0 {
			b.idle.schedule(ctx, b.opts.IdleClose, b.seen, func() error {
				return b.emitClosed(ctx, b.seen.Millis()-b.grace, nil)
			})
		}
	}
	return nil
}

// loadPending indexes the windows of the store that are not emitted yet.
func (b *windowedBase[K, VA]) loadPending() error {
	b.pending, b.starts = map[int64]map[string]K{}, b.starts[:0]
	from := int64(0)
	if last := b.emitted.Millis(); last >= 0 {
		from = max(0, b.closedThrough(last)+1)
	}
	it, err := b.store.All()
	if err != nil {
		return err
	}
	for it.Next() {
		if it.Start() >= from {
			if err := b.track(it.Key(), it.Start()); err != nil {
				it.Close()
				return err
			}
		}
	}
	return errors.Join(it.Err(), it.Close())
}

// track indexes key's new window at start, when pending windows are
// indexed.
func (b *windowedBase[K, VA]) track(key K, start int64) error {
	if b.pending == nil {
		return nil
	}
	kb, err := b.ks.Serialize(key)
	if err != nil {
		return fmt.Errorf("key of a window: %w", err)
	}
	keys := b.pending[start]
	if keys == nil {
		keys = map[string]K{}
		b.pending[start] = keys
		heap.Push(&b.starts, start)
	}
	keys[string(kb)] = key
	return nil
}

// closedWindows returns the windows starting in [lo, hi], as indexed (and
// forgets them), or, when windows are not indexed, as FetchAll gives them.
func (b *windowedBase[K, VA]) closedWindows(lo, hi int64) ([]closedWindow[K, VA], error) {
	var closed []closedWindow[K, VA]
	if b.pending != nil {
		for len(b.starts) > 0 && b.starts[0] <= hi {
			start := heap.Pop(&b.starts).(int64)
			keys := b.pending[start]
			delete(b.pending, start)
			if start < lo {
				continue
			}
			for kb, key := range keys {
				v, ok, err := b.store.Fetch(key, start)
				if err != nil {
					return nil, err
				}
				if ok {
					closed = append(closed, closedWindow[K, VA]{[]byte(kb), key, start, v})
				}
			}
		}
		return closed, nil
	}
	if b.anyStart != nil && !b.anyStart(lo, hi) {
		return nil, nil
	}
	it, err := b.store.FetchAll(lo, hi)
	if err != nil {
		return nil, err
	}
	for it.Next() {
		kb, err := b.ks.Serialize(it.Key())
		if err != nil {
			it.Close()
			return nil, fmt.Errorf("key of a closed window: %w", err)
		}
		closed = append(closed, closedWindow[K, VA]{kb, it.Key(), it.Start(), it.Value()})
	}
	return closed, errors.Join(it.Err(), it.Close())
}

// observe moves the stream time to ts and returns the close time: windows
// ending at or before it (time windows; sliding: before it) are closed.
// With EmitFinal it first emits the windows that closed since the last
// emission: none of them is one this record can update, and emitting them
// before the record's writes means no write can push a window out of the
// store's retention before it is emitted (Kafka Streams 4.4 emits after,
// and loses such windows; see the oracle's ages-out case).
func (b *windowedBase[K, VA]) observe(ctx *stream.Context[Windowed[K], Change[VA]], ts int64, headers []stream.Header) (int64, error) {
	b.seen.ObserveMillis(ts)
	closeT := b.seen.Millis() - b.grace
	if b.opts.Emit == EmitFinal {
		if err := b.emitClosed(ctx, closeT, headers); err != nil {
			return 0, err
		}
	}
	return closeT, nil
}

type closedWindow[K, VA any] struct {
	kb    []byte
	key   K
	start int64
	v     state.ValueAndTimestamp[VA]
}

// emitClosed forwards, once each, the windows closed at closeT and not yet
// emitted, ordered by start and then by serialized key (as Kafka Streams'
// time-ordered window store gives them), each with its final aggregate,
// stamped with the window's largest record time.
func (b *windowedBase[K, VA]) emitClosed(ctx *stream.Context[Windowed[K], Change[VA]], closeT int64, headers []stream.Header) error {
	last := b.emitted.Millis()
	if last >= closeT {
		return nil
	}
	lo := int64(0)
	if last >= 0 {
		lo = max(0, b.closedThrough(last)+1)
	}
	hi := b.closedThrough(closeT)
	if hi >= lo {
		closed, err := b.closedWindows(lo, hi)
		if err != nil {
			return err
		}
		slices.SortStableFunc(closed, func(a, b closedWindow[K, VA]) int {
			if a.start != b.start {
				return compareInt(a.start, b.start)
			}
			return bytes.Compare(a.kb, b.kb)
		})
		for i := range closed {
			c := &closed[i]
			ctx.Forward(stream.Record[Windowed[K], Change[VA]]{
				Key:       Windowed[K]{Key: c.key, Start: c.start, End: b.end(c.start)},
				Value:     Change[VA]{New: &c.v.Value},
				Timestamp: time.UnixMilli(c.v.Timestamp),
				Headers:   headers,
			})
		}
	}
	b.emitted.ObserveMillis(closeT)
	return nil
}

func compareInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// put stores a window's new aggregate and, emitting updates, forwards the
// change from old (nil: the window is new).
func (b *windowedBase[K, VA]) put(ctx *stream.Context[Windowed[K], Change[VA]], key K, start int64, old *VA, next state.ValueAndTimestamp[VA], headers []stream.Header) error {
	if err := b.store.Put(key, next, start); err != nil {
		if errors.Is(err, state.ErrExpired) {
			ctx.RecordDropped(stream.DropExpiredWindow)
			return nil
		}
		return err
	}
	if old == nil {
		if err := b.track(key, start); err != nil {
			return err
		}
	}
	if b.opts.Emit == EmitUpdates {
		ctx.Forward(stream.Record[Windowed[K], Change[VA]]{
			Key:       Windowed[K]{Key: key, Start: start, End: b.end(start)},
			Value:     Change[VA]{Old: old, New: &next.Value},
			Timestamp: time.UnixMilli(next.Timestamp),
			Headers:   headers,
		})
	}
	return nil
}

// timeWindowed is Kafka Streams' KStreamWindowAggregate.
type timeWindowed[K, V, VA any] struct {
	windowedBase[K, VA]
	w    TimeWindows
	fold step[K, V, VA]
}

func (p *timeWindowed[K, V, VA]) Init(ctx *stream.Context[Windowed[K], Change[VA]]) error {
	return p.init(ctx)
}

func (p *timeWindowed[K, V, VA]) Process(ctx *stream.Context[Windowed[K], Change[VA]], r stream.Record[K, V]) error {
	if p.keyNil != nil && p.keyNil(r.Key) {
		ctx.RecordDropped(stream.DropNullKey)
		return nil
	}
	ts := r.Timestamp.UnixMilli()
	closeT, err := p.observe(ctx, ts, r.Headers)
	if err != nil {
		return err
	}
	late := false
	for _, start := range p.w.starts(ts) {
		if p.w.end(start) <= closeT {
			late = true
			continue
		}
		old, found, err := p.store.Fetch(r.Key, start)
		if err != nil {
			return err
		}
		next := state.ValueAndTimestamp[VA]{Value: p.fold(r.Key, r.Value, old.Value, found), Timestamp: ts}
		var was *VA
		if found {
			next.Timestamp = max(ts, old.Timestamp)
			was = &old.Value
		}
		if err := p.put(ctx, r.Key, start, was, next, r.Headers); err != nil {
			return err
		}
	}
	if late {
		ctx.RecordDropped(stream.DropLateRecord)
	}
	return nil
}

// idleClock moves an operator's stream time by the wall clock while no
// record does (WindowOptions.IdleClose).
type idleClock struct {
	// base is the stream time the last record left and wall the wall-clock
	// time it was noticed at; moved is the stream time the clock itself set
	// last (a stream time other than it means a record moved it).
	base, wall, moved int64
}

// schedule adds the wall-clock punctuation: every idle/2, if the stream
// time seen has not moved for idle, it is moved to base plus the wall-clock
// time since, and then is called.
func (c *idleClock) schedule(ctx interface {
	Schedule(time.Duration, stream.PunctuationType, func(time.Time) error) stream.Cancellable
}, idle time.Duration, seen *stream.ObservedTime, then func() error) {
	c.base, c.wall, c.moved = -1, -1, -1
	ctx.Schedule(max(idle/2, time.Millisecond), stream.WallClock, func(now time.Time) error {
		ms := now.UnixMilli()
		cur := seen.Millis()
		if cur < 0 {
			return nil // nothing seen yet: no window to close
		}
		if cur != c.moved || c.wall < 0 {
			c.base, c.wall, c.moved = cur, ms, cur
			return nil
		}
		if ms-c.wall < idle.Milliseconds() {
			return nil
		}
		seen.ObserveMillis(c.base + (ms - c.wall))
		c.moved = seen.Millis()
		return then()
	})
}

// WindowedPartitioner partitions records of windowed keys by their key
// alone, as Kafka Streams' WindowedStreamPartitioner: every window of a key
// goes to the partition the key itself goes to (murmur2 of ks's bytes), so
// a topic of windowed results co-partitions with the key's other topics.
// Give it to a sink of windowed keys (stream.SinkConfig.Partitioner); the
// default, which hashes the whole windowed key, spreads a key's windows.
func WindowedPartitioner[K, V any](ks serde.Serializer[K]) func(key Windowed[K], value V, keyBytes []byte, partitions int32) int32 {
	return func(k Windowed[K], _ V, kb []byte, n int32) int32 {
		if b, err := ks.Serialize(k.Key); err == nil && b != nil {
			kb = b
		}
		return stream.KafkaPartition(kb, n)
	}
}

// finalMargin is what a store of final results keeps beyond Kafka Streams'
// default retention: a window that holds its end (sliding, session) closes
// one millisecond after that retention would drop it, and must still be
// there to be emitted. Updates keep Kafka Streams' retention, so that a late
// record finds the windows Kafka Streams' store would give it.
func finalMargin(e Emit) int64 {
	if e == EmitFinal {
		return 1
	}
	return 0
}
