package gen

import (
	"fmt"

	"github.com/dave/jennifer/jen"
)

// map, mapValues and selectKey turn each record into one other: a new key
// and value, a new value, a new key.
func init() {
	register(&opKind{
		Name:        "map",
		Keys:        keys("from", "to", "key!", "value!"),
		KeyChanging: true,
		Type: func(r *resolver, o *OpNode, in Node) {
			if r.streamOnly(o, in) {
				o.Out, o.HasOut = KV{r.typ(o.Key), r.typ(o.Value)}, true
			}
		},
		Funcs: func(o *OpNode) []opFunc {
			return []opFunc{{doc: fmt.Sprintf("is the mapper of map %q: the new key and value of a record.", o.Name.Value), params: o.keyValue(),
				results: []fnParam{{"newKey", plainT(o.Out.Key)}, {"newValue", plainT(o.Out.Value)}}}}
		},
		Emit: func(e *emitter, o *OpNode) []jen.Code { return e.op(o).call("Map", e.op(o).method(0)) },
	})
	register(&opKind{
		Name: "mapValues",
		Keys: keys("from", "to", "value!"),
		Type: func(r *resolver, o *OpNode, in Node) {
			if r.streamOnly(o, in) {
				o.Out, o.HasOut = KV{o.In.Key, r.typ(o.Value)}, true
			}
		},
		Funcs: func(o *OpNode) []opFunc {
			return []opFunc{{doc: fmt.Sprintf("is the mapper of mapValues %q: the new value of a record (its key stays).", o.Name.Value), params: o.keyValue(),
				results: []fnParam{{"newValue", plainT(o.Out.Value)}}}}
		},
		Emit: func(e *emitter, o *OpNode) []jen.Code { return e.op(o).call("MapValues", e.op(o).method(0)) },
	})
	register(&opKind{
		Name:        "selectKey",
		Keys:        keys("from", "to", "key!"),
		KeyChanging: true,
		Type: func(r *resolver, o *OpNode, in Node) {
			if r.streamOnly(o, in) {
				o.Out, o.HasOut = KV{r.typ(o.Key), o.In.Value}, true
			}
		},
		Funcs: func(o *OpNode) []opFunc {
			return []opFunc{{doc: fmt.Sprintf("is the key selector of selectKey %q: the new key of a record.", o.Name.Value), params: o.keyValue(),
				results: []fnParam{{"newKey", plainT(o.Out.Key)}}}}
		},
		Emit: func(e *emitter, o *OpNode) []jen.Code { return e.op(o).call("SelectKey", e.op(o).method(0)) },
	})
}
