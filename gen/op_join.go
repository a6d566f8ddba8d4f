package gen

import (
	"strings"

	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/kgen-dev/kgen/schema"
)

// join, leftJoin and outerJoin join two inputs of one key type, left first
// (Kafka Streams' KStream.join/leftJoin/outerJoin and KTable's). What the
// inputs are picks the join: two streams join in window: (a stream-stream
// join, each side kept in a window store), a stream and a table look the
// stream's records up in the table's store (a stream-table join), two
// tables output a table of the joined rows (a table-table join). The user
// writes the joiner, X(key K, left VL, right VR) V, with a pointer on a side
// the join may miss.
func init() {
	for _, name := range []string{"join", "leftJoin", "outerJoin"} {
		register(&opKind{
			Name:     name,
			Keys:     keys("from", "to", "value!", "window", "foreign-key", "grace"),
			Entry:    joinEntry,
			Inputs:   leftRight,
			Type:     joinType,
			Nodes:    withRekeyedNodes(joinNodes),
			Internal: withRekeyedTopics(joinStores),
			Funcs:    joinFuncs,
			Emit:     withRekeyedEmit(joinEmit),
			Against:  joinAgainst,
			// A re-keyed side is repartitioned (autorepartition.go): the
			// output is partitioned by its key.
			KeyedOutput: true,
		})
	}
}

// The three joins a join operator may be, from what its inputs are.
const (
	joinStreamStream = "stream-stream"
	joinStreamTable  = "stream-table"
	joinTableTable   = "table-table"
)

// joinShape says which join o is, from its inputs' types.
func joinShape(o *OpNode) string {
	switch {
	case o.ForeignKey:
		return joinForeignKey
	case globalOf(o) != nil:
		return joinStreamGlobal
	}
	l, r := o.Ins[0].Value.is(ChangeOf), o.Ins[1].Value.is(ChangeOf)
	switch {
	case l && r:
		return joinTableTable
	case r:
		return joinStreamTable
	case !l:
		return joinStreamStream
	}
	return "" // a table left of a stream
}

