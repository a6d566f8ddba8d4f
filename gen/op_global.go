package gen

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/kgen-dev/kgen/schema"
)

// globalTable reads every partition of a topic into store: on every
// instance (Kafka Streams' GlobalKTable): a stream joins it by a key it
// maps each record to, with no co-partitioning. It adds no node to the
// sub-topologies: its store is restored from its topic, with no changelog.
func init() {
	register(&opKind{
		Name:   "globalTable",
		Keys:   keys("topic!", "store!"),
		Global: true,
		Hint: func(key string, op *schema.Operator) string {
			switch key {
			case "from":
				return ": a global table reads one topic: topic: NAME"
			case "to":
				return ": a global table's rows are looked up by joins, not sent on: read the topic as a table (op: table) to stream its updates"
			case "versioned":
				return ": a global table keeps the latest row of each key"
			}
			return ""
		},
		Closed: "its topic",
		Edges:  globalEdges,
		Type:   globalType,
		Nodes:  func(*OpNode) []runtimeNode { return []runtimeNode{} },
		Emit:   globalEmit,
		Rows:   func(o *schema.Operator) string { return "the rows of topic " + o.Topic.Value + " (global)" },
	})
}

// globalEdges links global table o to its topic, as a table is linked.
func globalEdges(r *resolver, o *OpNode) {
	tableEdges(r, o)
}

// globalType types a global table's rows as a table's, and checks that
// only joins read it and that its store keeps no changelog.
func globalType(r *resolver, o *OpNode, _ Node) {
	if len(o.Parents) == 0 || o.Parents[0].Topic == nil {
		return
	}
	t := o.Parents[0].Topic
	rows := tableRows(t)
	o.Out, o.HasOut, o.Table = KV{rows.Key, rows.Value.wrapped(ChangeOf)}, true, true
	r.opStoreTypes(o, rows, t.KeyFormat, t.ValueFormat)
	if st := o.Rows; st != nil {
		st.Flavor = "global"
		switch {
		case st.Implied || st.ChangelogPos.Line == 0:
			st.Changelog = false // restored from its topic
		case st.Changelog:
			r.errs.add(st.ChangelogPos, "store %q is global table %q's: it is restored from its topic and keeps no changelog (changelog: false, or leave changelog: out)", st.Name.Value, o.Name.Value)
		}
	}
	for _, c := range o.Children {
		if c.Proc != nil {
			r.errs.add(o.Name.Pos, "%s feeds processor %q: a global table is read by joins (or by a processor through stream.GetGlobalTable in its Init, without from:)", o.what(), c.Proc.Name.Value)
		}
	}
}

// globalReaderOK reports operator o reading global table p as its i-th
// input unless o is a join reading it on the right: a global table is
// looked up, never streamed.
func (r *resolver) globalReaderOK(o *OpNode) bool {
	for i, p := range o.Parents {
		if p.Op == nil || !p.Op.kind.Global {
			continue
		}
		if o.kind.Inputs == leftRight && i == 1 && !o.ForeignKey {
			continue
		}
		l := "STREAM"
		if len(o.Parents) > 0 && i > 0 {
			l = o.Parents[0].Name()
		}
		r.errs.add(r.opFromPos(o, i), "%s reads global table %q: a global table is only looked up by a join or leftJoin of a stream, on the right (from: [%s, %s])", o.what(), p.Name(), l, p.Name())
		return false
	}
	return true
}

// globalVar is the variable NewTopology holds global table o's handle in.
func globalVar(o *OpNode) string { return "global" + o.Ident }

// globalEmit adds the global table, holding its handle for the joins.
func globalEmit(e *emitter, o *OpNode) []jen.Code {
	t, st := o.Parents[0].Topic, o.Rows
	v := globalVar(o)
	out := []jen.Code{
		jen.Commentf("%s holds every partition of %s in store %s, on every instance.", o.Name.Value, t.Name.Value, st.Name.Value),
		jen.Id(v).Op(":=").Qual(pkgDSL, "NewGlobalTable").Types(kvTypes(tableRows(t))...).Call(jen.Id("t"), jen.Id(st.Go.Const), jen.Id(t.Go.Const),
			jen.Id("s").Dot(t.Go.KeySerde), jen.Id("s").Dot(t.Go.ValueSerde), storeOptions(st)),
	}
	if len(o.Children) == 0 {
		out = append(out, jen.Id("_").Op("=").Id(v)) // no join reads it yet
	}
	return out
}

