package gen

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/kgen-dev/kgen/schema"
)

// opKind describes one operator kind, the op: of the spec, as
// golang.org/x/tools/go/analysis describes an analyzer: a value owning
// everything about its kind (its keys, typing rule, edges, stores and
// internal topics, emission and check --against rule), so that the drivers
// (resolve, names, emit, against) call it and never switch on a kind, and a
// new kind is one new file registering one descriptor. Nil funcs take the
// default said on each.
type opKind struct {
	// Name is the op: value, Kafka Streams' method name.
	Name string
	// Keys are the spec keys the kind takes besides op.
	Keys []opKey
	// Hint says, for a key of operator op its kind does not take, what to
	// write instead; "" (or nil Hint) lists the keys it takes.
	Hint func(key string, op *schema.Operator) string
	// Inputs is what the operator reads.
	Inputs inputs

	// Traits the drivers ask about.
	//
	// Grouping: the output feeds aggregations only. Aggregation: it reads
	// a grouping. Terminal: it outputs nothing (foreach). KeyChanging: it
	// may forward records with other keys than it got, so a grouping below
	// repartitions. KeyedOutput: its output is partitioned by its key
	// (toStream of a table, repartition; an operator outputting a table
	// says so by OpNode.Table), so a key change above it does not matter
	// below it.
	Grouping, Aggregation, Terminal, KeyChanging, KeyedOutput bool
	// Global: the operator is a global table, which adds no node to the
	// topology's sub-topologies (every instance reads all of its topic) and
	// is only read by a join's right side.
	Global bool

	// Edges links the operator to its inputs itself (a table reads the
	// topic of its topic:); nil links from: and to: as every operator does.
	Edges func(r *resolver, o *OpNode)
	// Closed, when set, says that nothing but this feeds the operator ("its
	// topic"): a processor may not forward to it.
	Closed string
	// Arms adds the nodes a node splits into (a branch's arms); nil for
	// none. Reading the operator itself is then an error: its arms are
	// read.
	Arms func(r *resolver, o *OpNode)
	// Type is the typing rule: given what the operator reads (o.In; o.Ins
	// for left and right inputs), it sets o.Out and o.HasOut (and what
	// else the kind needs), reporting what does not fit. in is the first
	// input. Called once every input's type is known. Required.
	Type func(r *resolver, o *OpNode, in Node)
	// Nodes are the runtime nodes the operator adds to the topology, in
	// the order it adds them; nil means one node, the operator's name.
	Nodes func(o *OpNode) []runtimeNode
	// Entry is the suffix of the node receiving the records of o's i-th
	// parent; nil means the first of its nodes that reads no topic (a
	// foreign-key join's right side enters elsewhere than its left).
	Entry func(o *OpNode, i int) string
	// Internal are the stores and internal topics the operator owns
	// besides its store:, by role (internalRole says how they are named).
	Internal func(o *OpNode) []internalRole
	// Funcs are the user's functions the operator calls, with their
	// signatures (methods of Processors, named <Operator><Suffix>).
	Funcs func(o *OpNode) []opFunc
	// Emit is the code adding the operator to topology t, with Processors
	// p and Serdes s. Required.
	Emit func(e *emitter, o *OpNode) []jen.Code
	// Rows says, from the spec alone, what the operator keeps in its
	// store:, for check --against: a store kept for other rows no longer
	// decodes. Nil for a kind without a store.
	Rows func(o *schema.Operator) string
	// Against reports what changing operator old of an application
	// already running breaks beyond its store: (its internal topics), new
	// being the operator of that name in the new spec, nil if none.
	Against func(c *againstCtx, old, new *schema.Operator)
}

// opKey is one key an operator kind takes.
type opKey struct {
	Name     string
	Required bool
}

// keys makes opKeys: names ending in "!" are required.
func keys(names ...string) []opKey {
	var out []opKey
	for _, n := range names {
		name, required := strings.CutSuffix(n, "!")
		out = append(out, opKey{name, required})
	}
	return out
}

// inputs is what an operator kind reads.
type inputs int

const (
	// oneInput: one stream or table (from: lists one input).
	oneInput inputs = iota
	// sameInputs: one or more inputs, all carrying the same types (merge).
	sameInputs
	// leftRight: two inputs, left first, each of its own types (a join).
	leftRight
	// topicInput: the topic named by topic:, no from (a table).
	topicInput
)

// runtimeNode is a node of the runtime's topology an operator adds.
type runtimeNode struct {
	// Suffix makes the node's name from the operator's: "" for the
	// operator's own node (what its children name as their parent),
	// "-select", "-repartition-sink"...
	Suffix string
	// Role says what the node is, for messages ("key-selecting node").
	Role string
	// Source says the node reads a topic: the chain of the operator's
	// nodes ends before it (its records come through that topic).
	Source bool
	// Feeds, when Explicit, are the suffixes of the nodes this one sends
	// its records to, instead of the next in the chain.
	Feeds    []string
	Explicit bool
	// Sink says the node writes a topic: the chain ends after it.
	Sink bool
	// Into is the suffix of the node this one feeds, when not the next.
	Into string
}

// opFunc is one function an operator calls: a method of Processors the
// user implements.
type opFunc struct {
	// suffix makes the method's name from the operator's identifier; the
	// namer declares it and sets method.
	suffix  string
	method  string
	doc     string
	params  []fnParam
	results []fnParam // named, for the scaffold's stubs
}

// opKinds is the registry of operator kinds, by op:.
var opKinds = map[string]*opKind{}

// register adds kind k to the registry; each kind's file calls it from
// init.
func register(k *opKind) *opKind {
	if _, dup := opKinds[k.Name]; dup {
		panic("gen: operator kind " + k.Name + " registered twice")
	}
	opKinds[k.Name] = k
	return k
}

