package gen

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/kgen-dev/kgen/schema"
)

// fnType is a parameter or result type of an operator's function.
type fnType struct {
	ref TypeRef
	// kind: "" the type itself, "bool", "slice" ([]ref), "kvs"
	// ([]dsl.KeyValue[ref, ref2]).
	kind string
	ref2 TypeRef
}

type fnParam struct {
	name string
	t    fnType
}

func plainT(r TypeRef) fnType { return fnType{ref: r} }

// keyValue are the key and value parameters of an operator's function: what
// it reads (an aggregation, what its grouping outputs); functions of table
// rows see the row's value.
func (o *OpNode) keyValue() []fnParam {
	in := o.In
	if o.Grouping != nil {
		in = o.Grouping.Out
	}
	v := in.Value
	if v.is(ChangeOf) {
		v = v.unwrapped()
	}
	return []fnParam{{"key", plainT(in.Key)}, {"value", plainT(v)}}
}

func (t fnType) code() *jen.Statement {
	switch t.kind {
	case "bool":
		return jen.Bool()
	case "slice":
		return jen.Index().Add(typeOf(t.ref))
	case "kvs":
		return jen.Index().Qual(pkgDSL, "KeyValue").Types(typeOf(t.ref), typeOf(t.ref2))
	}
	return typeOf(t.ref)
}

func (t fnType) text(self string, imports map[string]string) string {
	switch t.kind {
	case "bool":
		return "bool"
	case "slice":
		return "[]" + refText(t.ref, self, imports)
	case "kvs":
		imports[pkgDSL] = "dsl"
		return "[]dsl.KeyValue[" + refText(t.ref, self, imports) + ", " + refText(t.ref2, self, imports) + "]"
	}
	return refText(t.ref, self, imports)
}

// signature is f's parameter list and results as Go source.
func (f opFunc) signature(self string, imports map[string]string, named bool) string {
	var ps, rs []string
	for _, p := range f.params {
		ps = append(ps, p.name+" "+p.t.text(self, imports))
	}
	for _, r := range f.results {
		if named {
			rs = append(rs, r.name+" "+r.t.text(self, imports))
		} else {
			rs = append(rs, r.t.text(self, imports))
		}
	}
	res := strings.Join(rs, ", ")
	if len(rs) > 1 || named && len(rs) > 0 {
		res = "(" + res + ")"
	}
	return strings.TrimSpace(fmt.Sprintf("%s(%s) %s", f.method, strings.Join(ps, ", "), res))
}

// opMethods are the methods of Processors the operators call.
func (e *emitter) opMethods() []jen.Code {
	var out []jen.Code
	for _, o := range e.g.allOps() {
		for _, f := range o.funcs() {
			var ps, rs []jen.Code
			for _, p := range f.params {
				ps = append(ps, jen.Id(p.name).Add(p.t.code()))
			}
			for _, r := range f.results {
				rs = append(rs, r.t.code())
			}
			doc := wrap(f.method+" "+f.doc, 86)
			for _, line := range doc {
				out = append(out, jen.Comment(line))
			}
			sig := jen.Id(f.method).Params(ps...)
			switch len(rs) {
			case 0:
			case 1:
				sig.Add(rs[0])
			default:
				sig.Params(rs...)
			}
			out = append(out, sig)
		}
	}
	return out
}

// parentNames are the runtime node names of the nodes ns.
func parentNames(ns []Node) []jen.Code {
	var out []jen.Code
	for _, n := range ns {
		switch {
		case n.Topic != nil:
			out = append(out, jen.Lit(n.Topic.Go.SourceNode))
		case n.Proc != nil:
			out = append(out, jen.Lit(n.Proc.Name.Value))
		default:
			out = append(out, jen.Lit(n.Op.nodeName()))
		}
	}
	return out
}

