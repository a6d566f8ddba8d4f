package gen

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/kgen-dev/kgen/schema"
)

// A foreign-key join (foreign-key: true on a join or leftJoin of two
// tables; Kafka Streams' KTable#join(KTable, Function, ValueJoiner),
// KIP-213): each left row names, by the user's XForeignKey, the key of the
// right row it joins. The tables need not be co-partitioned or even keyed
// alike: the runtime ships subscriptions to the right table's partitions
// and responses back through two internal topics, named by the naming rule.
const joinForeignKey = "foreign-key"

// The roles of a foreign-key join's internal topics and store (the
// runtime's dsl.ForeignKeyJoin names them so from the operator's name).
const (
	fkRegistration = "subscription-registration"
	fkResponse     = "subscription-response"
	fkStore        = "subscription-store"
)

// fkJoinType types a foreign-key join: two tables, each read through its
// store, any key types; the output is a table keyed like the left one.
func fkJoinType(r *resolver, o *OpNode) {
	switch {
	case o.kind.Name == "outerJoin":
		r.errs.add(o.Op.Pos, "%s: a foreign-key join is join or leftJoin (there is no outer foreign-key join, as in Kafka Streams)", o.what())
		return
	case o.Window != nil:
		r.errs.add(o.Keys["window"], "%s is a foreign-key join: it takes no window (it joins the tables' current rows)", o.what())
		return
	}
	for i, p := range o.Parents {
		if !o.Ins[i].Value.is(ChangeOf) {
			r.errs.add(r.opFromPos(o, i), "%s joins %q, a stream, by a foreign key: a foreign-key join joins two tables (read the topic with {op: table}, or join the stream with a global table)", o.what(), p.Name())
			return
		}
		if p.Op == nil || p.Op.Rows == nil {
			r.errs.add(r.opFromPos(o, i), "%s joins table %q, which keeps no store of its rows: join a table or an aggregation", o.what(), p.Name())
			return
		}
		if p.Op.Rows.WindowKind != "" {
			r.errs.add(r.opFromPos(o, i), "%s joins windowed table %q: a join of windowed keys is not supported yet", o.what(), p.Name())
			return
		}
		if !r.versionedJoinOK(o, i) {
			return
		}
	}
	o.Out, o.HasOut, o.Table = KV{o.Ins[0].Key, r.typ(o.Value).wrapped(ChangeOf)}, true, true
}

// fkJoinNodes are the runtime nodes dsl.ForeignKeyJoin adds, in its order,
// each feeding what it feeds there: the left side's updates become
// subscriptions through the registration topic to the right side's
// partitions, whose answers (and the right table's updates) come back
// through the response topic to the left row's.
func fkJoinNodes(*OpNode) []runtimeNode {
	return []runtimeNode{
		{Suffix: "-subscription-send", Role: "subscription sending node", Explicit: true, Feeds: []string{"-" + fkRegistration + "-repartition-sink", "-no-fk"}},
		{Suffix: "-" + fkRegistration + "-repartition-sink", Role: "subscription sink node", Explicit: true},
		{Suffix: "-" + fkRegistration, Role: "subscription source node", Source: true, Explicit: true, Feeds: []string{"-subscription-receive"}},
		{Suffix: "-subscription-receive", Role: "subscription receiving node", Explicit: true, Feeds: []string{"-" + fkResponse + "-repartition-sink"}},
		{Suffix: "-subscription-right", Role: "right side node", Explicit: true, Feeds: []string{"-" + fkResponse + "-repartition-sink"}},
		{Suffix: "-" + fkResponse + "-repartition-sink", Role: "response sink node", Explicit: true},
		{Suffix: "-" + fkResponse, Role: "response source node", Source: true, Explicit: true, Feeds: []string{""}},
		{Suffix: "-no-fk", Role: "no-foreign-key node", Explicit: true, Feeds: []string{""}},
		{Role: "node", Explicit: true},
	}
}

// fkJoinEntry: the left table's updates enter the sending node, the right
// table's the right side's.
func fkJoinEntry(_ *OpNode, i int) string {
	if i == 1 {
		return "-subscription-right"
	}
	return "-subscription-send"
}

// fkJoinInternal are the registration and response topics and the
// subscription store, all encoded by the runtime.
func fkJoinInternal(o *OpNode) []internalRole {
	return []internalRole{
		{Role: fkRegistration + "-repartition", Topic: true, What: "subscription registration topic", RuntimeSerdes: true},
		{Role: fkResponse + "-repartition", Topic: true, What: "subscription response topic", RuntimeSerdes: true},
		{Role: fkStore, What: "subscription store", RuntimeSerdes: true},
	}
}

