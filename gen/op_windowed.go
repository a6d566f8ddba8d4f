package gen

import (
	"cmp"
	"fmt"
	"time"

	"github.com/dave/jennifer/jen"

	"github.com/kgen-dev/kgen/schema"
)

// Windowed aggregations: count, reduce and aggregate with window: (Kafka
// Streams' windowedBy(...).count/reduce/aggregate). Each is a kind of its
// own, the variant kindOf picks for an operator that says window:, so the
// plain aggregations stay as they are. The table's key is dsl.Windowed[K];
// the store:, a window store (a session store for sessions), keeps K and
// the aggregate per window; emit: final emits each window once it closes.
func init() {
	registerWindowed(&opKind{
		Name:        "count",
		Keys:        keys("from", "store!", "window!", "emit", "idle-close"),
		Hint:        tableHint,
		Aggregation: true,
		Type:        windowedAggregation(func(r *resolver, _ *OpNode, _ TypeRef) TypeRef { return r.builtin("int64") }),
		Emit: func(e *emitter, o *OpNode) []jen.Code {
			c, st := e.op(o), o.Rows
			fn, w := windowedFunc(o, "Count")
			return []jen.Code{c.dsl(fn).Types(groupedTypes(o)...).Call(c.args(c.store(st), w, jen.Id("s").Dot(st.Go.KeySerde), windowOptions(o))...)}
		},
		Rows:    windowedRows("counts"),
		Against: windowedAgainst,
	})
	registerWindowed(&opKind{
		Name:        "reduce",
		Keys:        keys("from", "store!", "window!", "emit", "idle-close"),
		Hint:        tableHint,
		Aggregation: true,
		Type:        windowedAggregation(func(_ *resolver, _ *OpNode, in TypeRef) TypeRef { return in }),
		Funcs: func(o *OpNode) []opFunc {
			v := o.groupedValue()
			doc := fmt.Sprintf("is the reducer of windowed reduce %q: a window's aggregate with one more value.", o.Name.Value)
			if isSession(o.Window) {
				doc = fmt.Sprintf("is the reducer of session reduce %q: a session's aggregate with one more value, and the aggregate of two sessions a record bridges (the earlier one agg).", o.Name.Value)
			}
			return []opFunc{{suffix: "Reduce", doc: doc,
				params: []fnParam{{"agg", plainT(v)}, {"value", plainT(v)}}, results: []fnParam{{"newAgg", plainT(v)}}}}
		},
		Emit: func(e *emitter, o *OpNode) []jen.Code {
			c, st := e.op(o), o.Rows
			fn, w := windowedFunc(o, "Reduce")
			return []jen.Code{c.dsl(fn).Types(groupedTypes(o)...).Call(c.args(c.store(st), w, jen.Id("s").Dot(st.Go.KeySerde), jen.Id("s").Dot(st.Go.ValueSerde), windowOptions(o), c.method(0))...)}
		},
		Rows:    windowedRows("reductions of its input"),
		Against: windowedAgainst,
	})
	registerWindowed(&opKind{
		Name:        "aggregate",
		Keys:        keys("from", "store!", "value!", "window!", "emit", "idle-close"),
		Hint:        tableHint,
		Aggregation: true,
		Type:        windowedAggregation(func(r *resolver, o *OpNode, _ TypeRef) TypeRef { return r.typ(o.Value) }),
		Funcs: func(o *OpNode) []opFunc {
			va := o.Out.Value.plain()
			name := o.Name.Value
			fs := []opFunc{
				{suffix: "Init", doc: fmt.Sprintf("is the initializer of windowed aggregate %q: the aggregate of a key's window before its first record.", name), results: []fnParam{{"agg", plainT(va)}}},
				{suffix: "Aggregate", doc: fmt.Sprintf("is the aggregator of windowed aggregate %q: a window's aggregate with one more record.", name), params: append(o.keyValue(), fnParam{"agg", plainT(va)}), results: []fnParam{{"newAgg", plainT(va)}}},
			}
			if o.Window != nil && o.Window.Kind.Value == schema.WindowSession {
				k := o.keyValue()[0]
				fs = append(fs, opFunc{suffix: "Merge", doc: fmt.Sprintf("is the session merger of windowed aggregate %q: the aggregate of two sessions of key that a record bridges, the earlier one a.", name),
					params: []fnParam{k, {"a", plainT(va)}, {"b", plainT(va)}}, results: []fnParam{{"merged", plainT(va)}}})
			}
			return fs
		},
		Emit: func(e *emitter, o *OpNode) []jen.Code {
			c, st := e.op(o), o.Rows
			fn, w := windowedFunc(o, "Aggregate")
			args := []jen.Code{c.store(st), w, jen.Id("s").Dot(st.Go.KeySerde), jen.Id("s").Dot(st.Go.ValueSerde), windowOptions(o), c.method(0), c.method(1)}
			if o.Window.Kind.Value == schema.WindowSession {
				args = append(args, c.method(2))
			}
			return []jen.Code{c.dsl(fn).Types(append(groupedTypes(o), typeOf(o.Out.Value.plain()))...).Call(c.args(args...)...)}
		},
		Rows:    func(o *schema.Operator) string { return windowedRows("aggregates of type " + o.Value.Value)(o) },
		Against: windowedAgainst,
	})
}