// storeOptions are the stream.StoreOptions of store s.
func storeOptions(s *StoreNode) jen.Code {
	opts := jen.Dict{jen.Id("Changelog"): jen.Lit(s.Changelog)}
	if s.Backend.Value == schema.BackendPebble {
		// Only a program with a Pebble store imports (and links) Pebble.
		opts[jen.Id("Persistent")] = jen.Qual(pkgPebble, "Opener").Call(jen.Qual(pkgPebble, "Options").Values())
	}
	if s.Queryable {
		// Its queries read it while the app processes, under a lock of
		// its own; the other stores do without the lock.
		opts[jen.Id("Queryable")] = jen.True()
	}
	return jen.Qual(pkgStream, "StoreOptions").Values(opts)
}

// opEmit writes the code of one operator: helpers for its kind's Emit.
type opEmit struct {
	e *emitter
	o *OpNode
	// parents are the runtime node names of the operator's parents.
	parents []jen.Code
}

// op helps emit operator o.
func (e *emitter) op(o *OpNode) opEmit { return opEmit{e, o, o.inputNames()} }

// dsl is function fn of package dsl.
func (c opEmit) dsl(fn string) *jen.Statement { return jen.Qual(pkgDSL, fn) }

// method is the operator's i-th function, a method of Processors p.
func (c opEmit) method(i int) jen.Code { return jen.Id("p").Dot(c.o.Go.Funcs[i]) }

// args are the arguments of a dsl function adding the operator: the
// topology, its name, mid, its parents.
func (c opEmit) args(mid ...jen.Code) []jen.Code {
	return append(append([]jen.Code{jen.Id("t"), jen.Lit(c.o.Name.Value)}, mid...), c.parents...)
}

// call calls dsl function fn with args(mid...).
func (c opEmit) call(fn string, mid ...jen.Code) []jen.Code {
	return []jen.Code{c.dsl(fn).Call(c.args(mid...)...)}
}

// store is the name constant of store st.
func (c opEmit) store(st *StoreNode) jen.Code { return jen.Id(st.Go.Const) }

// repartition adds the operator's repartition step through internal topic
// rt, its values written with vs, fed by from.
func (c opEmit) repartition(rt *InternalName, vs jen.Code, from ...jen.Code) jen.Code {
	opts := jen.Qual(pkgStream, "RepartitionOptions").Values()
	if c.o.Partitions > 0 {
		opts = jen.Qual(pkgStream, "RepartitionOptions").Values(jen.Dict{jen.Id("Partitions"): jen.Lit(c.o.Partitions)})
	}
	return jen.Qual(pkgStream, "AddRepartition").Call(append([]jen.Code{jen.Id("t"), jen.Lit(c.o.Name.Value), jen.Id("s").Dot(rt.KeySerde), vs, opts}, from...)...)
}

// opSerdes adds the Serdes fields of the operators' internal topics and
// stores.
func (e *emitter) opSerdes(side func(name, doc, format string, r TypeRef) error) error {
	for _, o := range e.g.Operators {
		for _, in := range o.Internal {
			if in.RuntimeSerdes {
				continue
			}
			if !in.Topic {
				if err := side(in.KeySerde, fmt.Sprintf("%s encodes the keys of store %q (%s).", in.KeySerde, in.Name, in.KeyFormat), in.KeyFormat, in.KV.Key); err != nil {
					return fmt.Errorf("operator %q store %q key: %w", o.Name.Value, in.Name, err)
				}
				if err := side(in.ValueSerde, fmt.Sprintf("%s encodes the values of store %q (%s).", in.ValueSerde, in.Name, in.ValueFormat), in.ValueFormat, in.KV.Value); err != nil {
					return fmt.Errorf("operator %q store %q value: %w", o.Name.Value, in.Name, err)
				}
				continue
			}
			if err := side(in.KeySerde, fmt.Sprintf("%s encodes the keys of %s (%s).", in.KeySerde, in.Name, in.KeyFormat), in.KeyFormat, in.KV.Key); err != nil {
				return fmt.Errorf("operator %q key: %w", o.Name.Value, err)
			}
			if err := side(in.ValueSerde, fmt.Sprintf("%s encodes the values of %s (%s).", in.ValueSerde, in.Name, in.ValueFormat), in.ValueFormat, in.KV.Value); err != nil {
				return fmt.Errorf("operator %q value: %w", o.Name.Value, err)
			}
		}
	}
	return nil
}
