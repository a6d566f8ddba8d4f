package dsl

import (
	"errors"

	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// sliding is Kafka Streams' KStreamSlidingWindowAggregate (KIP-450), with
// the store read backwards as Kafka Streams reads its default stores, so
// updates are forwarded in the same order. Per key, a record at t updates
// the windows that hold it, creates its left window [t-d, t] (from the
// aggregate of the records before it that it holds) unless it exists,
// creates its right window [t+1, t+1+d] if a later record lies in it, and
// creates the right window of the record before it if t lies in that. A
// record earlier than d goes into the window [0, d] that holds every such
// record.
type sliding[K, V, VA any] struct {
	windowedBase[K, VA]
	w      SlidingWindowSpec
	fold   step[K, V, VA]
	valNil func(V) bool

	// late is set when the current record was too late for a window.
	late bool
}

// window is one stored window of the current key, read before any write.
type window[VA any] struct {
	start int64
	v     state.ValueAndTimestamp[VA]
}

func (p *sliding[K, V, VA]) Init(ctx *stream.Context[Windowed[K], Change[VA]]) error {
	return p.init(ctx)
}

func (p *sliding[K, V, VA]) Process(ctx *stream.Context[Windowed[K], Change[VA]], r stream.Record[K, V]) error {
	if p.keyNil != nil && p.keyNil(r.Key) {
		ctx.RecordDropped(stream.DropNullKey)
		return nil
	}
	if p.valNil != nil && p.valNil(r.Value) {
		ctx.RecordDropped(stream.DropNullValue)
		return nil
	}
	ts := r.Timestamp.UnixMilli()
	closeT, err := p.observe(ctx, ts, r.Headers)
	if err != nil {
		return err
	}
	if ts+p.w.diff < closeT { // even the latest window that could hold it is closed
		ctx.RecordDropped(stream.DropLateRecord)
		return nil
	}
	p.late = false
	if ts < p.w.diff {
		err = p.early(ctx, r, closeT)
	} else {
		err = p.process(ctx, r, closeT)
	}
	if err == nil && p.late {
		ctx.RecordDropped(stream.DropLateRecord)
	}
	return err
}

// windows reads the key's windows with a start in [from, to], backwards or
// forwards, before anything is written.
func (p *sliding[K, V, VA]) windows(key K, from, to int64, backward bool) ([]window[VA], error) {
	it, err := p.store.FetchRange(key, from, to)
	if backward {
		it, err = p.store.BackwardFetchRange(key, from, to)
	}
	if err != nil {
		return nil, err
	}
	var out []window[VA]
	for it.Next() {
		out = append(out, window[VA]{it.Start(), it.Value()})
	}
	return out, errors.Join(it.Err(), it.Close())
}

// update folds the record into the window at start whose aggregate is v
// (nil: a new, empty window; existing says whether the store has it),
// unless the window is closed.
func (p *sliding[K, V, VA]) update(ctx *stream.Context[Windowed[K], Change[VA]], r stream.Record[K, V], start int64, v *state.ValueAndTimestamp[VA], existing bool, closeT int64) error {
	if addCapped(start, p.w.diff) < closeT {
		p.late = true
		return nil
	}
	var next state.ValueAndTimestamp[VA]
	if v == nil {
		var zero VA
		next = state.ValueAndTimestamp[VA]{Value: p.fold(r.Key, r.Value, zero, false), Timestamp: r.Timestamp.UnixMilli()}
	} else {
		next = state.ValueAndTimestamp[VA]{Value: p.fold(r.Key, r.Value, v.Value, true), Timestamp: max(r.Timestamp.UnixMilli(), v.Timestamp)}
	}
	var old *VA
	if existing {
		old = &v.Value
	}
	return p.put(ctx, r.Key, start, old, next, r.Headers)
}

func (p *sliding[K, V, VA]) process(ctx *stream.Context[Windowed[K], Change[VA]], r stream.Record[K, V], closeT int64) error {
	ts, d := r.Timestamp.UnixMilli(), p.w.diff
	found, err := p.windows(r.Key, max(0, ts-2*d), ts+1, true)
	if err != nil {
		return err
	}
	starts := map[int64]bool{}
	var leftAgg, rightAgg *state.ValueAndTimestamp[VA]
	leftCreated, rightCreated := false, false
	prev, hasPrev := int64(0), false
scan:
	for i := range found {
		w := &found[i]
		starts[w.start] = true
		end := w.start + d
		switch {
		case w.start == ts+1:
			rightCreated = true
		case end > ts:
			if rightAgg == nil {
				rightAgg = &w.v
			}
			if err := p.update(ctx, r, w.start, &w.v, true, closeT); err != nil {
				return err
			}
		case end == ts:
			leftCreated = true
			if err := p.update(ctx, r, w.start, &w.v, true, closeT); err != nil {
				return err
			}
			if w.v.Timestamp >= ts {
				return nil // every window this record needs exists already
			}
			prev, hasPrev = w.v.Timestamp, true
		default: // end < ts: the latest window before the record
			leftAgg = &w.v
			prev, hasPrev = w.v.Timestamp, true
			break scan
		}
	}
	// the right window of the record before, if this record lies in it
	if hasPrev && !starts[prev+1] && prev+1+d >= ts {
		if err := p.update(ctx, r, prev+1, nil, false, closeT); err != nil {
			return err
		}
	}
	if !leftCreated {
		var from *state.ValueAndTimestamp[VA]
		if hasPrev && ts-d <= prev { // the record before lies in the left window
			from = &state.ValueAndTimestamp[VA]{Value: leftAgg.Value, Timestamp: r.Timestamp.UnixMilli()}
		}
		if err := p.update(ctx, r, ts-d, from, false, closeT); err != nil {
			return err
		}
	}
	if !rightCreated && rightAgg != nil && rightAgg.Timestamp > ts {
		return p.createRight(ctx, r, *rightAgg)
	}
	return nil
}

// createRight stores the record's right window [t+1, t+1+d], which holds
// the later records of rightAgg (not this one), and forwards it.
func (p *sliding[K, V, VA]) createRight(ctx *stream.Context[Windowed[K], Change[VA]], r stream.Record[K, V], rightAgg state.ValueAndTimestamp[VA]) error {
	return p.put(ctx, r.Key, r.Timestamp.UnixMilli()+1, nil, rightAgg, r.Headers)
}

// early handles a record at t < d, which would make windows starting before
// 0: it goes into the window [0, d], which holds every such record.
func (p *sliding[K, V, VA]) early(ctx *stream.Context[Windowed[K], Change[VA]], r stream.Record[K, V], closeT int64) error {
	ts := r.Timestamp.UnixMilli()
	found, err := p.windows(r.Key, 0, ts+1, false)
	if err != nil {
		return err
	}
	starts := map[int64]bool{}
	var combined, rightAgg *state.ValueAndTimestamp[VA]
	rightCreated := false
	prev, hasPrev := int64(0), false
	for i := range found {
		w := &found[i]
		starts[w.start] = true
		switch {
		case w.start == 0:
			combined = &w.v
			if w.v.Timestamp < ts {
				prev, hasPrev = w.v.Timestamp, true
			}
		case w.start <= ts:
			rightAgg = &w.v
			if err := p.update(ctx, r, w.start, &w.v, true, closeT); err != nil {
				return err
			}
		default: // w.start == ts+1
			rightCreated = true
		}
	}
	if rightAgg == nil && combined != nil && combined.Timestamp > ts {
		rightAgg = combined
	}
	if !rightCreated && rightAgg != nil && rightAgg.Timestamp > ts {
		if err := p.createRight(ctx, r, *rightAgg); err != nil {
			return err
		}
	}
	if hasPrev && !starts[prev+1] {
		if err := p.update(ctx, r, prev+1, nil, false, closeT); err != nil {
			return err
		}
	}
	if combined == nil {
		return p.update(ctx, r, 0, nil, false, closeT)
	}
	return p.update(ctx, r, 0, combined, true, closeT)
}
