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

// Session aggregations: Kafka Streams 4.4's
// windowedBy(SessionWindows).count/reduce/aggregate, by hand. Per key, a
// record at t starts the session [t, t], merged with every session of the
// key that ends at or after t-gap and starts at or before t+gap: their
// aggregates are combined with the merger (starting from init(), in the
// order of their ends), the record is folded in, each session replaced is
// deleted (with EmitUpdates: a Change with a nil New, the session's
// tombstone, stamped with its end) and the merged session is stored and
// forwarded, stamped with its end. The sessions live in a session store
// named store, with the aggregate as its value (Kafka Streams' session
// store format). A record whose merged session would already be closed
// (its end plus gap plus grace passed by the operator's stream time) is
// dropped as stream.DropLateRecord; a record with a nil key as
// stream.DropNullKey. A nil value (of a type that can be nil) reaches the
// aggregator, as in Kafka Streams. With EmitFinal each session is forwarded
// once when it closes, by end, then serialized key, then start (Kafka
// Streams' time-ordered session store), stamped with its end.

// SessionKey is the serde of the keys a session aggregation forwards:
// Kafka Streams' session-windowed key serde (the key, then the session's
// end and start).
func SessionKey[K any](ks serde.Serde[K]) serde.Serde[Windowed[K]] { return serde.SessionWindowed(ks) }

// SessionCount counts the records of each key's sessions.
func SessionCount[K, V any](t *stream.Topology, name, store string, w SessionWindowSpec, ks serde.Serde[K], opts WindowOptions, parents ...string) {
	SessionAggregate(t, name, store, w, ks, serde.Serde[int64](serde.Int64{}), opts,
		func() int64 { return 0 }, func(_ K, _ V, n int64) int64 { return n + 1 },
		func(_ K, a, b int64) int64 { return a + b }, parents...)
}

// SessionReduce combines the values of each key's sessions with reducer,
// which also combines the aggregates of sessions a record merges.
func SessionReduce[K, V any](t *stream.Topology, name, store string, w SessionWindowSpec, ks serde.Serde[K], vs serde.Serde[V], opts WindowOptions, reducer func(agg, value V) V, parents ...string) {
	addSession(t, name, store, w, ks, vs, opts, func(_ K, v V, agg V, found bool) V {
		if !found {
			return v
		}
		return reducer(agg, v)
	}, func(_ K, a V, found bool, b V) (V, bool) {
		if !found {
			return b, true
		}
		return reducer(a, b), true
	}, parents)
}

// SessionAggregate folds the values of each key's sessions into an
// aggregate of type VA, starting from init() in a new session; merge
// combines the aggregates of two sessions a record bridges (the earlier
// aggregate first).
func SessionAggregate[K, V, VA any](t *stream.Topology, name, store string, w SessionWindowSpec, ks serde.Serde[K], vas serde.Serde[VA], opts WindowOptions, init func() VA, agg func(key K, value V, agg VA) VA, merge func(key K, a, b VA) VA, parents ...string) {
	addSession(t, name, store, w, ks, vas, opts, func(k K, v V, a VA, found bool) VA {
		if !found {
			a = init()
		}
		return agg(k, v, a)
	}, func(k K, a VA, found bool, b VA) (VA, bool) {
		if !found {
			a = init()
		}
		return merge(k, a, b), true
	}, parents)
}

// mergeStep combines a session's aggregate b into the merged aggregate a
// (found false: nothing merged yet).
type mergeStep[K, VA any] func(key K, a VA, found bool, b VA) (VA, bool)

func addSession[K, V, VA any](t *stream.Topology, name, store string, w SessionWindowSpec, ks serde.Serde[K], vas serde.Serde[VA], opts WindowOptions, fold step[K, V, VA], merge mergeStep[K, VA], parents []string) {
	check := errors.Join(w.check(), opts.check())
	stream.AddProcessor(t, name, func() stream.Processor[K, V, Windowed[K], Change[VA]] {
		return &sessionAgg[K, V, VA]{storeName: store, w: w, ks: ks, opts: opts, check: check, fold: fold, merge: merge, keyNil: nilTest[K]()}
	}, parents...)
	retention := max(opts.Retention.Milliseconds(), w.gap+w.grace+finalMargin(opts.Emit))
	stream.AddSessionStore(t, store, ks, vas, time.Duration(retention)*time.Millisecond, opts.Store, name)
}