// joinType types a join: both inputs of one key type, the output value
// the declared value:, a table out of two tables, a stream otherwise.
func joinType(r *resolver, o *OpNode, _ Node) {
	if len(o.Ins) != 2 {
		return // reported by opType
	}
	if g := globalOf(o); g != nil {
		globalJoinType(r, o, g) // op_global.go
		return
	}
	if o.ForeignKey {
		fkJoinType(r, o) // op_fkjoin.go
		return
	}
	left, right := o.Ins[0], o.Ins[1]
	ln, rn := o.Parents[0], o.Parents[1]
	if !left.Key.Same(right.Key) && left.Value.is(ChangeOf) && right.Value.is(ChangeOf) {
		r.errs.add(r.opFromPos(o, 1), "%s: table %q is keyed by %s but table %q by %s: a join matches rows of one key type, or joins by a key each left row names (foreign-key: true)", o.what(), rn.Name(), right.Key.Name, ln.Name(), left.Key.Name)
		return
	}
	if !left.Key.Same(right.Key) {
		r.errs.add(r.opFromPos(o, 1), "%s: input %q is keyed by %s but input %q by %s: a join matches records of one key type (re-key one side first: {op: selectKey, key: %s})", o.what(), rn.Name(), right.Key.Name, ln.Name(), left.Key.Name, left.Key.Name)
		return
	}
	if left.Key.is(WindowedOf) {
		r.errs.add(r.opFromPos(o, 0), "%s reads %q, whose keys are windowed (%s): a join of windowed keys is not supported yet", o.what(), ln.Name(), left.Key.Name)
		return
	}
	shape := joinShape(o)
	w := o.Window
	switch shape {
	case "":
		r.errs.add(r.opFromPos(o, 0), "%s reads table %q left of stream %q: a stream-table join reads the stream left (from: [%s, %s])", o.what(), ln.Name(), rn.Name(), rn.Name(), ln.Name())
		return
	case joinStreamStream:
		if w == nil {
			r.errs.add(o.Name.Pos, "%s joins streams %q and %q: a stream-stream join needs its window (window: {within: DURATION, grace: DURATION}, or before: and after:)", o.what(), ln.Name(), rn.Name())
			return
		}
		if w.Kind.Value != "" && w.Kind.Value != schema.WindowJoin {
			r.errs.add(w.Kind.Pos, "%s: a stream-stream join's window is {within: D} or {before: B, after: A}, with grace: G; %s is an aggregation's window", o.what(), w.Kind.Value)
			return
		}
	default:
		if w != nil {
			r.errs.add(o.Keys["window"], "%s is a %s join: it takes no window (a table has one row per key at a time; only two streams join in a window)", o.what(), shape)
			return
		}
	}
	if pos, ok := o.Keys["grace"]; ok {
		// grace: is Kafka Streams' Joined.withGracePeriod, which only a
		// stream-table join with a versioned table takes, of at most its
		// history (Kafka Streams refuses the others at start).
		if shape != joinStreamTable {
			r.errs.add(pos, "%s is a %s join: grace: is a stream-table join's (its records wait for a versioned table's late updates); a stream-stream join's grace is in its window: (window: {within: D, grace: G})", o.what(), shape)
			return
		}
		table := o.Parents[1].Op
		if table == nil || table.Versioned == nil {
			r.errs.add(pos, "%s: grace: makes stream records wait for the late updates of a versioned table, and table %q is not versioned (Kafka Streams: a grace period needs a versioned table; add versioned: {history: D} to it)", o.what(), o.Parents[1].Name())
			return
		}
		if h := table.Versioned.History.Value; o.Grace.Value > h {
			r.errs.add(posOr(o.Grace.Pos, pos), "%s: grace %s is longer than versioned table %q's history %s: a record waiting that long would look up versions already dropped (Kafka Streams refuses it too)", o.what(), schema.DurationText(o.Grace.Value), table.Name.Value, schema.DurationText(h))
			return
		}
	}
	if shape == joinStreamTable && o.kind.Name == "outerJoin" {
		r.errs.add(o.Op.Pos, "%s: a stream-table join is join or leftJoin: a table update joins nothing, so there is no outer stream-table join (as in Kafka Streams)", o.what())
		return
	}
	// A table side is read through its store: it must have one.
	for i, p := range o.Parents {
		if o.Ins[i].Value.is(ChangeOf) && (p.Op == nil || p.Op.Rows == nil) {
			r.errs.add(r.opFromPos(o, i), "%s joins table %q, which keeps no store of its rows: join a table or an aggregation", o.what(), p.Name())
			return
		}
		if !r.versionedJoinOK(o, i) {
			return
		}
	}
	// Stream sides: no null values yet, and partitioned by their key.
	for i, p := range o.Parents {
		in := o.Ins[i]
		if in.Value.is(ChangeOf) {
			continue
		}
		if in.Key.is(PointerTo) || in.Value.is(PointerTo) {
			r.errs.add(r.opFromPos(o, i), "%s reads %q, whose keys or values may be null (%s): a join takes no nullable side yet; drop the nulls first ({op: filter}, then a mapValues or selectKey to the plain type)", o.what(), p.Name(), in)
			return
		}
		if why := r.keyChangedAbove(&OpNode{Parents: []Node{p}}); why != "" {
			r.rekeyed(o, i, why) // read through a repartition topic
		}
	}
	vr := r.typ(o.Value)
	if shape == joinTableTable {
		o.Out, o.HasOut, o.Table = KV{left.Key, vr.wrapped(ChangeOf)}, true, true
		return
	}
	o.Out, o.HasOut = KV{left.Key, vr}, true
	if shape == joinStreamStream || shape == joinStreamTable && o.Grace.Value > 0 {
		o.KeyFormat = r.format(schema.Str{}, schema.Str{}, left.Key, true)
		o.ValueFormat = r.format(schema.Str{}, schema.Str{}, left.Value, false)
		o.RightFormat = r.format(schema.Str{}, schema.Str{}, right.Value, false)
	}
}

// joinNodes: a stream-stream and a table-table join add a node per side,
// x-left and x-right, before the join's own.
func joinNodes(o *OpNode) []runtimeNode {
	switch {
	case !o.HasOut:
		return nil
	case o.ForeignKey:
		return fkJoinNodes(o)
	}
	if s := joinShape(o); s == joinStreamTable || s == joinStreamGlobal {
		return nil
	}
	return []runtimeNode{{Suffix: "-left", Role: "left side node"}, {Suffix: "-right", Role: "right side node"}, {Role: "node"}}
}

// joinStores are a stream-stream join's window stores, x-left-store and
// x-right-store, as the runtime names them. (A left or outer join's
// x-outer-store of unmatched records is the runtime's own, of bytes.)
func joinStores(o *OpNode) []internalRole {
	if o.HasOut && o.ForeignKey {
		return fkJoinInternal(o)
	}
	if o.HasOut && joinShape(o) == joinStreamTable && o.Grace.Value > 0 {
		return []internalRole{{Role: "Buffer", What: "grace buffer of stream records", KV: KV{o.Ins[0].Key, o.Ins[0].Value}, KeyFormat: o.KeyFormat, ValueFormat: o.ValueFormat}}
	}
	if !o.HasOut || joinShape(o) != joinStreamStream {
		return nil
	}
	return []internalRole{
		{Role: "left-store", What: "left side's window store", KV: KV{o.Ins[0].Key, o.Ins[0].Value}, KeyFormat: o.KeyFormat, ValueFormat: o.ValueFormat},
		{Role: "right-store", What: "right side's window store", KV: KV{o.Ins[1].Key, o.Ins[1].Value}, KeyFormat: o.KeyFormat, ValueFormat: o.RightFormat},
	}
}

