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

// opFunc is one function an operator calls: a method of Processors the
// user implements.
type opFunc struct {
	method  string
	doc     string
	params  []fnParam
	results []fnParam // named, for the scaffold's stubs
}

func plainT(r TypeRef) fnType { return fnType{ref: r} }

// funcsOf lists the functions operator o calls, with their signatures.
func funcsOf(o *OpNode) []opFunc {
	if len(o.Go.Funcs) == 0 {
		return nil
	}
	in := o.In
	if o.Grouping != nil {
		in = o.Grouping.Out
	}
	k, v := in.Key, in.Value
	if v.Wrap == ChangeOf {
		v = v.plain() // functions of table rows see the row's value
	}
	kv := []fnParam{{"key", plainT(k)}, {"value", plainT(v)}}
	boolean := fnType{kind: "bool"}
	m := o.Go.Funcs
	name := o.Name.Value
	switch o.Kind {
	case schema.OpFilter:
		return []opFunc{{m[0], fmt.Sprintf("is the predicate of filter %q: it keeps the records for which it returns true.", name), kv, []fnParam{{"keep", boolean}}}}
	case schema.OpFilterNot:
		return []opFunc{{m[0], fmt.Sprintf("is the predicate of filterNot %q: it drops the records for which it returns true.", name), kv, []fnParam{{"drop", boolean}}}}
	case opArm:
		return []opFunc{{m[0], fmt.Sprintf("is the predicate of arm %q of branch %q: a record goes to the first arm whose predicate returns true.", o.ArmName, o.Split.Name.Value), kv, []fnParam{{"take", boolean}}}}
	case schema.OpMap:
		return []opFunc{{m[0], fmt.Sprintf("is the mapper of map %q: the new key and value of a record.", name), kv, []fnParam{{"newKey", plainT(o.Out.Key)}, {"newValue", plainT(o.Out.Value)}}}}
	case schema.OpMapValues:
		return []opFunc{{m[0], fmt.Sprintf("is the mapper of mapValues %q: the new value of a record (its key stays).", name), kv, []fnParam{{"newValue", plainT(o.Out.Value)}}}}
	case schema.OpFlatMap:
		return []opFunc{{m[0], fmt.Sprintf("is the mapper of flatMap %q: the records one record becomes (none, one or more).", name), kv, []fnParam{{"out", fnType{kind: "kvs", ref: o.Out.Key, ref2: o.Out.Value}}}}}
	case schema.OpFlatMapValues:
		return []opFunc{{m[0], fmt.Sprintf("is the mapper of flatMapValues %q: the values one record becomes, each with its key.", name), kv, []fnParam{{"out", fnType{kind: "slice", ref: o.Out.Value}}}}}
	case schema.OpSelectKey:
		return []opFunc{{m[0], fmt.Sprintf("is the key selector of selectKey %q: the new key of a record.", name), kv, []fnParam{{"newKey", plainT(o.Out.Key)}}}}
	case schema.OpPeek:
		return []opFunc{{m[0], fmt.Sprintf("is called with every record peek %q passes on.", name), kv, nil}}
	case schema.OpForeach:
		return []opFunc{{m[0], fmt.Sprintf("is called with every record foreach %q reads.", name), kv, nil}}
	case schema.OpGroupBy:
		if o.InTable {
			return []opFunc{{m[0], fmt.Sprintf("is the selector of groupBy %q: the key a table row is grouped by, and the value aggregated.", name), kv, []fnParam{{"newKey", plainT(o.Out.Key)}, {"newValue", plainT(o.Out.Value.plain())}}}}
		}
		return []opFunc{{m[0], fmt.Sprintf("is the key selector of groupBy %q: the key a record is grouped by.", name), kv, []fnParam{{"newKey", plainT(o.Out.Key)}}}}
	case schema.OpReduce:
		aggV := []fnParam{{"agg", plainT(v)}, {"value", plainT(v)}}
		res := []fnParam{{"newAgg", plainT(v)}}
		if o.InTable {
			return []opFunc{
				{m[0], fmt.Sprintf("is the adder of reduce %q: the aggregate with a new row's value added.", name), aggV, res},
				{m[1], fmt.Sprintf("is the subtractor of reduce %q: the aggregate with an old row's value taken out.", name), aggV, res},
			}
		}
		return []opFunc{{m[0], fmt.Sprintf("is the reducer of reduce %q: the aggregate with one more value.", name), aggV, res}}
	case schema.OpAggregate:
		va := o.Out.Value.plain()
		params := append(kv, fnParam{"agg", plainT(va)})
		res := []fnParam{{"newAgg", plainT(va)}}
		init := opFunc{m[0], fmt.Sprintf("is the initializer of aggregate %q: the aggregate of a key before its first record.", name), nil, []fnParam{{"agg", plainT(va)}}}
		if o.InTable {
			return []opFunc{init,
				{m[1], fmt.Sprintf("is the adder of aggregate %q: the aggregate with a new row added.", name), params, res},
				{m[2], fmt.Sprintf("is the subtractor of aggregate %q: the aggregate with an old row taken out.", name), params, res},
			}
		}
		return []opFunc{init, {m[1], fmt.Sprintf("is the aggregator of aggregate %q: the aggregate with one more record.", name), params, res}}
	}
	return nil
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

// refText writes r as Go source seen from package self.
func refText(r TypeRef, self string, imports map[string]string) string {
	s := typeText(r.Type, self, imports)
	switch r.Wrap {
	case ChangeOf:
		imports[pkgDSL] = "dsl"
		return "dsl.Change[" + s + "]"
	case PointerTo:
		return "*" + s
	}
	return s
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
		for _, f := range funcsOf(o) {
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
	return jen.Qual(pkgStream, "StoreOptions").Values(opts)
}

// opCalls adds operator o to topology t (with Processors p and Serdes s).
func (e *emitter) opCalls(o *OpNode) []jen.Code {
	dsl := func(fn string) *jen.Statement { return jen.Qual(pkgDSL, fn) }
	name := jen.Lit(o.Name.Value)
	parents := parentNames(o.Parents)
	method := func(i int) jen.Code { return jen.Id("p").Dot(o.Go.Funcs[i]) }
	args := func(mid ...jen.Code) []jen.Code {
		return append(append([]jen.Code{jen.Id("t"), name}, mid...), parents...)
	}
	call := func(fn string, mid ...jen.Code) []jen.Code { return []jen.Code{dsl(fn).Call(args(mid...)...)} }
	repartition := func(vs jen.Code, from ...jen.Code) jen.Code {
		opts := jen.Qual(pkgStream, "RepartitionOptions").Values()
		if o.Partitions > 0 {
			opts = jen.Qual(pkgStream, "RepartitionOptions").Values(jen.Dict{jen.Id("Partitions"): jen.Lit(o.Partitions)})
		}
		return jen.Qual(pkgStream, "AddRepartition").Call(append([]jen.Code{jen.Id("t"), name, jen.Id("s").Dot(o.Go.KeySerde), vs, opts}, from...)...)
	}
	switch o.Kind {
	case schema.OpFilter:
		return call("Filter", method(0))
	case schema.OpFilterNot:
		return call("FilterNot", method(0))
	case schema.OpMap:
		return call("Map", method(0))
	case schema.OpMapValues:
		return call("MapValues", method(0))
	case schema.OpFlatMap:
		return call("FlatMap", method(0))
	case schema.OpFlatMapValues:
		return call("FlatMapValues", method(0))
	case schema.OpSelectKey:
		return call("SelectKey", method(0))
	case schema.OpPeek:
		return call("Peek", method(0))
	case schema.OpForeach:
		return call("Foreach", method(0))
	case schema.OpMerge:
		return []jen.Code{dsl("Merge").Types(kvTypes(o.In)...).Call(args()...)}
	case schema.OpBranch:
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
		return call("Branch", branches, jen.Lit(def))
	case schema.OpGroupByKey:
		if !o.Repartition {
			// A node of its own, so that what feeds the grouping names it.
			return []jen.Code{jen.Comment("groupByKey " + o.Name.Value + ": the key is unchanged since the input was partitioned by it."),
				dsl("Merge").Types(kvTypes(o.In)...).Call(args()...)}
		}
		return []jen.Code{jen.Commentf("groupByKey %s reads through %s-%s-repartition: %s.", o.Name.Value, e.g.Spec.App.Value, o.Name.Value, o.Why),
			repartition(jen.Id("s").Dot(o.Go.ValueSerde), parents...)}
	case schema.OpGroupBy:
		sel := jen.Lit(o.Name.Value + "-select")
		topic := fmt.Sprintf("%s-%s-repartition", e.g.Spec.App.Value, o.Name.Value)
		if o.InTable {
			return []jen.Code{jen.Commentf("groupBy %s re-keys table rows and reads them through %s.", o.Name.Value, topic),
				dsl("TableGroupBy").Call(append([]jen.Code{jen.Id("t"), sel, jen.Id("s").Dot(o.Go.KeySerde), method(0)}, parents...)...),
				repartition(dsl("Changes").Call(jen.Id("s").Dot(o.Go.ValueSerde)), sel)}
		}
		return []jen.Code{jen.Commentf("groupBy %s re-keys records and reads them through %s.", o.Name.Value, topic),
			dsl("SelectKey").Call(append([]jen.Code{jen.Id("t"), sel, method(0)}, parents...)...),
			repartition(jen.Id("s").Dot(o.Go.ValueSerde), sel)}
	case schema.OpCount, schema.OpReduce, schema.OpAggregate:
		st := o.Rows
		store := []jen.Code{jen.Id(st.Go.Const), jen.Id("s").Dot(st.Go.KeySerde)}
		vs := jen.Id("s").Dot(st.Go.ValueSerde)
		in := o.Grouping.Out
		k, v := typeOf(in.Key), typeOf(in.Value.plain())
		prefix := ""
		if o.InTable {
			prefix = "Table"
		}
		switch o.Kind {
		case schema.OpCount:
			return []jen.Code{dsl(prefix+"Count").Types(k, v).Call(args(append(store, storeOptions(st))...)...)}
		case schema.OpReduce:
			fns := []jen.Code{method(0)}
			if o.InTable {
				fns = append(fns, method(1))
			}
			return []jen.Code{dsl(prefix+"Reduce").Types(k, v).Call(args(append(append(store, vs, storeOptions(st)), fns...)...)...)}
		default:
			fns := []jen.Code{method(0), method(1)}
			if o.InTable {
				fns = append(fns, method(2))
			}
			return []jen.Code{dsl(prefix+"Aggregate").Types(k, v, typeOf(o.Out.Value.plain())).Call(args(append(append(store, vs, storeOptions(st)), fns...)...)...)}
		}
	case schema.OpTable:
		t := o.Parents[0].Topic
		st := o.Rows
		return []jen.Code{dsl("Table").Types(kvTypes(t.KV)...).Call(jen.Id("t"), name, jen.Id(t.Go.Const), jen.Id("s").Dot(t.Go.KeySerde), jen.Id("s").Dot(t.Go.ValueSerde),
			jen.Id(st.Go.Const), storeOptions(st))}
	case schema.OpToStream:
		return []jen.Code{dsl("ToStream").Types(typeOf(o.In.Key), typeOf(o.In.Value.plain())).Call(args()...)}
	}
	return nil
}

// opSerdes adds the Serdes fields of the operators' repartition topics.
func (e *emitter) opSerdes(side func(name, doc, format string, r TypeRef) error) error {
	for _, o := range e.g.Operators {
		if !isGrouping(o.Kind) || !o.Repartition {
			continue
		}
		topic := fmt.Sprintf("%s-%s-repartition", e.g.Spec.App.Value, o.Name.Value)
		if err := side(o.Go.KeySerde, fmt.Sprintf("%s encodes the keys of %s (%s).", o.Go.KeySerde, topic, o.KeyFormat), o.KeyFormat, o.Out.Key); err != nil {
			return fmt.Errorf("operator %q key: %w", o.Name.Value, err)
		}
		if err := side(o.Go.ValueSerde, fmt.Sprintf("%s encodes the values of %s (%s).", o.Go.ValueSerde, topic, o.ValueFormat), o.ValueFormat, o.Out.Value.plain()); err != nil {
			return fmt.Errorf("operator %q value: %w", o.Name.Value, err)
		}
	}
	return nil
}
