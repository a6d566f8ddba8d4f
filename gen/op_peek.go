package gen

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/kgen-dev/kgen/schema"
)

// peek calls the user's function with each record and passes it on;
// foreach calls it and ends the path.
func init() {
	register(&opKind{
		Name: "peek",
		Keys: keys("from", "to"),
		Type: passOn,
		Funcs: func(o *OpNode) []opFunc {
			return []opFunc{{doc: fmt.Sprintf("is called with every record peek %q passes on.", o.Name.Value), params: o.keyValue()}}
		},
		Emit: func(e *emitter, o *OpNode) []jen.Code { return e.op(o).call("Peek", e.op(o).method(0)) },
	})
	register(&opKind{
		Name:     "foreach",
		Keys:     keys("from"),
		Terminal: true,
		Hint: func(key string, _ *schema.Operator) string {
			if key == "to" {
				return ": foreach is terminal; use peek to pass records on"
			}
			return ""
		},
		Type: func(r *resolver, o *OpNode, in Node) { r.streamOnly(o, in) },
		Funcs: func(o *OpNode) []opFunc {
			return []opFunc{{doc: fmt.Sprintf("is called with every record foreach %q reads.", o.Name.Value), params: o.keyValue()}}
		},
		Emit: func(e *emitter, o *OpNode) []jen.Code { return e.op(o).call("Foreach", e.op(o).method(0)) },
	})
}
