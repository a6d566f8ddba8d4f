package gen

import "github.com/dave/jennifer/jen"

// toStream turns a table's changes into a stream of each row's new value, a
// pointer, nil for a deletion (a tombstone once written to a topic).
func init() {
	register(&opKind{
		Name:        "toStream",
		Keys:        keys("from", "to"),
		KeyedOutput: true,
		Type: func(r *resolver, o *OpNode, in Node) {
			if !o.InTable {
				r.errs.add(r.opFromPos(o, 0), "%s reads %q, which is not a table (%s): toStream turns a table's updates into a stream", o.what(), in.Name(), o.In)
				return
			}
			o.Out, o.HasOut = KV{o.In.Key, o.In.Value.unwrapped().wrapped(PointerTo)}, true
		},
		Emit: func(e *emitter, o *OpNode) []jen.Code {
			c := e.op(o)
			return []jen.Code{c.dsl("ToStream").Types(typeOf(o.In.Key), typeOf(o.In.Value.unwrapped())).Call(c.args()...)}
		},
	})
}
