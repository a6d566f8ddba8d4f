package gen

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/kgen-dev/kgen/schema"
)

// groupByKey and groupBy group records by key for an aggregation, through
// the repartition topic <app>-<name>-repartition where the key may have
// changed (always for groupBy), as Kafka Streams does.
func init() {
	register(&opKind{
		Name:     "groupByKey",
		Keys:     keys("from", "partitions"),
		Hint:     groupingHint,
		Grouping: true,
		Type: func(r *resolver, o *OpNode, in Node) {
			if !r.streamOnly(o, in) || !r.notWindowed(o, in) {
				return
			}
			// A nullable side is made plain by a null-dropping node first,
			// as Kafka Streams' aggregations drop null keys and values.
			o.Out, o.HasOut = KV{plainSide(o.In.Key), plainSide(o.In.Value)}, true
			o.Why = r.keyChangedAbove(o)
			o.Repartition = o.Why != ""
			groupingFormats(r, o)
		},
		Nodes: func(o *OpNode) []runtimeNode {
			var ns []runtimeNode
			if dropsNulls(o) {
				ns = append(ns, runtimeNode{Suffix: nonNullSuffix, Role: "null-dropping node"})
			}
			if !o.Repartition {
				if ns == nil {
					return nil
				}
				return append(ns, runtimeNode{Role: "node"})
			}
			return append(ns, runtimeNode{Suffix: "-repartition-sink", Role: "repartition sink node"}, runtimeNode{Role: "node", Source: true})
		},
		Internal: groupingTopic,
		Emit: func(e *emitter, o *OpNode) []jen.Code {
			c := e.op(o)
			code := c.dropNulls()
			if !o.Repartition {
				// A node of its own, so that what feeds the grouping names it.
				return append(code, jen.Comment("groupByKey "+o.Name.Value+": the key is unchanged since the input was partitioned by it."),
					c.dsl("Merge").Types(kvTypes(o.Out)...).Call(c.args()...))
			}
			rt := o.internal("repartition")
			return append(code, jen.Commentf("groupByKey %s reads through %s: %s.", o.Name.Value, rt.Name, o.Why),
				c.repartition(rt, jen.Id("s").Dot(rt.ValueSerde), c.parents...))
		},
		Against: groupingAgainst,
	})
	register(&opKind{
		Name:     "groupBy",
		Keys:     keys("from", "key!", "value", "partitions"),
		Hint:     groupingHint,
		Grouping: true,
		Type: func(r *resolver, o *OpNode, in Node) {
			if o.InTable {
				if o.Value.Value == "" {
					r.errs.add(o.Name.Pos, "%s groups table %q: say the value type its function outputs too (value: TYPE), as KTable.groupBy maps each row to a new key and value", o.what(), in.Name())
					return
				}
				o.Out, o.HasOut = KV{r.typ(o.Key), r.typ(o.Value).wrapped(ChangeOf)}, true
			} else {
				if !r.nonNull(o, in, false, true) {
					return
				}
				if o.Value.Value != "" {
					r.errs.add(o.Keys["value"], "%s groups a stream by a new key and keeps the values: it takes no value (to change values too, put a map before it)", o.what())
				}
				o.Out, o.HasOut = KV{r.typ(o.Key), o.In.Value}, true
			}
			o.Repartition, o.Why = true, "groupBy"
			groupingFormats(r, o)
		},
		Nodes: func(o *OpNode) []runtimeNode {
			return []runtimeNode{{Suffix: "-select", Role: "key-selecting node"}, {Suffix: "-repartition-sink", Role: "repartition sink node"}, {Role: "node", Source: true}}
		},
		Internal: groupingTopic,
		Funcs: func(o *OpNode) []opFunc {
			if o.InTable {
				return []opFunc{{doc: fmt.Sprintf("is the selector of groupBy %q: the key a table row is grouped by, and the value aggregated.", o.Name.Value), params: o.keyValue(),
					results: []fnParam{{"newKey", plainT(o.Out.Key)}, {"newValue", plainT(o.Out.Value.plain())}}}}
			}
			return []opFunc{{doc: fmt.Sprintf("is the key selector of groupBy %q: the key a record is grouped by.", o.Name.Value), params: o.keyValue(),
				results: []fnParam{{"newKey", plainT(o.Out.Key)}}}}
		},
		Emit: func(e *emitter, o *OpNode) []jen.Code {
			c := e.op(o)
			sel := jen.Lit(o.Name.Value + "-select")
			rt := o.internal("repartition")
			if o.InTable {
				return []jen.Code{jen.Commentf("groupBy %s re-keys table rows and reads them through %s.", o.Name.Value, rt.Name),
					c.dsl("TableGroupBy").Call(append([]jen.Code{jen.Id("t"), sel, jen.Id("s").Dot(rt.KeySerde), c.method(0)}, c.parents...)...),
					c.repartition(rt, c.dsl("Changes").Call(jen.Id("s").Dot(rt.ValueSerde)), sel)}
			}
			return []jen.Code{jen.Commentf("groupBy %s re-keys records and reads them through %s.", o.Name.Value, rt.Name),
				c.dsl("SelectKey").Call(append([]jen.Code{jen.Id("t"), sel, c.method(0)}, c.parents...)...),
				c.repartition(rt, jen.Id("s").Dot(rt.ValueSerde), sel)}
		},
		Against: groupingAgainst,
	})
}