// joinSides says which sides of o the joiner may get nil for.
func joinSides(o *OpNode) (leftMay, rightMay bool) {
	switch o.kind.Name {
	case "leftJoin":
		return false, true
	case "outerJoin":
		return true, true
	}
	return false, false
}

// joinFuncs is the joiner: X(key K, left VL, right VR) V.
func joinFuncs(o *OpNode) []opFunc {
	switch {
	case !o.HasOut:
		return nil
	case o.ForeignKey:
		return fkJoinFuncs(o)
	case globalOf(o) != nil:
		return globalJoinFuncs(o)
	}
	side := func(kv KV, may bool) fnType {
		v := kv.Value
		if v.is(ChangeOf) {
			v = v.unwrapped()
		}
		if may {
			v = v.wrapped(PointerTo)
		}
		return plainT(v)
	}
	lm, rm := joinSides(o)
	vr := o.Out.Value
	if o.Table {
		vr = vr.unwrapped()
	}
	doc := fmt.Sprintf("is the joiner of %s %q (%s): the joined value of a key's left and right values", o.kind.Name, o.Name.Value, joinShape(o))
	switch {
	case lm:
		doc += " (either nil where that side has none)."
	case rm:
		doc += " (right nil where there is none)."
	default:
		doc += "."
	}
	return []opFunc{{doc: doc,
		params:  []fnParam{{"key", plainT(o.Ins[0].Key)}, {"left", side(o.Ins[0], lm)}, {"right", side(o.Ins[1], rm)}},
		results: []fnParam{{"joined", plainT(vr)}}}}
}

// joinEmit adds the join with the dsl function of its shape and kind.
func joinEmit(e *emitter, o *OpNode) []jen.Code {
	c := e.op(o)
	k := typeOf(o.Ins[0].Key)
	rowOf := func(i int) *jen.Statement { return typeOf(o.Ins[i].Value.unwrapped()) }
	switch joinShape(o) {
	case joinForeignKey:
		return fkJoinEmit(c, o)
	case joinStreamGlobal:
		return globalJoinEmit(c, o)
	case joinStreamStream:
		fn := map[string]string{"join": "JoinStreams", "leftJoin": "LeftJoinStreams", "outerJoin": "OuterJoinStreams"}[o.kind.Name]
		w := o.Window
		win := c.dsl("JoinWindowsOf").Call(durationCode(w.Before.Value))
		if w.After.Value != w.Before.Value {
			win = win.Dot("After").Call(durationCode(w.After.Value))
		}
		if w.Grace.Value > 0 {
			win = win.Dot("Grace").Call(durationCode(w.Grace.Value))
		}
		ls, rs := o.internal("left-store"), o.internal("right-store")
		opts := c.dsl("StreamJoinOptions").Values(jen.Dict{jen.Id("Store"): jen.Qual(pkgStream, "StoreOptions").Values(jen.Dict{jen.Id("Changelog"): jen.True()})})
		return []jen.Code{jen.Commentf("%s joins %s with %s in %s, keeping each side in %s and %s.", o.Name.Value, o.Parents[0].Name(), o.Parents[1].Name(), w, ls.Name, rs.Name),
			c.dsl(fn).Types(k, typeOf(o.Ins[0].Value), typeOf(o.Ins[1].Value), typeOf(o.Out.Value)).Call(
				c.args(win, jen.Id("s").Dot(ls.KeySerde), jen.Id("s").Dot(ls.ValueSerde), jen.Id("s").Dot(rs.ValueSerde), opts, c.method(0))...)}
	case joinStreamTable:
		fn := "StreamTableJoinWithKey"
		if o.kind.Name == "leftJoin" {
			fn = "StreamTableLeftJoinWithKey"
		}
		table := o.Parents[1].Op
		if o.Grace.Value > 0 {
			buf := o.internal("Buffer")
			opts := c.dsl("StreamTableJoinOptions").Values(jen.Dict{jen.Id("Grace"): durationCode(o.Grace.Value), jen.Id("Store"): jen.Qual(pkgStream, "StoreOptions").Values(jen.Dict{jen.Id("Changelog"): jen.True()})})
			return []jen.Code{jen.Commentf("%s looks each record of %s up in versioned table %q's store %s as of its time, after waiting %s in %s for late table updates.", o.Name.Value, o.Parents[0].Name(), table.Name.Value, table.Rows.Name.Value, schema.DurationText(o.Grace.Value), buf.Name),
				c.dsl(strings.TrimSuffix(fn, "Key")).Types(k, typeOf(o.Ins[0].Value), rowOf(1), typeOf(o.Out.Value)).Call(
					jen.Id("t"), jen.Lit(o.Name.Value), c.store(table.Rows), jen.Id("s").Dot(buf.KeySerde), jen.Id("s").Dot(buf.ValueSerde), opts, c.method(0), c.parents[0])}
		}
		return []jen.Code{jen.Commentf("%s looks each record of %s up in table %q's store %s.", o.Name.Value, o.Parents[0].Name(), table.Name.Value, table.Rows.Name.Value),
			c.dsl(fn).Types(k, typeOf(o.Ins[0].Value), rowOf(1), typeOf(o.Out.Value)).Call(
				jen.Id("t"), jen.Lit(o.Name.Value), c.store(table.Rows), c.method(0), c.parents[0])}
	}
	fn := map[string]string{"join": "TableJoinWithKey", "leftJoin": "TableLeftJoinWithKey", "outerJoin": "TableOuterJoinWithKey"}[o.kind.Name]
	ref := func(i int) jen.Code {
		p := o.Parents[i].Op
		return c.dsl("TableRef").Values(jen.Dict{jen.Id("Node"): c.parents[i], jen.Id("Store"): c.store(p.Rows)})
	}
	return []jen.Code{jen.Commentf("%s joins the rows of tables %s and %s, each update looking up the other's store.", o.Name.Value, o.Parents[0].Name(), o.Parents[1].Name()),
		c.dsl(fn).Types(k, rowOf(0), rowOf(1), typeOf(o.Out.Value.unwrapped())).Call(jen.Id("t"), jen.Lit(o.Name.Value), ref(0), ref(1), c.method(0))}
}