// windowedKinds are the windowed variants of the aggregations, by op:.
var windowedKinds = map[string]*opKind{}

// registerWindowed adds the windowed variant of aggregation kind k.Name.
func registerWindowed(k *opKind) {
	if _, dup := windowedKinds[k.Name]; dup {
		panic("gen: windowed operator kind " + k.Name + " registered twice")
	}
	windowedKinds[k.Name] = k
}

// specKind is the kind of spec operator o as the spec alone says (the
// windowed variant when it has a window:), nil if unknown.
func specKind(o *schema.Operator) *opKind {
	if o.Window != nil {
		if k := windowedKinds[o.Op.Value]; k != nil {
			return k
		}
	}
	return opKinds[o.Op.Value]
}

// isSession says o aggregates by session windows.
func isSession(w *schema.Window) bool { return w != nil && w.Kind.Value == schema.WindowSession }

// windowedAggregation is the typing rule of a windowed aggregation: it
// reads a grouped stream and outputs a table keyed by dsl.Windowed[K] of
// what agg says it keeps.
func windowedAggregation(agg func(r *resolver, o *OpNode, in TypeRef) TypeRef) func(r *resolver, o *OpNode, in Node) {
	return func(r *resolver, o *OpNode, in Node) {
		g := in.Op
		if g == nil || !g.kind.Grouping {
			r.errs.add(r.opFromPos(o, 0), "%s reads %q, which is not a grouping: aggregate a grouped stream ({op: groupByKey, from: [%s]} or groupBy)", o.what(), in.Name(), in.Name())
			return
		}
		if g.Out.Value.is(ChangeOf) {
			r.errs.add(o.Keys["window"], "%s reads the grouped rows of a table (%q): a table's rows are not windowed (as in Kafka Streams); window a grouped stream", o.what(), in.Name())
			return
		}
		w := o.Window
		if w.Kind.Value == "" {
			return // reported by the loader
		}
		if w.Kind.Value == schema.WindowJoin {
			r.errs.add(w.Kind.Pos, "%s: within, before and after are a stream-stream join's window; an aggregation's is {tumbling: SIZE}, {hopping: {size: SIZE, advance: ADVANCE}}, {sliding: DIFFERENCE} or {session: GAP}", o.what())
			return
		}
		if o.IdleClose.Set() && o.Emit.Value != schema.EmitFinal {
			r.errs.add(o.IdleClose.Pos, "%s: idle-close lets the wall clock close windows for emit: final; with updates every result is emitted as it happens (add emit: final)", o.what())
		}
		o.Windows = w
		o.Grouping = g
		va := agg(r, o, g.Out.Value.plain())
		o.Out, o.HasOut, o.Table = KV{g.Out.Key.wrapped(WindowedOf), va.wrapped(ChangeOf)}, true, true
		kind := "window"
		if isSession(w) {
			kind = "session"
		}
		if st := o.Rows; st != nil && !st.Implied && st.Kind.Value != kind {
			declared := cmp.Or(st.Kind.Value, "keyvalue")
			r.errs.add(posOr(st.Kind.Pos, st.Name.Pos), "store %q is a %s store but %s keeps %s windows in it: declare it with kind: %s", st.Name.Value, declared, o.what(), w.Kind.Value, kind)
		}
		if st := o.Rows; st != nil {
			st.WindowKind = kind
		}
		r.opStoreTypes(o, KV{g.Out.Key, va}, "", "")
	}
}

