package gen

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/kgen-dev/kgen/schema"
)

// A join matches the records of one key in one task, so each input must be
// partitioned by its key. A stream side whose key may have changed since it
// was last partitioned by it (a selectKey, map, flatMap or re-keying
// processor above it) is read through a repartition topic of its own, as
// Kafka Streams inserts one before a join: <app>-<join>-left-repartition
// and <app>-<join>-right-repartition for the sides of a stream-stream join,
// <app>-<join>-repartition for the stream of a stream-table join (Kafka
// Streams' names for a named join). The topic takes the partition count of
// the other side, which it is co-partitioned with; when both sides of a
// stream-stream join repartition, the left one takes its writer's count and
// the right one the left's.

// rekeyedSide is a join's input read through its own repartition topic.
type rekeyedSide struct {
	// Why says which node above may have changed the key.
	Why string
	// Role is the internal topic's role: the topic is <app>-<join>-<Role>.
	Role string
	// KeyFormat and ValueFormat are the topic's formats.
	KeyFormat, ValueFormat string
}

// step is the repartition step's name: its topic and sink are named from
// it, <step>-repartition and <step>-repartition-sink.
func (s *rekeyedSide) step(o *OpNode) string {
	if side, ok := strings.CutSuffix(s.Role, "-repartition"); ok {
		return o.Name.Value + "-" + side
	}
	return o.Name.Value
}

// source is the node that reads the topic back.
func (s *rekeyedSide) source(o *OpNode) string { return o.Name.Value + "-" + s.Role + "-source" }

// sink is the node that writes the topic.
func (s *rekeyedSide) sink(o *OpNode) string { return o.Name.Value + "-" + s.Role + "-sink" }

// rekeyed records that join o reads its input i, whose key may have changed
// (why), through a repartition topic of its own.
func (r *resolver) rekeyed(o *OpNode, i int, why string) {
	role := "repartition"
	if joinShape(o) == joinStreamStream {
		role = [2]string{"left", "right"}[i] + "-repartition"
	}
	in := o.Ins[i]
	o.Rekeyed[i] = &rekeyedSide{Why: why, Role: role,
		KeyFormat:   r.format(schema.Str{}, schema.Str{}, in.Key, true),
		ValueFormat: r.format(schema.Str{}, schema.Str{}, in.Value, false)}
}

// rekeyedSides are o's sides read through their own repartition topics, in
// input order, nil for an operator that has none.
func (o *OpNode) rekeyedSides() []*rekeyedSide {
	var out []*rekeyedSide
	for _, s := range o.Rekeyed {
		if s != nil {
			out = append(out, s)
		}
	}
	return out
}

// sideOf is the index of parent p among o's inputs, -1 if none.
func (o *OpNode) sideOf(p Node) int {
	for i, q := range o.Parents {
		if q == p {
			return i
		}
	}
	return -1
}

// entryFrom is the runtime node that receives what parent p sends to o: the
// sink of p's repartition topic when o reads p through one, the side node
// of a stream-stream join, the join's own node for a stream-table join
// whose stream is repartitioned, else o's entry node.
func (o *OpNode) entryFrom(p Node) string {
	i := o.sideOf(p)
	if e := o.kind.Entry; e != nil && o.ForeignKey && i >= 0 {
		return o.Name.Value + e(o, i) // its sides enter different nodes
	}
	if i < 0 || i >= len(o.Rekeyed) || o.kind.Inputs != leftRight {
		return o.entryNode()
	}
	if s := o.Rekeyed[i]; s != nil {
		return s.sink(o)
	}
	switch {
	case !o.HasOut:
	case joinShape(o) == joinStreamStream:
		return o.Name.Value + [2]string{"-left", "-right"}[i] // each side's own node
	case o.rekeyedSides() != nil:
		return o.Name.Value // the stream-table join's own node, the table's store beside it
	}
	return o.entryNode()
}

// sideTopic is the repartition topic o reads parent p through, "" if none.
func (o *OpNode) sideTopic(p Node) string {
	i := o.sideOf(p)
	if i < 0 || i >= len(o.Rekeyed) || o.Rekeyed[i] == nil {
		return ""
	}
	if in := o.internal(o.Rekeyed[i].Role); in != nil {
		return in.Name
	}
	return ""
}

// withRekeyedNodes adds, before a join's own nodes, the sink and source of
// each side it repartitions; each source feeds the join's node for its
// side.
func withRekeyedNodes(nodes func(o *OpNode) []runtimeNode) func(o *OpNode) []runtimeNode {
	return func(o *OpNode) []runtimeNode {
		own := nodes(o)
		sides := o.rekeyedSides()
		if len(sides) == 0 {
			return own
		}
		if own == nil {
			own = []runtimeNode{{Role: "node"}}
		}
		var out []runtimeNode
		for i, s := range o.Rekeyed {
			if s == nil {
				continue
			}
			into := ""
			if joinShape(o) == joinStreamStream {
				into = [2]string{"-left", "-right"}[i]
			}
			out = append(out,
				runtimeNode{Suffix: "-" + s.Role + "-sink", Role: s.Role + " sink node", Sink: true},
				runtimeNode{Suffix: "-" + s.Role + "-source", Role: s.Role + " source node", Source: true, Into: into})
		}
		return append(out, own...)
	}
}

