package gen

import (
	"github.com/dave/jennifer/jen"

	"github.com/kgen-dev/kgen/schema"
)

// table reads a topic as a table kept in store:: a record upserts its key's
// row, a tombstone deletes it; it outputs each row's change.
func init() {
	register(&opKind{
		Name: "table",
		Keys: keys("topic!", "store!", "versioned"),
		Hint: func(key string, op *schema.Operator) string {
			switch key {
			case "to":
				return tableHint(key, op)
			case "from":
				return ": a table reads one topic: topic: NAME"
			}
			return ""
		},
		Closed: "its topic",
		Edges:  tableEdges,
		Type: func(r *resolver, o *OpNode, in Node) {
			t := o.Parents[0].Topic
			rows := tableRows(t)
			o.Out, o.HasOut, o.Table = KV{rows.Key, rows.Value.wrapped(ChangeOf)}, true, true
			r.opStoreTypes(o, rows, t.KeyFormat, t.ValueFormat)
			if o.Versioned != nil && o.Rows != nil {
				o.Rows.Flavor = "versioned"
			}
		},
		Nodes: func(o *OpNode) []runtimeNode {
			return []runtimeNode{{Suffix: "-source", Role: "source node", Source: true}, {Role: "node"}}
		},
		Emit: func(e *emitter, o *OpNode) []jen.Code {
			t, st := o.Parents[0].Topic, o.Rows
			if v := o.Versioned; v != nil {
				return []jen.Code{jen.Commentf("%s keeps the versions of each key of %s for %s in versioned store %s.", o.Name.Value, t.Name.Value, schema.DurationText(v.History.Value), st.Name.Value),
					jen.Qual(pkgDSL, "VersionedTable").Types(kvTypes(tableRows(t))...).Call(jen.Id("t"), jen.Lit(o.Name.Value), jen.Id(t.Go.Const), jen.Id("s").Dot(t.Go.KeySerde), jen.Id("s").Dot(t.Go.ValueSerde),
						jen.Id(st.Go.Const), durationCode(v.History.Value), storeOptions(st))}
			}
			return []jen.Code{jen.Qual(pkgDSL, "Table").Types(kvTypes(tableRows(t))...).Call(jen.Id("t"), jen.Lit(o.Name.Value), jen.Id(t.Go.Const), jen.Id("s").Dot(t.Go.KeySerde), jen.Id("s").Dot(t.Go.ValueSerde),
				jen.Id(st.Go.Const), storeOptions(st))}
		},
		Rows: func(o *schema.Operator) string {
			if o.Versioned != nil {
				return "the versioned rows of topic " + o.Topic.Value
			}
			return "the rows of topic " + o.Topic.Value
		},
		Against: tableAgainst,
	})
}

// tableAgainst: a versioned table's store keeps history for its retention,
// sized when it was made; another retention is breaking. (Becoming
// versioned or plain changes its rows: the store rule reports it.)
func tableAgainst(c *againstCtx, old, new *schema.Operator) {
	if new == nil || old.Versioned == nil || new.Versioned == nil {
		return
	}
	ov, nv := old.Versioned.History, new.Versioned.History
	if ov.Value != nv.Value {
		c.Breaking(posOr(nv.Pos, new.Versioned.Pos), "the history of versioned table %q is %s, was %s: its store's segments and changelog were made for the old retention (use a new store name)", old.Name.Value, schema.DurationText(nv.Value), schema.DurationText(ov.Value))
	}
}

// versionedJoinOK reports join o reading a versioned table as its i-th
// input, unless o is a stream-table join and the table its right side: the
// runtime's other joins read a plain store's latest row.
func (r *resolver) versionedJoinOK(o *OpNode, i int) bool {
	p := o.Parents[i].Op
	if p == nil || p.Rows == nil || p.Rows.Flavor != "versioned" {
		return true
	}
	if !o.ForeignKey && joinShape(o) == joinStreamTable && i == 1 {
		return true // the runtime's lookup reads it as of the record's time
	}
	r.errs.add(r.opFromPos(o, i), "%s joins versioned table %q: only a stream-table join reads a versioned table (the row as of each stream record's time); read it with toStream, or drop versioned:", o.what(), p.Name.Value)
	return false
}

// tableEdges links table o to the topic it reads.
func tableEdges(r *resolver, o *OpNode) {
	t, ok := r.topics[o.Topic.Value]
	if !ok {
		if o.Topic.Value != "" {
			r.errs.add(o.Topic.Pos, "%s reads topic %q, which is not a topic of the spec%s", o.what(), o.Topic.Value, schema.Suggest(o.Topic.Value, r.topicNames()))
		}
		return
	}
	if t.Repartition {
		r.errs.add(o.Topic.Pos, "%s reads topic %q, a repartition topic: a table reads a topic of the spec", o.what(), t.Name.Value)
	}
	if t.Table != nil {
		r.errs.add(o.Topic.Pos, "%s reads topic %q, which table %q reads already", o.what(), t.Name.Value, t.Table.Name.Value)
		return
	}
	if t.Timestamp.Value != "" {
		// dsl.Table adds its own source, without an extractor.
		r.errs.add(t.Timestamp.Pos, "topic %q: table %q reads it with the records' own timestamps: a timestamp field is not supported on a table's topic yet", t.Name.Value, o.Name.Value)
	}
	t.Table = o
	o.Parents = []Node{{Topic: t}}
}

// tableRows are the key and value types of the rows of a table reading topic
// t: a table reads a null value as a deletion, so a nullable value is a row's
// value type.
func tableRows(t *TopicNode) KV {
	kv := t.KV
	if kv.Key.is(PointerTo) {
		// Read with the plain key serde, the source drops a null key
		// (counted), as Kafka Streams' table source does.
		kv.Key = kv.Key.unwrapped()
	}
	if kv.Value.is(PointerTo) {
		kv.Value = kv.Value.unwrapped()
	}
	return kv
}