// windowedFunc is the dsl function of windowed aggregation fn (Count,
// Reduce, Aggregate) over o's windows, and the windows' value.
func windowedFunc(o *OpNode, fn string) (string, jen.Code) {
	w := o.Windows
	if isSession(w) {
		return "Session" + fn, windowsCode(w)
	}
	return "Windowed" + fn, windowsCode(w)
}

// windowsCode is the dsl value of windows w.
func windowsCode(w *schema.Window) *jen.Statement {
	grace := func(s *jen.Statement) *jen.Statement {
		if w.Grace.Value == 0 {
			return s
		}
		return s.Dot("Grace").Call(durationCode(w.Grace.Value))
	}
	switch w.Kind.Value {
	case schema.WindowTumbling:
		return grace(jen.Qual(pkgDSL, "TumblingWindows").Call(durationCode(w.Size.Value)))
	case schema.WindowHopping:
		return grace(jen.Qual(pkgDSL, "HoppingWindows").Call(durationCode(w.Size.Value), durationCode(w.Advance.Value)))
	case schema.WindowSliding:
		return jen.Qual(pkgDSL, "SlidingWindows").Call(durationCode(w.Size.Value), durationCode(w.Grace.Value))
	}
	return grace(jen.Qual(pkgDSL, "SessionWindows").Call(durationCode(w.Gap.Value)))
}

// durationCode writes d as Go source in its largest whole unit (5 *
// time.Minute), 0 as 0.
func durationCode(d time.Duration) jen.Code {
	if d == 0 {
		return jen.Lit(0)
	}
	return durationExpr(d)
}

// windowOptions are the dsl.WindowOptions of windowed aggregation o.
func windowOptions(o *OpNode) jen.Code {
	opts := jen.Dict{jen.Id("Store"): storeOptions(o.Rows)}
	if o.Emit.Value == schema.EmitFinal {
		opts[jen.Id("Emit")] = jen.Qual(pkgDSL, "EmitFinal")
	}
	if o.IdleClose.Set() {
		opts[jen.Id("IdleClose")] = durationCode(o.IdleClose.Value)
	}
	return jen.Qual(pkgDSL, "WindowOptions").Values(opts)
}

// windowedRows says what a windowed aggregation keeps: what per window or
// per session, so that a store of a plain aggregation, or of time windows
// turned sessions, reads as other rows.
func windowedRows(what string) func(*schema.Operator) string {
	return func(o *schema.Operator) string {
		if isSession(o.Window) {
			return what + " per session"
		}
		return what + " per window"
	}
}