// withRekeyedTopics adds a join's repartition topics to its internal
// stores and topics.
func withRekeyedTopics(internal func(o *OpNode) []internalRole) func(o *OpNode) []internalRole {
	return func(o *OpNode) []internalRole {
		out := internal(o)
		for i, s := range o.Rekeyed {
			if s == nil {
				continue
			}
			out = append(out, internalRole{Role: s.Role, Topic: true, What: fmt.Sprintf("repartition topic of %q", o.Parents[i].Name()),
				KV: o.Ins[i], KeyFormat: s.KeyFormat, ValueFormat: s.ValueFormat})
		}
		return out
	}
}

// withRekeyedEmit writes each side a join repartitions through its topic
// before the join, which then reads the topic's source node for that side
// (opEmit's parents say so).
func withRekeyedEmit(emit func(e *emitter, o *OpNode) []jen.Code) func(e *emitter, o *OpNode) []jen.Code {
	return func(e *emitter, o *OpNode) []jen.Code {
		var code []jen.Code
		both := len(o.rekeyedSides()) == 2
		for i, s := range o.Rekeyed {
			if s == nil {
				continue
			}
			rt := o.internal(s.Role)
			// The topic is co-partitioned with the other side's: it takes
			// that side's count (the left's, when both repartition).
			opts := jen.Dict{jen.Id("Source"): jen.Lit(s.source(o))}
			if !both || i == 1 {
				opts[jen.Id("LikeReaders")] = jen.True()
			}
			code = append(code, jen.Commentf("%s reads %s through %s: %s.", o.Name.Value, o.Parents[i].Name(), rt.Name, s.Why),
				jen.Qual(pkgStream, "AddRepartition").Call(jen.Id("t"), jen.Lit(s.step(o)), jen.Id("s").Dot(rt.KeySerde), jen.Id("s").Dot(rt.ValueSerde),
					jen.Qual(pkgStream, "RepartitionOptions").Values(opts), parentNames(o.Parents[i : i+1])[0]))
		}
		return append(code, emit(e, o)...)
	}
}

// inputNames are the runtime nodes o's code names as its parents: a side
// read through a repartition topic is that topic's source node.
func (o *OpNode) inputNames() []jen.Code {
	names := parentNames(o.Parents)
	for i, s := range o.Rekeyed {
		if s != nil && i < len(names) {
			names[i] = jen.Lit(s.source(o))
		}
	}
	return names
}

// specRekeyedTopics finds, from a spec alone (for check --against, where
// types need not resolve), the repartition topics the generator inserts
// before joins, each with the join and what it carries.
// A side's key may have changed when a key-changing operator (selectKey,
// map, flatMap) or a processor with rekeys: true is above it, since the
// last topic, table or aggregation; a processor that changes the key type
// without rekeys: is seen only once types resolve.
func specRekeyedTopics(s *schema.Spec) map[string]rekeyedTopic {
	topics := map[string]bool{}
	for _, t := range s.Topics {
		topics[t.Name.Value] = true
	}
	procs := map[string]*schema.Processor{}
	for _, p := range s.Processors {
		procs[p.Name.Value] = p
	}
	ops := map[string]*schema.Operator{}
	arms := map[string]*schema.Operator{} // <branch>-<arm> -> branch
	for _, o := range s.Operators {
		ops[o.Name.Value] = o
		for _, a := range append(append([]schema.Str(nil), o.Branches...), o.Default) {
			if a.Value != "" {
				arms[o.Name.Value+"-"+a.Value] = o
			}
		}
	}
	// fedBy lists the processors that forward to a node by their to:.
	fedBy := map[string][]string{}
	for _, p := range s.Processors {
		for _, t := range p.To {
			fedBy[t.Value] = append(fedBy[t.Value], p.Name.Value)
		}
	}
	var changed func(name string, seen map[string]bool) bool
	changed = func(name string, seen map[string]bool) bool {
		if seen[name] || topics[name] {
			return false
		}
		seen[name] = true
		var parents []string
		switch {
		case procs[name] != nil:
			if procs[name].Rekeys {
				return true
			}
			for _, f := range procs[name].From {
				parents = append(parents, f.Value)
			}
		case arms[name] != nil:
			parents = []string{arms[name].Name.Value}
		case ops[name] != nil:
			o := ops[name]
			k := specKind(o)
			switch {
			case k == nil:
				return false
			case k.KeyChanging:
				return true
			case k.KeyedOutput || k.Aggregation || k.Grouping || k.Inputs == topicInput:
				return false
			}
			for _, f := range o.From {
				parents = append(parents, f.Value)
			}
		}
		parents = append(parents, fedBy[name]...)
		for _, p := range parents {
			if changed(p, seen) {
				return true
			}
		}
		return false
	}
	out := map[string]rekeyedTopic{}
	for _, o := range s.Operators {
		k := specKind(o)
		if k == nil || k.Inputs != leftRight || len(o.From) != 2 {
			continue
		}
		for i, f := range o.From {
			if !changed(f.Value, map[string]bool{}) {
				continue
			}
			side := [2]string{"left", "right"}[i]
			topic := s.App.Value + "-" + o.Name.Value + "-repartition"
			if o.Window != nil { // two streams
				topic = s.App.Value + "-" + o.Name.Value + "-" + side + "-repartition"
			}
			out[topic] = rekeyedTopic{join: o.Name.Value, what: fmt.Sprintf("join %q's %s side (%s)", o.Name.Value, side, f.Value)}
		}
	}
	return out
}