// opKindNames lists the registered kinds, sorted.
func opKindNames() []string {
	var out []string
	for name := range opKinds {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// keyHelp says what a key means, for the message about a missing one.
var keyHelp = map[string]string{
	"from":     "its inputs: from: [TOPIC, PROCESSOR or OPERATOR]",
	"key":      "the key type it outputs: key: TYPE",
	"value":    "the value type it outputs: value: TYPE",
	"store":    "the store holding its rows: store: NAME",
	"topic":    "the topic it reads: topic: NAME",
	"branches": "the names of its arms: branches: [NAME, ...]",
	"window":   "its windows: window: {tumbling: SIZE} (or hopping, sliding, session), grace: DURATION",
	"until":    "what it waits for: until: window-closes, or until: {time-limit: DURATION}",
}

// kindOf finds the kind of spec operator op and checks the keys op was
// written with against it, reporting an unknown kind, a missing key and a
// key the kind does not take (which it clears, so that resolving adds no
// errors about it). It returns nil when op cannot be resolved.
func kindOf(op *schema.Operator, errs *errList) *opKind {
	what := fmt.Sprintf("operator %q", op.Name.Value)
	names := opKindNames()
	if op.Op.Pos.Line == 0 {
		if op.Pos.Line > 0 {
			errs.add(op.Pos, "%s: missing op: the operator kind (%s)", what, strings.Join(names, ", "))
		}
		return nil
	}
	if op.Op.Value == "" {
		return nil // reported by the loader
	}
	k, ok := opKinds[op.Op.Value]
	if w := windowedKinds[op.Op.Value]; w != nil && op.Window != nil {
		k = w // count, reduce or aggregate with window:
	}
	if !ok {
		if slices.Contains(schema.PlannedOps, op.Op.Value) {
			errs.add(op.Op.Pos, "%s: op %s is planned (global tables and cogroup come next) but not supported by this kgen yet", what, op.Op.Value)
			return nil
		}
		errs.add(op.Op.Pos, "%s: unknown op %q (want one of %s)%s", what, op.Op.Value, strings.Join(names, ", "), schema.Suggest(op.Op.Value, names))
		return nil
	}
	allowed := map[string]bool{"op": true}
	for _, key := range k.Keys {
		allowed[key.Name] = true
		if _, given := op.Keys[key.Name]; key.Required && !given {
			errs.add(op.Name.Pos, "%s: %s needs %s", what, k.Name, keyHelp[key.Name])
		}
	}
	for _, key := range slices.Sorted(maps.Keys(op.Keys)) {
		if allowed[key] || slices.Contains(schema.PlannedOperatorKeys, key) {
			continue
		}
		hint := ""
		if k.Hint != nil {
			hint = k.Hint(key, op)
		}
		if hint == "" {
			hint = " (it takes " + strings.Join(slices.Sorted(maps.Keys(allowed)), ", ") + ")"
		}
		errs.add(op.Keys[key], "%s: %s takes no %s%s", what, k.Name, key, hint)
		op.Clear(key)
	}
	return k
}

// internalRole is a store or internal topic an operator owns besides its
// store:, named from the operator's name and the role by one rule, so that
// no name depends on a position and adding an operator renames nothing.
// Operator x of application app with role r owns
//   - the internal topic <app>-x-r (a grouping's, role "repartition":
//     <app>-x-repartition; a join's inputs: <app>-x-left-repartition),
//     whose Serdes fields are <X><R>Key and <X><R>Value, R the role without
//     its "repartition" word (a grouping's: <X>Key, <X>Value);
//   - or the store x-r (a join's window stores x-left and x-right), whose
//     changelog is <app>-x-r-changelog and whose Serdes fields are
//     Store<XR>Key and Store<XR>Value, as a store of the spec's would be.
//     The kind's Emit adds the store to the topology.
//
// The namer checks every such name against every other topic and store
// name of the application, as it checks Go names.
type internalRole struct {
	Role string
	// Topic says the role is an internal topic, else a store.
	Topic bool
	// What says what it is, for messages ("repartition topic").
	What string
	// KV are the types it holds, KeyFormat and ValueFormat their formats.
	KV                     KV
	KeyFormat, ValueFormat string
	// RuntimeSerdes says the runtime encodes it with serdes of its own (a
	// foreign-key join's subscriptions): it is named and checked, but
	// gets no Serdes fields.
	RuntimeSerdes bool
}

// InternalName is a store or internal topic of an operator, named.
type InternalName struct {
	internalRole
	// Name is the topic's full name, or the store's name.
	Name string
	// KeySerde and ValueSerde are an internal topic's Serdes fields.
	KeySerde, ValueSerde string
}

// internal is o's internal topic or store of role role, nil if it has none.
func (o *OpNode) internal(role string) *InternalName {
	for _, in := range o.Internal {
		if in.Role == role {
			return in
		}
	}
	return nil
}

// againstCtx is what an operator kind's check --against rule reports with.
type againstCtx struct {
	// App is the new spec's application id; AppPos where it is written,
	// the place of a change nothing else locates.
	App    string
	AppPos schema.Pos
	add    func(pos schema.Pos, breaking bool, format string, args ...any)
}

// Breaking reports a change that loses or strands state.
func (c *againstCtx) Breaking(pos schema.Pos, format string, args ...any) {
	c.add(pos, true, format, args...)
}

// Safe reports a change that was considered and keeps state, saying what
// it does.
func (c *againstCtx) Safe(pos schema.Pos, format string, args ...any) {
	c.add(pos, false, format, args...)
}
