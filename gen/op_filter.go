package gen

import (
	"fmt"

	"github.com/dave/jennifer/jen"
)

// filter and filterNot keep or drop each record by the user's predicate.
func init() {
	register(&opKind{
		Name:  "filter",
		Keys:  keys("from", "to"),
		Type:  passOn,
		Funcs: predicate("is the predicate of filter %q: it keeps the records for which it returns true.", "keep"),
		Emit:  func(e *emitter, o *OpNode) []jen.Code { return e.op(o).call("Filter", e.op(o).method(0)) },
	})
	register(&opKind{
		Name:  "filterNot",
		Keys:  keys("from", "to"),
		Type:  passOn,
		Funcs: predicate("is the predicate of filterNot %q: it drops the records for which it returns true.", "drop"),
		Emit:  func(e *emitter, o *OpNode) []jen.Code { return e.op(o).call("FilterNot", e.op(o).method(0)) },
	})
}

// predicate is the one function of a kind that takes a key and a value and
// returns a bool named result; doc says what it is, of the operator %q.
func predicate(doc, result string) func(o *OpNode) []opFunc {
	return func(o *OpNode) []opFunc {
		return []opFunc{{doc: fmt.Sprintf(doc, o.Name.Value), params: o.keyValue(), results: []fnParam{{result, fnType{kind: "bool"}}}}}
	}
}