// fkJoinFuncs are the joiner, X(left VL, right VR) V (right *VR for a
// leftJoin; the runtime's foreign-key joiner sees no key, as Kafka
// Streams' ValueJoiner), and XForeignKey(value VL) (KR, bool).
func fkJoinFuncs(o *OpNode) []opFunc {
	l, r := o.Ins[0], o.Ins[1]
	right := r.Value.unwrapped()
	doc := fmt.Sprintf("is the joiner of foreign-key %s %q: the joined value of a left row and the right row its foreign key names", o.kind.Name, o.Name.Value)
	if o.kind.Name == "leftJoin" {
		right = right.wrapped(PointerTo)
		doc += " (nil where there is none)."
	} else {
		doc += "."
	}
	return []opFunc{
		{doc: doc,
			params:  []fnParam{{"left", plainT(l.Value.unwrapped())}, {"right", plainT(right)}},
			results: []fnParam{{"joined", plainT(o.Out.Value.unwrapped())}}},
		{suffix: "ForeignKey", doc: fmt.Sprintf("gives the key of the row of %q that a row of %q joins in foreign-key %s %q; ok false names none.", o.Parents[1].Name(), o.Parents[0].Name(), o.kind.Name, o.Name.Value),
			params:  []fnParam{{"value", plainT(l.Value.unwrapped())}},
			results: []fnParam{{"foreignKey", plainT(r.Key)}, {"ok", fnType{kind: "bool"}}}},
	}
}

// fkJoinEmit adds dsl.ForeignKeyJoin (or ForeignKeyLeftJoin), its serdes
// those of the tables' stores.
func fkJoinEmit(c opEmit, o *OpNode) []jen.Code {
	fn := "ForeignKeyJoin"
	if o.kind.Name == "leftJoin" {
		fn = "ForeignKeyLeftJoin"
	}
	l, r := o.Parents[0].Op, o.Parents[1].Op
	kl, vl := typeOf(o.Ins[0].Key), typeOf(o.Ins[0].Value.unwrapped())
	kr, vr := typeOf(o.Ins[1].Key), typeOf(o.Ins[1].Value.unwrapped())
	ref := func(p *OpNode) jen.Code {
		return c.dsl("TableRef").Values(jen.Dict{jen.Id("Node"): jen.Lit(p.nodeName()), jen.Id("Store"): c.store(p.Rows)})
	}
	// The runtime takes a nil foreign key for none.
	fk := jen.Func().Params(jen.Id("v").Add(vl)).Op("*").Add(kr).Block(
		jen.List(jen.Id("k"), jen.Id("ok")).Op(":=").Add(c.method(1)).Call(jen.Id("v")),
		jen.If(jen.Op("!").Id("ok")).Block(jen.Return(jen.Nil())),
		jen.Return(jen.Op("&").Id("k")))
	sd := c.dsl("FKJoinSerdes").Types(kl, vl, kr, vr).Values(jen.Dict{
		jen.Id("LeftKey"):    jen.Id("s").Dot(l.Rows.Go.KeySerde),
		jen.Id("LeftValue"):  jen.Id("s").Dot(l.Rows.Go.ValueSerde),
		jen.Id("RightKey"):   jen.Id("s").Dot(r.Rows.Go.KeySerde),
		jen.Id("RightValue"): jen.Id("s").Dot(r.Rows.Go.ValueSerde),
	})
	return []jen.Code{jen.Commentf("%s joins each row of %s with the row of %s its foreign key names, through %s and %s.", o.Name.Value, l.Name.Value, r.Name.Value, o.internal(fkRegistration+"-repartition").Name, o.internal(fkResponse+"-repartition").Name),
		c.dsl(fn).Types(kl, vl, kr, vr, typeOf(o.Out.Value.unwrapped())).Call(jen.Id("t"), jen.Lit(o.Name.Value), ref(l), ref(r), fk, c.method(0), sd)}
}

// fkJoinAgainst: a foreign-key join keeps the right side's subscriptions in
// its store and has records in flight in its topics. Renamed, removed, made
// another kind or no longer by foreign key, those are left behind; a join
// made one by foreign key starts with no subscriptions, so the left rows
// already in the table join nothing until they are updated.
func fkJoinAgainst(c *againstCtx, old, new *schema.Operator) {
	name := old.Name.Value
	switch {
	case new == nil:
		c.Breaking(c.AppPos, "foreign-key join %q is gone (renamed or removed): its subscriptions in store %s-%s and the records in flight in %s-%s-%s-repartition and %s-%s-%s-repartition are lost", name, name, fkStore, c.App, name, fkRegistration, c.App, name, fkResponse)
	case !new.ForeignKey:
		c.Breaking(posOr(new.ForeignKeyPos, new.Op.Pos), "join %q no longer joins by foreign key: its subscriptions in store %s-%s are left behind (use a new name for the join)", name, name, fkStore)
	case new.Op.Value != old.Op.Value:
		c.Breaking(new.Op.Pos, "foreign-key join %q is now %s, was %s: the subscriptions it keeps were sent for the old kind (a leftJoin subscribes rows an inner join does not), so results would not be those of the new kind (use a new name for the join)", name, new.Op.Value, old.Op.Value)
	}
}

// fkJoinAdded: a join made one by foreign key under its old name starts
// with no subscriptions.
func fkJoinAdded(c *againstCtx, old, new *schema.Operator) {
	if new != nil && new.ForeignKey && !old.ForeignKey {
		c.Breaking(posOr(new.ForeignKeyPos, new.Op.Pos), "join %q now joins by foreign key: it starts with no subscriptions, so the left rows already in its table join nothing until each is updated", old.Name.Value)
	}
}