func groupingHint(key string, _ *schema.Operator) string {
	if key == "to" {
		return ": a grouping feeds an aggregation (count, reduce or aggregate), not a topic"
	}
	return ""
}

// groupingFormats settles the formats of a grouping's repartition topic.
func groupingFormats(r *resolver, o *OpNode) {
	o.KeyFormat = r.format(schema.Str{}, schema.Str{}, o.Out.Key, true)
	o.ValueFormat = r.format(schema.Str{}, schema.Str{}, o.Out.Value.plain(), false)
}

// groupingTopic is the repartition topic of a grouping that repartitions.
func groupingTopic(o *OpNode) []internalRole {
	if !o.Repartition {
		return nil
	}
	return []internalRole{{Role: "repartition", Topic: true, What: "repartition topic",
		KV: KV{o.Out.Key, o.Out.Value.plain()}, KeyFormat: o.KeyFormat, ValueFormat: o.ValueFormat}}
}

// groupingAgainst: a grouping renamed or removed leaves its repartition
// topic behind, with the records not yet read from it.
func groupingAgainst(c *againstCtx, old, new *schema.Operator) {
	if new != nil && new.Op.Value == old.Op.Value {
		return
	}
	pos := c.AppPos
	if new != nil {
		pos = new.Op.Pos
	}
	c.Breaking(pos, "grouping %q is gone: records not yet read from its repartition topic %s-%s-repartition are lost (and a groupByKey that repartitions now reads another topic)", old.Name.Value, c.App, old.Name.Value)
}

// nonNullSuffix names the node that drops nulls in front of a grouping.
const nonNullSuffix = "-non-null"

// plainSide is side t as an aggregation takes it: a nullable (pointer)
// side becomes its plain type, its nulls dropped before.
func plainSide(t TypeRef) TypeRef {
	if t.is(PointerTo) {
		return t.unwrapped()
	}
	return t
}

// dropsNulls says grouping o reads a side that may be null, so a
// null-dropping node goes first.
func dropsNulls(o *OpNode) bool { return o.In.Key.is(PointerTo) || o.In.Value.is(PointerTo) }

// dropNulls emits, for a grouping that reads a nullable side, the
// dsl.DropNulls node that drops null keys and values (counted by reason,
// as Kafka Streams' aggregations drop them) and makes the sides plain; the
// grouping then reads from it. Nothing for a grouping of plain sides.
func (c *opEmit) dropNulls() []jen.Code {
	o := c.o
	if !dropsNulls(o) {
		return nil
	}
	side := func(t TypeRef) jen.Code {
		if t.is(PointerTo) {
			return jen.Qual(pkgDSL, "Deref").Types(typeOf(t.unwrapped()))
		}
		return jen.Qual(pkgDSL, "Present").Types(typeOf(t))
	}
	name := o.Name.Value + nonNullSuffix
	code := []jen.Code{jen.Commentf("%s drops the records of a null key or value, as Kafka Streams' aggregations do (counted by reason).", name),
		c.dsl("DropNulls").Call(append([]jen.Code{jen.Id("t"), jen.Lit(name), side(o.In.Key), side(o.In.Value)}, c.parents...)...)}
	c.parents = []jen.Code{jen.Lit(name)}
	return code
}
