package gen

import (
	"fmt"
	"slices"

	"github.com/dave/jennifer/jen"

	"github.com/kgen-dev/kgen/schema"
)

// branch sends each record to the first of its arms whose predicate holds,
// else to its default arm; each arm <branch>-<arm> is a node of its own.
func init() {
	register(&opKind{
		Name: "branch",
		Keys: keys("from", "branches!", "default"),
		Hint: func(key string, op *schema.Operator) string {
			if key == "to" {
				return fmt.Sprintf(": each arm is a node of its own, named %s-ARM; name it in the from of what reads it", op.Name.Value)
			}
			return ""
		},
		Arms: branchArms,
		Type: passOn,
		Emit: func(e *emitter, o *OpNode) []jen.Code {
			c := e.op(o)
			var defs []jen.Code
			def := ""
			for _, a := range o.Arms {
				if a.Default {
					def = a.ArmName
					continue
				}
				defs = append(defs, jen.Values(jen.Dict{jen.Id("Name"): jen.Lit(a.ArmName), jen.Id("Pred"): jen.Id("p").Dot(a.Go.Funcs[0])}))
			}
			branches := jen.Index().Qual(pkgDSL, "BranchDef").Types(kvTypes(o.In)...).Values(defs...)
			return c.call("Branch", branches, jen.Lit(def))
		},
	})
}

// armKind is the kind of a branch's arm: not an op of the spec, a node its
// branch adds, which the branch's emission adds to the topology.
var armKind = &opKind{
	Name:   "branch arm",
	Closed: "its branch",
	Type:   passOn,
	Funcs: func(o *OpNode) []opFunc {
		if o.Default {
			return nil
		}
		return []opFunc{{doc: fmt.Sprintf("is the predicate of arm %q of branch %q: a record goes to the first arm whose predicate returns true.", o.ArmName, o.Split.Name.Value),
			params: o.keyValue(), results: []fnParam{{"take", fnType{kind: "bool"}}}}}
	},
	Emit: func(*emitter, *OpNode) []jen.Code { return nil },
}

// branchArms adds the arms of branch o, the default last.
func branchArms(r *resolver, o *OpNode) {
	arms := slices.Clone(o.Branches)
	if o.Operator.Default.Value != "" {
		arms = append(arms, o.Operator.Default)
	}
	for i, a := range arms {
		name := schema.Str{Value: o.Name.Value + "-" + a.Value, Pos: a.Pos}
		arm := &OpNode{Operator: &schema.Operator{Name: name}, kind: armKind, Split: o, ArmName: a.Value, Default: i == len(o.Branches)}
		if slices.ContainsFunc(arms[:i], func(b schema.Str) bool { return b.Value == a.Value }) {
			r.errs.add(a.Pos, "branch %q: arm %q named twice", o.Name.Value, a.Value)
			continue
		}
		if !r.claim(name, fmt.Sprintf("arm %q of branch %q", a.Value, o.Name.Value)) {
			continue
		}
		arm.Parents = []Node{{Op: o}}
		o.Children = append(o.Children, Node{Op: arm})
		o.Arms = append(o.Arms, arm)
		r.ops[name.Value] = arm
	}
}
