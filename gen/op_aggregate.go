package gen

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/kgen-dev/kgen/schema"
)

// count, reduce and aggregate fold a grouping into a table kept in store:.
// After a table's groupBy they also take rows out (Kafka Streams' adder and
// subtractor).
func init() {
	register(&opKind{
		Name:        "count",
		Keys:        keys("from", "store!"),
		Hint:        tableHint,
		Aggregation: true,
		Type:        aggregation(func(r *resolver, _ *OpNode, _ TypeRef) TypeRef { return r.builtin("int64") }),
		Emit: func(e *emitter, o *OpNode) []jen.Code {
			c, st := e.op(o), o.Rows
			return []jen.Code{c.dsl(tablePrefix(o) + "Count").Types(groupedTypes(o)...).Call(c.args(c.store(st), jen.Id("s").Dot(st.Go.KeySerde), storeOptions(st))...)}
		},
		Rows: func(*schema.Operator) string { return "counts" },
	})
	register(&opKind{
		Name:        "reduce",
		Keys:        keys("from", "store!"),
		Hint:        tableHint,
		Aggregation: true,
		Type:        aggregation(func(_ *resolver, _ *OpNode, in TypeRef) TypeRef { return in }),
		Funcs: func(o *OpNode) []opFunc {
			v := o.groupedValue()
			aggV := []fnParam{{"agg", plainT(v)}, {"value", plainT(v)}}
			res := []fnParam{{"newAgg", plainT(v)}}
			name := o.Name.Value
			if o.InTable {
				return []opFunc{
					{suffix: "Add", doc: fmt.Sprintf("is the adder of reduce %q: the aggregate with a new row's value added.", name), params: aggV, results: res},
					{suffix: "Subtract", doc: fmt.Sprintf("is the subtractor of reduce %q: the aggregate with an old row's value taken out.", name), params: aggV, results: res},
				}
			}
			return []opFunc{{suffix: "Reduce", doc: fmt.Sprintf("is the reducer of reduce %q: the aggregate with one more value.", name), params: aggV, results: res}}
		},
		Emit: func(e *emitter, o *OpNode) []jen.Code {
			c, st := e.op(o), o.Rows
			fns := []jen.Code{c.method(0)}
			if o.InTable {
				fns = append(fns, c.method(1))
			}
			args := append([]jen.Code{c.store(st), jen.Id("s").Dot(st.Go.KeySerde), jen.Id("s").Dot(st.Go.ValueSerde), storeOptions(st)}, fns...)
			return []jen.Code{c.dsl(tablePrefix(o) + "Reduce").Types(groupedTypes(o)...).Call(c.args(args...)...)}
		},
		Rows: func(*schema.Operator) string { return "reductions of its input" },
	})
	register(&opKind{
		Name:        "aggregate",
		Keys:        keys("from", "store!", "value!"),
		Hint:        tableHint,
		Aggregation: true,
		Type:        aggregation(func(r *resolver, o *OpNode, _ TypeRef) TypeRef { return r.typ(o.Value) }),
		Funcs: func(o *OpNode) []opFunc {
			va := o.Out.Value.plain()
			params := append(o.keyValue(), fnParam{"agg", plainT(va)})
			res := []fnParam{{"newAgg", plainT(va)}}
			name := o.Name.Value
			init := opFunc{suffix: "Init", doc: fmt.Sprintf("is the initializer of aggregate %q: the aggregate of a key before its first record.", name), results: []fnParam{{"agg", plainT(va)}}}
			if o.InTable {
				return []opFunc{init,
					{suffix: "Add", doc: fmt.Sprintf("is the adder of aggregate %q: the aggregate with a new row added.", name), params: params, results: res},
					{suffix: "Subtract", doc: fmt.Sprintf("is the subtractor of aggregate %q: the aggregate with an old row taken out.", name), params: params, results: res},
				}
			}
			return []opFunc{init, {suffix: "Aggregate", doc: fmt.Sprintf("is the aggregator of aggregate %q: the aggregate with one more record.", name), params: params, results: res}}
		},
		Emit: func(e *emitter, o *OpNode) []jen.Code {
			c, st := e.op(o), o.Rows
			fns := []jen.Code{c.method(0), c.method(1)}
			if o.InTable {
				fns = append(fns, c.method(2))
			}
			args := append([]jen.Code{c.store(st), jen.Id("s").Dot(st.Go.KeySerde), jen.Id("s").Dot(st.Go.ValueSerde), storeOptions(st)}, fns...)
			return []jen.Code{c.dsl(tablePrefix(o) + "Aggregate").Types(append(groupedTypes(o), typeOf(o.Out.Value.plain()))...).Call(c.args(args...)...)}
		},
		Rows: func(o *schema.Operator) string { return "aggregates of type " + o.Value.Value },
	})
}

// tableHint: an operator making a table writes no topic itself; emit: and
// idle-close: are for windowed aggregations.
func tableHint(key string, op *schema.Operator) string {
	switch key {
	case "to":
		return fmt.Sprintf(": %s makes a table; write its updates to a topic with an operator {op: toStream, from: [%s], to: [TOPIC]}", op.Op.Value, op.Name.Value)
	case "emit", "idle-close":
		if windowedKinds[op.Op.Value] != nil {
			return fmt.Sprintf(" without a window: %s is for windowed aggregations (add window: {tumbling: SIZE, grace: DURATION} or another kind)", key)
		}
	}
	return ""
}

// aggregation is the typing rule of an aggregation: it reads a grouping and
// outputs a table of what agg says it keeps, given the grouped values' type.
func aggregation(agg func(r *resolver, o *OpNode, in TypeRef) TypeRef) func(r *resolver, o *OpNode, in Node) {
	return func(r *resolver, o *OpNode, in Node) {
		g := in.Op
		if g == nil || !g.kind.Grouping {
			r.errs.add(r.opFromPos(o, 0), "%s reads %q, which is not a grouping: aggregate a grouped stream ({op: groupByKey, from: [%s]} or groupBy)", o.what(), in.Name(), in.Name())
			return
		}
		o.Grouping, o.InTable = g, g.Out.Value.is(ChangeOf)
		va := agg(r, o, g.Out.Value.plain())
		o.Out, o.HasOut, o.Table = KV{g.Out.Key, va.wrapped(ChangeOf)}, true, true
		r.opStoreTypes(o, KV{g.Out.Key, va}, "", "")
	}
}

// groupedValue is the type of the values an aggregation folds.
func (o *OpNode) groupedValue() TypeRef {
	if o.Grouping == nil {
		return TypeRef{}
	}
	return o.Grouping.Out.Value.plain()
}

// groupedTypes are the type arguments [K, V] of what an aggregation reads.
func groupedTypes(o *OpNode) []jen.Code {
	return []jen.Code{typeOf(o.Grouping.Out.Key), typeOf(o.groupedValue())}
}

// tablePrefix names the dsl function of an aggregation of table rows.
func tablePrefix(o *OpNode) string {
	if o.InTable {
		return "Table"
	}
	return ""
}
