package gen

import (
	"fmt"

	"github.com/dave/jennifer/jen"
)

// flatMap and flatMapValues turn each record into none, one or more.
func init() {
	register(&opKind{
		Name:        "flatMap",
		Keys:        keys("from", "to", "key!", "value!"),
		KeyChanging: true,
		Type: func(r *resolver, o *OpNode, in Node) {
			if r.streamOnly(o, in) {
				o.Out, o.HasOut = KV{r.typ(o.Key), r.typ(o.Value)}, true
			}
		},
		Funcs: func(o *OpNode) []opFunc {
			return []opFunc{{doc: fmt.Sprintf("is the mapper of flatMap %q: the records one record becomes (none, one or more).", o.Name.Value), params: o.keyValue(),
				results: []fnParam{{"out", fnType{kind: "kvs", ref: o.Out.Key, ref2: o.Out.Value}}}}}
		},
		Emit: func(e *emitter, o *OpNode) []jen.Code { return e.op(o).call("FlatMap", e.op(o).method(0)) },
	})
	register(&opKind{
		Name: "flatMapValues",
		Keys: keys("from", "to", "value!"),
		Type: func(r *resolver, o *OpNode, in Node) {
			if r.streamOnly(o, in) {
				o.Out, o.HasOut = KV{o.In.Key, r.typ(o.Value)}, true
			}
		},
		Funcs: func(o *OpNode) []opFunc {
			return []opFunc{{doc: fmt.Sprintf("is the mapper of flatMapValues %q: the values one record becomes, each with its key.", o.Name.Value), params: o.keyValue(),
				results: []fnParam{{"out", fnType{kind: "slice", ref: o.Out.Value}}}}}
		},
		Emit: func(e *emitter, o *OpNode) []jen.Code { return e.op(o).call("FlatMapValues", e.op(o).method(0)) },
	})
}