// rekeyedTopic is a repartition topic inserted before join join, what
// saying which side it carries.
type rekeyedTopic struct{ join, what string }

// compareRekeyedTopics reports the repartition topics inserted before joins
// that a spec change removes (records not yet read from one are lost, as
// with an explicit repartition) or adds.
func compareRekeyedTopics(old, new *schema.Spec, add func(pos schema.Pos, breaking bool, format string, args ...any)) {
	was, now := specRekeyedTopics(old), specRekeyedTopics(new)
	pos := func(join string) schema.Pos {
		for _, o := range new.Operators {
			if o.Name.Value == join {
				return o.Name.Pos
			}
		}
		return new.App.Pos
	}
	for _, topic := range slices.Sorted(maps.Keys(was)) {
		if _, ok := now[topic]; !ok {
			add(pos(was[topic].join), true, "repartition topic %s, which the generator inserted before %s, is gone: records not yet read from it are lost", topic, was[topic].what)
		}
	}
	for _, topic := range slices.Sorted(maps.Keys(now)) {
		if _, ok := was[topic]; !ok {
			add(pos(now[topic].join), false, "%s is now read through repartition topic %s, which the generator inserts as its key may have changed: the application creates it at start", now[topic].what, topic)
		}
	}
}

// groupingTopic is the repartition topic an operator's own output goes
// through (a grouping's, a repartition's), drawn between it and its
// children; nil for a join, whose topics carry its inputs.
func (o *OpNode) groupingTopic() *InternalName {
	if o.kind.Inputs == leftRight {
		return nil
	}
	return o.internal("repartition")
}

// OwnRepartitionTopic is a repartition topic the application creates
// itself at start, as the spec implies it.
type OwnRepartitionTopic struct {
	// Name is the topic's full name, <app>-...-repartition.
	Name string
	// What says whose topic it is ("operator \"x\" (groupByKey)").
	What string
}

// RepartitionTopics lists the repartition topics the application creates
// at start: those of topics declared repartition: true, of groupings and
// repartition operators, and those inserted before re-keyed join sides,
// topics first, then by operator, for kgen topics to show.
func (g *Graph) RepartitionTopics() []OwnRepartitionTopic {
	var out []OwnRepartitionTopic
	for _, t := range g.Topics {
		if t.Repartition {
			out = append(out, OwnRepartitionTopic{Name: g.Spec.App.Value + "-" + t.Name.Value + "-repartition", What: fmt.Sprintf("topic %q (repartition: true)", t.Name.Value)})
		}
	}
	for _, o := range g.allOps() {
		for _, in := range o.Internal {
			if !in.Topic || !strings.HasSuffix(in.Name, "-repartition") {
				continue
			}
			what := o.what()
			for i, s := range o.Rekeyed {
				if s != nil && s.Role == in.Role {
					what = fmt.Sprintf("%s, inserted before %q: %s", what, o.Parents[i].Name(), s.Why)
				}
			}
			out = append(out, OwnRepartitionTopic{Name: in.Name, What: what})
		}
	}
	return out
}

// copartitionedRepartitions reports, at its partitions:, a repartition
// topic whose count is given (a repartition's or a grouping's) and differs
// from that of a topic read by the same sub-topology, such as the other
// side of the join it feeds: the application would refuse to start.
// Topics read together without a repartition are checked by subtopologies.
func (r *resolver) copartitionedRepartitions() {
	for _, o := range r.g.allOps() {
		if o.Partitions == 0 || !o.HasOut || !o.Repartition && o.kind.Name != "repartition" {
			continue
		}
		for _, t := range r.g.Topics {
			if t.Partitions == 0 || t.Partitions == o.Partitions || t.readBy() != o.Subtopology {
				continue
			}
			r.errs.add(o.PartitionsPos, "%s's repartition topic %s (partitions: %d) and topic %q (%d partitions) are read by the same sub-topology, so they must be co-partitioned: give it partitions: %d", o.what(), r.spec.App.Value+"-"+o.Name.Value+"-repartition", o.Partitions, t.Name.Value, t.Partitions, t.Partitions)
			break
		}
	}
}
