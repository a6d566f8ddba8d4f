package gen

import "github.com/dave/jennifer/jen"

// merge passes on the records of several inputs of one type.
func init() {
	register(&opKind{
		Name:   "merge",
		Keys:   keys("from", "to"),
		Inputs: sameInputs,
		Type:   passOn,
		Emit: func(e *emitter, o *OpNode) []jen.Code {
			c := e.op(o)
			return []jen.Code{c.dsl("Merge").Types(kvTypes(o.In)...).Call(c.args()...)}
		},
	})
}