// The join of a stream with a global table (Kafka Streams'
// KStream#join(GlobalKTable, KeyValueMapper, ValueJoiner)).
const joinStreamGlobal = "stream-global"

// globalOf is the global table o joins on its right, nil if none.
func globalOf(o *OpNode) *OpNode {
	if len(o.Parents) == 2 && o.Parents[1].Op != nil && o.Parents[1].Op.kind.Global {
		return o.Parents[1].Op
	}
	return nil
}

// globalJoinType types a join of a stream with a global table: the stream's
// key and value are the output's key and the joiner's, the table's key is
// what the user's key mapper gives. Nothing needs co-partitioning or a
// repartition, and a nullable side is taken (the runtime drops a null
// value and a key mapped to none, as Kafka Streams does).
func globalJoinType(r *resolver, o *OpNode, g *OpNode) {
	left := o.Ins[0]
	ln := o.Parents[0]
	switch {
	case o.kind.Name == "outerJoin":
		r.errs.add(o.Op.Pos, "%s joins global table %q: a global table is joined by join or leftJoin (there is no outer join with a global table, as in Kafka Streams)", o.what(), g.Name.Value)
		return
	case o.Window != nil:
		r.errs.add(o.Keys["window"], "%s joins global table %q: it takes no window (each record looks up the table's current row)", o.what(), g.Name.Value)
		return
	case left.Value.is(ChangeOf):
		r.errs.add(r.opFromPos(o, 0), "%s joins table %q with global table %q: a global table is joined by a stream (toStream the table first: {op: toStream, from: [%s]})", o.what(), ln.Name(), g.Name.Value, ln.Name())
		return
	}
	o.Out, o.HasOut = KV{left.Key, r.typ(o.Value)}, true
}

// globalJoinFuncs are the joiner, X(key K, value V, row GV) VR (row *GV
// for a leftJoin), and the key mapper XKey(key K, value V) (GK, bool).
func globalJoinFuncs(o *OpNode) []opFunc {
	g := o.Ins[1]
	row := g.Value.unwrapped()
	doc := fmt.Sprintf("is the joiner of %s %q with global table %q: the joined value of a record and the table's row under the key %sKey gives", o.kind.Name, o.Name.Value, o.Parents[1].Name(), o.Ident)
	if o.kind.Name == "leftJoin" {
		row = row.wrapped(PointerTo)
		doc += " (nil where there is none)."
	} else {
		doc += "."
	}
	kv := o.Ins[0]
	return []opFunc{
		{doc: doc,
			params:  []fnParam{{"key", plainT(kv.Key)}, {"value", plainT(kv.Value)}, {"row", plainT(row)}},
			results: []fnParam{{"joined", plainT(o.Out.Value)}}},
		{suffix: "Key", doc: fmt.Sprintf("maps a record of %s %q to the key of its row in global table %q; ok false maps it to none (a null key: a join drops the record, a leftJoin joins it with nil).", o.kind.Name, o.Name.Value, o.Parents[1].Name()),
			params:  []fnParam{{"key", plainT(kv.Key)}, {"value", plainT(kv.Value)}},
			results: []fnParam{{"tableKey", plainT(g.Key)}, {"ok", fnType{kind: "bool"}}}},
	}
}

// globalJoinEmit adds the join: dsl.JoinGlobal or LeftJoinGlobal.
func globalJoinEmit(c opEmit, o *OpNode) []jen.Code {
	g := o.Parents[1].Op
	fn := "JoinGlobal"
	if o.kind.Name == "leftJoin" {
		fn = "LeftJoinGlobal"
	}
	kv, gkv := o.Ins[0], o.Ins[1]
	return []jen.Code{jen.Commentf("%s looks each record of %s up in global table %q under the key %s gives.", o.Name.Value, o.Parents[0].Name(), g.Name.Value, o.Go.Funcs[1]),
		c.dsl(fn).Types(typeOf(kv.Key), typeOf(kv.Value), typeOf(gkv.Key), typeOf(gkv.Value.unwrapped()), typeOf(o.Out.Value)).Call(
			jen.Id("t"), jen.Lit(o.Name.Value), jen.Id(globalVar(g)), c.method(1), c.method(0), c.parents[0])}
}