// joinAgainst: a stream-stream join's window stores hold the records of
// its windows. Another window, another kind of join or another name leaves
// them cut by the old windows, or behind.
func joinAgainst(c *againstCtx, old, new *schema.Operator) {
	name := old.Name.Value
	if old.ForeignKey {
		fkJoinAgainst(c, old, new) // op_fkjoin.go
		return
	}
	fkJoinAdded(c, old, new)
	if old.Window == nil {
		// A stream-table or table-table join reads its tables' stores and
		// keeps no state of its own, but for a grace period's buffer.
		if old.Grace.Value > 0 && (new == nil || new.Grace.Value == 0) {
			pos := c.AppPos
			if new != nil {
				pos = new.Pos
			}
			c.Breaking(pos, "join %q no longer waits %s (grace:): the stream records waiting in its store %s-Buffer are lost, never joined", name, schema.DurationText(old.Grace.Value), name)
			return
		}
		if new != nil && new.Op.Value != old.Op.Value {
			c.Safe(new.Op.Pos, "join %q is now %s, was %s: it keeps no state of its own (it reads its tables' stores)", name, new.Op.Value, old.Op.Value)
		}
		return
	}
	if new == nil {
		c.Breaking(c.AppPos, "join %q is gone (renamed or removed): the records of its windows in stores %s-left-store and %s-right-store are lost, and the new join starts with none", name, name, name)
		return
	}
	if new.Op.Value != old.Op.Value {
		c.Breaking(new.Op.Pos, "join %q is now %s, was %s: its stores of unmatched records differ (a left or outer join keeps %s-outer-store), and results already emitted would not be those of the new kind", name, new.Op.Value, old.Op.Value, name)
		return
	}
	ow, nw := old.Window, new.Window
	if nw == nil {
		return // reported by check
	}
	if ow.Before.Value != nw.Before.Value || ow.After.Value != nw.After.Value {
		c.Breaking(nw.Kind.Pos, "the window of join %q is %s, was %s: its window stores were sized and kept for the old window (use a new name for the join)", name, nw, ow)
		return
	}
	if ow.Grace.Value != nw.Grace.Value {
		c.Breaking(posOr(nw.Grace.Pos, nw.Pos), "the grace of join %q is %s, was %s: its window stores keep records for before plus after plus grace, set when they were made (use a new name for the join)", name, schema.DurationText(nw.Grace.Value), schema.DurationText(ow.Grace.Value))
	}
}

// joinEntry: a foreign-key join's sides enter different nodes.
func joinEntry(o *OpNode, i int) string {
	if o.ForeignKey {
		return fkJoinEntry(o, i)
	}
	return o.entryNode()[len(o.Name.Value):]
}