// sessionAgg is Kafka Streams' KStreamSessionWindowAggregate.
type sessionAgg[K, V, VA any] struct {
	storeName string
	w         SessionWindowSpec
	ks        serde.Serializer[K]
	opts      WindowOptions
	check     error
	fold      step[K, V, VA]
	merge     mergeStep[K, VA]
	keyNil    func(K) bool

	store         state.SessionStore[K, VA]
	seen, emitted *stream.ObservedTime
	idle          idleClock
	// pending counts, with EmitFinal, the sessions in the store not yet
	// emitted by their end, and ends orders those ends (an end whose count
	// fell to 0 is dropped when it comes up), so emission reads the store
	// only when a session has closed. Filled from the store at Init.
	pending map[int64]int
	ends    endHeap
}

// endHeap is a min-heap of session ends.
type endHeap []int64

func (h endHeap) Len() int           { return len(h) }
func (h endHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h endHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *endHeap) Push(x any)        { *h = append(*h, x.(int64)) }
func (h *endHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (p *sessionAgg[K, V, VA]) Init(ctx *stream.Context[Windowed[K], Change[VA]]) error {
	if p.check != nil {
		return fmt.Errorf("session aggregation %q: %w", ctx.NodeName(), p.check)
	}
	var err error
	if p.store, err = stream.GetSessionStore[K, VA](ctx, p.storeName); err != nil {
		return err
	}
	p.seen = ctx.ObservedTime("stream")
	if p.opts.Emit == EmitFinal {
		p.emitted = ctx.ObservedTime("emitted")
		p.pending, p.ends = map[int64]int{}, p.ends[:0]
		it, err := p.store.All()
		if err != nil {
			return err
		}
		for it.Next() {
			if it.End() >= p.emitted.Millis() {
				p.track(it.End(), 1)
			}
		}
		if err := errors.Join(it.Err(), it.Close()); err != nil {
			return fmt.Errorf("session aggregation %q: read the pending sessions: %w", ctx.NodeName(), err)
		}
		if p.opts.IdleClose > 0 {
			p.idle.schedule(ctx, p.opts.IdleClose, p.seen, func() error {
				return p.emitClosed(ctx, p.closeTime(), nil)
			})
		}
	}
	return nil
}

// track counts n more (or fewer) pending sessions ending at end, with
// EmitFinal.
func (p *sessionAgg[K, V, VA]) track(end int64, n int) {
	if p.pending == nil {
		return
	}
	c, known := p.pending[end]
	p.pending[end] = c + n
	if !known {
		heap.Push(&p.ends, end)
	}
}

// closeTime is the stream time less grace and gap: a session ending before
// it is closed, since no record can extend it any more.
func (p *sessionAgg[K, V, VA]) closeTime() int64 { return p.seen.Millis() - p.w.grace - p.w.gap }

type sessionRow[VA any] struct {
	start, end int64
	v          VA
}

func (p *sessionAgg[K, V, VA]) Process(ctx *stream.Context[Windowed[K], Change[VA]], r stream.Record[K, V]) error {
	if p.keyNil != nil && p.keyNil(r.Key) {
		ctx.RecordDropped(stream.DropNullKey)
		return nil
	}
	ts := r.Timestamp.UnixMilli()
	p.seen.ObserveMillis(ts)
	closeT := p.closeTime()
	if p.opts.Emit == EmitFinal {
		// Before this record's writes, as for time windows: the record
		// cannot extend a session closed now.
		if err := p.emitClosed(ctx, closeT, r.Headers); err != nil {
			return err
		}
	}
	it, err := p.store.FindSessions(r.Key, ts-p.w.gap, ts+p.w.gap)
	if err != nil {
		return err
	}
	var found []sessionRow[VA]
	for it.Next() {
		found = append(found, sessionRow[VA]{it.Start(), it.End(), it.Value()})
	}
	if err := errors.Join(it.Err(), it.Close()); err != nil {
		return err
	}
	var agg VA
	has := false
	merged := session{ts, ts}
	for _, f := range found {
		agg, has = p.merge(r.Key, agg, has, f.v)
		merged = mergeSessions(ts, []session{merged, {f.start, f.end}})
	}
	if merged.end < closeT {
		ctx.RecordDropped(stream.DropLateRecord)
		return nil
	}
	var old *VA // the session's row before, when the record made no new window
	if merged != (session{ts, ts}) {
		for i := range found {
			f := &found[i]
			if err := p.store.Remove(r.Key, f.start, f.end); err != nil {
				return err
			}
			p.track(f.end, -1)
			p.forward(ctx, r.Key, f.start, f.end, Change[VA]{Old: &f.v})
		}
	} else if len(found) == 1 {
		old = &found[0].v
	}
	next := p.fold(r.Key, r.Value, agg, has)
	if old == nil { // a new session: merged, or a record's own
		p.track(merged.end, 1)
	}
	if err := p.store.Put(r.Key, merged.start, merged.end, next); err != nil {
		if errors.Is(err, state.ErrExpired) {
			ctx.RecordDropped(stream.DropExpiredWindow)
			return nil
		}
		return err
	}
	p.forward(ctx, r.Key, merged.start, merged.end, Change[VA]{Old: old, New: &next})
	return nil
}

// forward sends a session's change, with EmitUpdates, stamped with the
// session's end and without the record's headers: Kafka Streams makes a
// new record for it, where its other windows keep the record's headers.
func (p *sessionAgg[K, V, VA]) forward(ctx *stream.Context[Windowed[K], Change[VA]], key K, start, end int64, ch Change[VA]) {
	if p.opts.Emit != EmitUpdates {
		return
	}
	ctx.Forward(stream.Record[Windowed[K], Change[VA]]{
		Key: Windowed[K]{Key: key, Start: start, End: end}, Value: ch, Timestamp: time.UnixMilli(end),
	})
}

type closedSession[K, VA any] struct {
	kb         []byte
	key        K
	start, end int64
	v          VA
}

// emitClosed forwards, once each, the sessions ending before closeT that
// were not emitted yet (those ending at or after the close time emitted up
// to).
func (p *sessionAgg[K, V, VA]) emitClosed(ctx *stream.Context[Windowed[K], Change[VA]], closeT int64, headers []stream.Header) error {
	last := p.emitted.Millis()
	if last >= closeT {
		return nil
	}
	lo, hi := max(0, last), closeT-1
	closed := false
	for len(p.ends) > 0 && p.ends[0] <= hi {
		e := heap.Pop(&p.ends).(int64)
		closed = closed || p.pending[e] > 0
		delete(p.pending, e)
	}
	if hi >= lo && closed {
		it, err := p.store.FindSessionsByEnd(lo, hi)
		if err != nil {
			return err
		}
		var closed []closedSession[K, VA]
		for it.Next() {
			kb, err := p.ks.Serialize(it.Key())
			if err != nil {
				it.Close()
				return fmt.Errorf("key of a closed session: %w", err)
			}
			closed = append(closed, closedSession[K, VA]{kb, it.Key(), it.Start(), it.End(), it.Value()})
		}
		if err := errors.Join(it.Err(), it.Close()); err != nil {
			return err
		}
		slices.SortStableFunc(closed, func(a, b closedSession[K, VA]) int {
			if a.end != b.end {
				return compareInt(a.end, b.end)
			}
			if c := bytes.Compare(a.kb, b.kb); c != 0 {
				return c
			}
			return compareInt(a.start, b.start)
		})
		for i := range closed {
			c := &closed[i]
			ctx.Forward(stream.Record[Windowed[K], Change[VA]]{
				Key:   Windowed[K]{Key: c.key, Start: c.start, End: c.end},
				Value: Change[VA]{New: &c.v}, Timestamp: time.UnixMilli(c.end), Headers: headers,
			})
		}
	}
	p.emitted.ObserveMillis(closeT)
	return nil
}