// windowedAgainst: the windows already in a windowed aggregation's store
// were cut by its old windows; other windows (kind, size, advance, gap)
// would mix both in one result, and another grace closes them at other
// times than results already emitted said (and changes the store's
// retention). Each change is reported where the new spec writes it.
func windowedAgainst(c *againstCtx, old, new *schema.Operator) {
	if new == nil || new.Window == nil || old.Window == nil || new.Op.Value != old.Op.Value || new.Store.Value != old.Store.Value ||
		isSession(new.Window) != isSession(old.Window) {
		return // the store rule reports a store gone or of other rows (sessions for windows)
	}
	ow, nw := old.Window, new.Window
	name := new.Name.Value
	if emitOf(old) != emitOf(new) {
		c.Safe(posOr(new.Emit.Pos, new.Name.Pos), "%q emits %s, was %s: the windows in its store stay; from now on %s", name, emitOf(new), emitOf(old),
			map[bool]string{true: "each window once it closes (the first closes emit what is in the store, as it closes)", false: "every update as it happens"}[emitOf(new) == schema.EmitFinal])
	}
	if ow.Kind.Value != nw.Kind.Value {
		c.Breaking(nw.Kind.Pos, "the windows of %q are %s windows, were %s: the windows in store %q were cut by the old ones and would be mixed with the new (use a new store, and a new name for the operator)", name, nw.Kind.Value, ow.Kind.Value, new.Store.Value)
		return
	}
	changed := func(what string, o, n schema.Dur) {
		if o.Value != n.Value {
			c.Breaking(posOr(n.Pos, nw.Kind.Pos), "the %s of the windows of %q changed from %s to %s: the windows in store %q were made with the old %s, and results mixing both are wrong (use a new store)", what, name, durationText(o.Value), durationText(n.Value), new.Store.Value, what)
		}
	}
	switch nw.Kind.Value {
	case schema.WindowSliding:
		changed("time difference", ow.Size, nw.Size)
	case schema.WindowSession:
		changed("gap", ow.Gap, nw.Gap)
	default:
		changed("size", ow.Size, nw.Size)
		changed("advance", ow.Advance, nw.Advance)
	}
	if ow.Grace.Value != nw.Grace.Value {
		c.Breaking(posOr(nw.Grace.Pos, nw.Pos), "the grace of the windows of %q changed from %s to %s: windows already closed (or emitted as final) under the old grace are not reopened, later ones close at the new time, and store %q keeps windows for another retention", name, durationText(ow.Grace.Value), durationText(nw.Grace.Value), new.Store.Value)
	}
}

// windowsAbove finds the windows of the windowed keys node n outputs: those
// of the windowed aggregation (or windowed topic) above it, through the
// operators and processors that pass its keys on; nil if none.
func windowsAbove(n Node) *schema.Window {
	seen := map[Node]bool{}
	var walk func(n Node) *schema.Window
	walk = func(n Node) *schema.Window {
		if n.Topic != nil {
			return n.Topic.Windows // a windowed topic read says its windows
		}
		if seen[n] {
			return nil
		}
		seen[n] = true
		var parents []Node
		if n.Proc != nil {
			parents = n.Proc.Parents
		} else {
			if n.Op.Windows != nil {
				return n.Op.Windows
			}
			parents = n.Op.Parents
		}
		for _, p := range parents {
			if w := walk(p); w != nil {
				return w
			}
		}
		return nil
	}
	return walk(n)
}

// windowedKeySerde wraps ks, the serde of a windowed key's K, as the keys
// of windows w are encoded: Kafka Streams' time-windowed key (the end from
// the windows' size; a sliding window's is its time difference) or
// session-windowed key.
func windowedKeySerde(ks jen.Code, w *schema.Window) jen.Code {
	if isSession(w) {
		return jen.Qual(pkgSerde, "SessionWindowed").Call(ks)
	}
	return jen.Qual(pkgSerde, "TimeWindowed").Call(ks, durationCode(w.Size.Value))
}

// emitOf is o's emit:, updates unless final.
func emitOf(o *schema.Operator) string {
	if o.Emit.Value == schema.EmitFinal {
		return schema.EmitFinal
	}
	return schema.EmitUpdates
}
