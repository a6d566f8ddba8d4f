package gen

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/kgen-dev/kgen/schema"
)

// OpNode is a resolved operator (or one arm of a branch).
type OpNode struct {
	*schema.Operator
	// kind is the operator's kind, its descriptor (armKind for an arm).
	kind  *opKind
	Ident string
	Go    OpNames
	// In is what the operator reads (its left input for a join), Ins what
	// each of its inputs carries, in the order of Parents; Out is what it
	// outputs (meaningful when HasOut). A table's rows are carried as
	// dsl.Change values; what toStream outputs as pointers, nil for a
	// deletion.
	In       KV
	Ins      []KV
	Out      KV
	HasOut   bool
	Parents  []Node
	Children []Node
	// Table says the operator outputs a table (Out.Value is a dsl.Change);
	// InTable that it reads one.
	Table, InTable bool
	// Rows is the store of an aggregation or a table (the spec's store:).
	Rows *StoreNode
	// Internal are the stores and internal topics the operator owns by
	// role (internalRole), named by the namer.
	Internal []*InternalName
	// Repartition says a grouping reads through its repartition topic
	// <app>-<name>-repartition; Why says which operator or processor may
	// have changed the key.
	Repartition bool
	Why         string
	// KeyFormat and ValueFormat are the formats of a grouping's
	// repartition topic.
	KeyFormat, ValueFormat string
	// RightFormat is the value format of a stream-stream join's right
	// side's window store (ValueFormat the left side's).
	RightFormat string
	// Arms are a branch's arms, the default last; Split is an arm's branch,
	// ArmName its own name and Default whether it is the default arm.
	Arms    []*OpNode
	Split   *OpNode
	ArmName string
	Default bool
	// Grouping is the grouping an aggregation reads.
	Grouping *OpNode
	// Windows are a windowed aggregation's windows (its window:), nil for
	// any other operator.
	Windows     *schema.Window
	Subtopology int
	// UpSubtopology is, for a grouping that repartitions, the sub-topology
	// writing its repartition topic (Subtopology reads it).
	UpSubtopology int
	// Rekeyed are, for a join, the sides (left, right) read through a
	// repartition topic of their own, nil for a side read as it is
	// (autorepartition.go).
	Rekeyed [2]*rekeyedSide
	// entrySubs are the sub-topologies each parent's records enter.
	entrySubs map[Node]int
}

// OpNames are the names generated for one operator.
type OpNames struct {
	// Funcs are the methods of Processors the operator calls, in order
	// (a predicate; an initializer and an aggregator...).
	Funcs []string
}

// Node name of the operator in the runtime: what its children name as
// their parent.
func (o *OpNode) nodeName() string { return o.Name.Value }

// nodes are the runtime nodes o adds, in order, the last its own.
func (o *OpNode) nodes() []runtimeNode {
	if o.kind.Nodes == nil {
		return []runtimeNode{{Role: "node"}}
	}
	return o.kind.Nodes(o)
}

// entryNode is the runtime node that receives what a parent sends to o:
// the first of its nodes that reads no topic.
func (o *OpNode) entryNode() string {
	for _, n := range o.nodes() {
		if !n.Source {
			return o.Name.Value + n.Suffix
		}
	}
	return o.Name.Value
}

func (o *OpNode) what() string {
	if o.Split != nil {
		return fmt.Sprintf("arm %q of branch %q", o.ArmName, o.Split.Name.Value)
	}
	return fmt.Sprintf("operator %q (%s)", o.Name.Value, o.kind.Name)
}

// funcs are the functions o calls, named.
func (o *OpNode) funcs() []opFunc {
	if o.kind.Funcs == nil {
		return nil
	}
	fs := o.kind.Funcs(o)
	if len(fs) != len(o.Go.Funcs) {
		return nil // not named: the graph did not resolve
	}
	for i := range fs {
		fs[i].method = o.Go.Funcs[i]
	}
	return fs
}

// operators builds the operator nodes (and the nodes their kinds add,
// such as a branch's arms).
func (r *resolver) operators() {
	for _, op := range r.spec.Operators {
		k := kindOf(op, &r.errs)
		if k == nil {
			r.unresolved[op.Name.Value] = true
			continue // reported
		}
		o := &OpNode{Operator: op, kind: k}
		if !r.claim(op.Name, fmt.Sprintf("operator %q", op.Name.Value)) {
			continue
		}
		r.ops[op.Name.Value] = o
		r.g.Operators = append(r.g.Operators, o)
		if k.Arms != nil {
			k.Arms(r, o)
		}
	}
}

// claim reserves a node name for what, reporting one taken by a topic,
// processor or another operator.
func (r *resolver) claim(name schema.Str, what string) bool {
	var prev string
	if t, ok := r.topics[name.Value]; ok {
		prev = fmt.Sprintf("topic %q (%s)", t.Name.Value, t.Name.Pos)
	} else if p, ok := r.procs[name.Value]; ok {
		prev = fmt.Sprintf("processor %q (%s)", p.Name.Value, p.Name.Pos)
	} else if o, ok := r.ops[name.Value]; ok {
		prev = fmt.Sprintf("%s (%s)", o.what(), o.Name.Pos)
	}
	if prev == "" {
		return true
	}
	r.errs.add(name.Pos, "%s has the name of %s: names in from and to must say which they mean", what, prev)
	return false
}

// allOps lists the operators and their arms, in spec order.
func (g *Graph) allOps() []*OpNode {
	var out []*OpNode
	for _, o := range g.Operators {
		out = append(out, o)
		out = append(out, o.Arms...)
	}
	return out
}

// lookup finds a node by its spec name.
func (r *resolver) lookup(name string) (Node, bool) {
	if t, ok := r.topics[name]; ok {
		return Node{Topic: t}, true
	}
	if p, ok := r.procs[name]; ok {
		return Node{Proc: p}, true
	}
	if o, ok := r.ops[name]; ok {
		return Node{Op: o}, true
	}
	return Node{}, false
}

// opEdges links operators to their parents and children.
func (r *resolver) opEdges() {
	for _, o := range r.g.Operators {
		if o.kind.Edges != nil {
			o.kind.Edges(r, o)
			continue
		}
		for _, f := range o.From {
			n, ok := r.lookup(f.Value)
			switch {
			case !ok && r.unresolved[f.Value]:
				continue // its op is the mistake, reported
			case !ok:
				r.errs.add(f.Pos, "%s reads from %q, which is neither a topic, a processor nor an operator%s", o.what(), f.Value, schema.Suggest(f.Value, r.names()))
				continue
			case n.Op == o:
				r.errs.add(f.Pos, "%s reads from itself", o.what())
				continue
			case n.Op != nil && n.Op.kind.Arms != nil:
				var arms []string
				for _, a := range n.Op.Arms {
					arms = append(arms, a.Name.Value)
				}
				r.errs.add(f.Pos, "%s reads from branch %q itself: read one of its arms (%s)", o.what(), f.Value, strings.Join(arms, ", "))
				continue
			case n.Op != nil && n.Op.kind.Terminal:
				r.errs.add(f.Pos, "%s reads from %s, which is terminal: use peek to pass records on", o.what(), n.Op.what())
				continue
			}
			if slices.Contains(o.Parents, n) {
				continue
			}
			o.Parents = append(o.Parents, n)
			switch {
			case n.Topic != nil:
				n.Topic.OpReaders = appendOp(n.Topic.OpReaders, o)
			case n.Proc != nil:
				n.Proc.Children = appendNode(n.Proc.Children, Node{Op: o})
			default:
				n.Op.Children = appendNode(n.Op.Children, Node{Op: o})
			}
		}
		for _, c := range o.To {
			n, ok := r.lookup(c.Value)
			switch {
			case !ok && r.unresolved[c.Value]:
				continue // its op is the mistake, reported
			case !ok:
				r.errs.add(c.Pos, "%s writes to %q, which is neither a topic nor a processor%s", o.what(), c.Value, schema.Suggest(c.Value, r.names()))
				continue
			case n.Op != nil:
				r.errs.add(c.Pos, "%s writes to operator %q: say it on that operator's side (from: [%s])", o.what(), c.Value, o.Name.Value)
				continue
			}
			if slices.Contains(o.Children, n) {
				continue
			}
			o.Children = append(o.Children, n)
			if n.Topic != nil {
				n.Topic.OpWriters = appendOp(n.Topic.OpWriters, o)
			} else {
				n.Proc.Parents = appendNode(n.Proc.Parents, Node{Op: o})
			}
		}
	}
	for _, o := range r.g.Operators {
		if len(o.Parents) == 0 && len(o.From) == 0 && o.kind.Edges == nil {
			r.errs.add(o.Name.Pos, "%s has no input: add from: [TOPIC, PROCESSOR or OPERATOR]", o.what())
		}
	}
	for _, t := range r.g.Topics {
		if t.Table != nil && (len(t.Readers) > 0 || len(t.OpReaders) > 0) {
			var who []string
			for _, p := range t.Readers {
				who = append(who, p.Name.Value)
			}
			for _, o := range t.OpReaders {
				who = append(who, o.Name.Value)
			}
			if t.Table.kind.Global {
				r.errs.add(t.Table.Topic.Pos, "%s reads topic %q, which is also read as a stream by %s: a topic is read once; read it as a table (op: table) to both join it and stream its updates", t.Table.what(), t.Name.Value, quoteList(who))
				continue
			}
			r.errs.add(t.Table.Topic.Pos, "%s reads topic %q, which is also read as a stream by %s: read the table's updates instead (from: [%s], then toStream)", t.Table.what(), t.Name.Value, quoteList(who), t.Table.Name.Value)
		}
	}
}

func appendOp(os []*OpNode, o *OpNode) []*OpNode {
	if slices.Contains(os, o) {
		return os
	}
	return append(os, o)
}

func (r *resolver) topicNames() []string {
	var out []string
	for _, t := range r.g.Topics {
		out = append(out, t.Name.Value)
	}
	return out
}

// opStores links aggregations and tables to their stores: a store declared
// under stores, or one implied by the operator with the types it infers.
func (r *resolver) opStores() {
	for _, o := range r.g.Operators {
		if o.Store.Value == "" {
			continue
		}
		sn, ok := r.stores[o.Store.Value]
		if !ok {
			st := &schema.Store{Name: o.Store, Changelog: true}
			sn = &StoreNode{Store: st, Implied: true}
			r.stores[st.Name.Value] = sn
			r.g.Stores = append(r.g.Stores, sn)
		}
		if sn.Op != nil {
			r.errs.add(o.Store.Pos, "%s keeps its rows in store %q, which %s keeps its rows in already: give each its own store", o.what(), o.Store.Value, sn.Op.what())
			continue
		}
		if k := sn.Kind.Value; (k == "window" || k == "session") && o.Window == nil {
			r.errs.add(o.Store.Pos, "%s keeps its rows in store %q, a %s store: it is not windowed (a plain aggregation or table keeps a key-value store)", o.what(), o.Store.Value, k)
		}
		sn.Op = o
		o.Rows = sn
	}
	slices.SortFunc(r.g.Stores, func(a, b *StoreNode) int { return strings.Compare(a.Name.Value, b.Name.Value) })
}

// opTypes infers what every operator reads and outputs, parents first, and
// checks each edge.
func (r *resolver) opTypes() {
	done := map[*OpNode]bool{}
	var visit func(o *OpNode)
	visit = func(o *OpNode) {
		if done[o] {
			return
		}
		done[o] = true
		for _, p := range o.Parents {
			if p.Op != nil {
				visit(p.Op)
			}
		}
		r.opType(o)
	}
	for _, o := range r.g.allOps() {
		visit(o)
	}
	for _, o := range r.g.allOps() {
		r.opChildren(o)
	}
}

// outOf is what node n outputs, and whether that is known.
func outOf(n Node) (KV, bool) {
	switch {
	case n.Topic != nil:
		return n.Topic.KV, true
	case n.Proc != nil:
		return n.Proc.Out, n.Proc.HasOut
	}
	return n.Op.Out, n.Op.HasOut
}

// opType settles what operator o reads, checks it against what its kind
// reads, and applies the kind's typing rule.
func (r *resolver) opType(o *OpNode) {
	k := o.kind
	// The inputs: what every parent outputs, alike unless the kind reads a
	// left and a right input of their own types.
	var first Node
	known := 0
	for i, p := range o.Parents {
		kv, ok := outOf(p)
		if !ok {
			continue
		}
		o.Ins = append(o.Ins, kv)
		known++
		if known == 1 {
			first, o.In = p, kv
			continue
		}
		if k.Inputs != leftRight && !kv.same(o.In) {
			r.errs.add(r.opFromPos(o, i), "%s: input %q carries %s but input %q carries %s: all inputs of an operator must carry the same key and value types", o.what(), p.Name(), kv, first.Name(), o.In)
		}
	}
	if known == 0 || known < len(o.Parents) && k.Inputs == leftRight {
		return // a parent's types are unknown: reported there
	}
	o.InTable = o.In.Value.is(ChangeOf)
	switch {
	case k.Inputs == oneInput && len(o.Parents) > 1:
		r.errs.add(r.opFromPos(o, 1), "%s reads from %d inputs: an operator reads one; merge them first ({op: merge, from: [...]})", o.what(), len(o.Parents))
	case k.Inputs == leftRight && len(o.Parents) != 2:
		r.errs.add(r.opFromPos(o, 0), "%s reads from %d inputs: it reads two, left first (from: [LEFT, RIGHT])", o.what(), len(o.Parents))
		return
	}
	if !r.globalReaderOK(o) {
		return
	}
	if first.Op != nil && first.Op.kind.Grouping && !k.Aggregation {
		r.errs.add(r.opFromPos(o, 0), "%s reads grouping %q: a grouping feeds an aggregation (count, reduce or aggregate)", o.what(), first.Name())
		return
	}
	k.Type(r, o, first)
}

// streamOnly reports o, reading from in, when what it reads is a table: its
// kind works on streams. It returns whether o reads a stream.
func (r *resolver) streamOnly(o *OpNode, in Node) bool {
	if o.InTable {
		r.errs.add(r.opFromPos(o, 0), "%s reads table %q (%s): %s works on a stream; turn the table into one first ({op: toStream, from: [%s]})", o.what(), in.Name(), o.In, o.kind.Name, in.Name())
		return false
	}
	return true
}

// nonNull reports o, reading from in, when a side it needs not null (its
// keys, its values) may be: kgen's groupings and tables do not drop null
// keys and values yet, as Kafka Streams' do. It returns whether none is.
func (r *resolver) nonNull(o *OpNode, in Node, keys, values bool) bool {
	side, t := "", TypeRef{}
	switch {
	case keys && o.In.Key.is(PointerTo):
		side, t = "keys", o.In.Key
	case values && o.In.Value.is(PointerTo):
		side, t = "values", o.In.Value
	default:
		return true
	}
	r.errs.add(r.opFromPos(o, 0), "%s reads %q, whose %s may be null (%s): %s takes no null %s yet; drop them first ({op: filter, from: [%s]}, then a mapValues or selectKey to %s)", o.what(), in.Name(), side, t.Name, o.kind.Name, side, in.Name(), t.unwrapped().Name)
	return false
}

// notWindowed reports o, reading from in, when its keys are windowed: the
// runtime has no repartition topic of windowed keys yet. It returns whether
// they are not.
func (r *resolver) notWindowed(o *OpNode, in Node) bool {
	if !o.In.Key.is(WindowedOf) {
		return true
	}
	r.errs.add(r.opFromPos(o, 0), "%s reads %q, whose keys are windowed (%s): %s of windowed keys is not supported yet; group by a key of your own ({op: groupBy, key: TYPE})", o.what(), in.Name(), o.In.Key.Name, o.kind.Name)
	return false
}

// passOn is the typing rule of an operator that outputs what it reads (a
// stream).
func passOn(r *resolver, o *OpNode, in Node) {
	if r.streamOnly(o, in) {
		o.Out, o.HasOut = o.In, true
	}
}

// builtin is a primitive type by its spec name.
func (r *resolver) builtin(name string) TypeRef {
	t, _ := r.u.Lookup(name)
	return TypeRef{Name: name, Type: t}
}

// opStoreTypes settles the types of an operator's store: those declared
// under stores must be the operator's, an implied store takes them.
func (r *resolver) opStoreTypes(o *OpNode, kv KV, keyFormat, valueFormat string) {
	sn := o.Rows
	if sn == nil {
		return
	}
	if !sn.Implied {
		if !sn.KV.same(kv) {
			r.errs.add(sn.Name.Pos, "store %q holds %s but %s keeps %s rows in it", sn.Name.Value, sn.KV, o.what(), kv)
		}
		return
	}
	sn.KV = kv
	sn.KeyFormat, sn.ValueFormat = keyFormat, valueFormat
	if sn.KeyFormat == "" || sn.KeyFormat == schema.FormatAvroConfluent {
		sn.KeyFormat = r.format(schema.Str{}, schema.Str{}, kv.Key, true)
	}
	if sn.ValueFormat == "" || sn.ValueFormat == schema.FormatAvroConfluent {
		sn.ValueFormat = r.format(schema.Str{}, schema.Str{}, kv.Value, false)
	}
	if sn.KeyFormat == schema.FormatAvroConfluent {
		sn.KeyFormat = schema.FormatAvro
	}
}

// keyChangedAbove says which node above grouping o, since the last point
// where records were partitioned by their key (a topic, a table, an
// aggregation), may have changed the key: "" when none did.
func (r *resolver) keyChangedAbove(o *OpNode) string {
	seen := map[Node]bool{}
	var walk func(n Node) string
	walk = func(n Node) string {
		if seen[n] {
			return ""
		}
		seen[n] = true
		var parents []Node
		switch {
		case n.Topic != nil:
			return ""
		case n.Proc != nil:
			if n.Proc.Rekeys {
				return fmt.Sprintf("processor %q re-keys (rekeys: true)", n.Proc.Name.Value)
			}
			if n.Proc.HasOut && !n.Proc.Out.Key.Same(n.Proc.In.Key) {
				return fmt.Sprintf("processor %q changes the key type", n.Proc.Name.Value)
			}
			parents = n.Proc.Parents
		default:
			if n.Op.kind.KeyChanging {
				return n.Op.what() + " changes the key"
			}
			if n.Op.Table || n.Op.kind.KeyedOutput {
				return "" // a table's rows live with their keys
			}
			parents = n.Op.Parents
		}
		for _, p := range parents {
			if why := walk(p); why != "" {
				return why
			}
		}
		return ""
	}
	for _, p := range o.Parents {
		if why := walk(p); why != "" {
			return why
		}
	}
	return ""
}

// opChildren checks what each operator sends its children.
func (r *resolver) opChildren(o *OpNode) {
	for _, c := range o.Children {
		switch {
		case c.Topic != nil:
			if !o.HasOut {
				continue
			}
			t := c.Topic
			out := o.Out
			if out.Value.is(PointerTo) && !t.KV.Value.is(PointerTo) {
				// toStream's deletions become tombstones.
				out.Value = out.Value.unwrapped()
				t.Tombstones = true
			}
			if !out.same(t.KV) {
				hint := ""
				if out.Key.is(WindowedOf) && !t.KV.Key.is(WindowedOf) && out.Key.unwrapped().Same(t.KV.Key) {
					hint = ": its keys are windowed; declare the topic windowed: true (written with Kafka Streams' windowed key serde)"
				}
				r.errs.add(r.opToPos(o, c), "%s outputs %s but topic %q takes %s%s", o.what(), o.Out, t.Name.Value, t.KV, hint)
			}
		case c.Proc != nil:
			if o.kind.Grouping {
				r.errs.add(r.opToPos(o, c), "%s feeds processor %q: a grouping feeds an aggregation (count, reduce or aggregate)", o.what(), c.Proc.Name.Value)
			}
		}
	}
	if o.kind.Grouping && len(o.Children) == 0 {
		r.errs.add(o.Name.Pos, "%s: nothing aggregates it: add an operator {op: count, from: [%s], store: NAME} (or reduce, aggregate)", o.what(), o.Name.Value)
	}
}

// checkSinks reports a topic written both with tombstones (after toStream)
// and without: one sink writes it, with one value serde.
func (r *resolver) checkSinks() {
	for _, t := range r.g.Topics {
		if !t.Tombstones {
			continue
		}
		for _, o := range t.OpWriters {
			if !o.Out.Value.is(PointerTo) {
				r.errs.add(r.opToPos(o, Node{Topic: t}), "%s writes to topic %q, which toStream writes to with tombstones: write the stream after a toStream or give it a topic of its own", o.what(), t.Name.Value)
			}
		}
		for _, p := range t.Writers {
			r.errs.add(r.childPos(p, Node{Topic: t}), "processor %q writes to topic %q, which toStream writes to with tombstones: give one of them a topic of its own", p.Name.Value, t.Name.Value)
		}
	}
}

func (r *resolver) opFromPos(o *OpNode, i int) schema.Pos {
	if i < len(o.Parents) {
		name := o.Parents[i].Name()
		for _, f := range o.From {
			if f.Value == name {
				return f.Pos
			}
		}
	}
	if len(o.From) > 0 {
		return o.From[min(i, len(o.From)-1)].Pos
	}
	return o.Name.Pos
}

func (r *resolver) opToPos(o *OpNode, c Node) schema.Pos {
	for _, t := range o.To {
		if t.Value == c.Name() {
			return t.Pos
		}
	}
	return o.Name.Pos
}

// emitOrder lists processors and operators (not arms: their branch adds
// them) parents first, ties broken by name: the order NewTopology adds them.
func emitOrder(g *Graph) []Node {
	var all []Node
	for _, p := range g.Processors {
		all = append(all, Node{Proc: p})
	}
	for _, o := range g.Operators {
		all = append(all, Node{Op: o})
	}
	slices.SortFunc(all, func(a, b Node) int { return strings.Compare(a.Name(), b.Name()) })
	done := map[Node]bool{}
	var out []Node
	var visit func(n Node)
	visit = func(n Node) {
		if n.Op != nil && n.Op.Split != nil {
			n = Node{Op: n.Op.Split}
		}
		if n.Topic != nil || done[n] {
			return
		}
		done[n] = true
		var parents []Node
		if n.Proc != nil {
			parents = n.Proc.Parents
		} else {
			parents = n.Op.Parents
		}
		for _, p := range parents {
			visit(p)
		}
		out = append(out, n)
	}
	for _, n := range all {
		visit(n)
	}
	return out
}

// shapeKey is a node's key in the TopologyShape kgen builds: the runtime
// node the records of parent from enter.
func shapeKey(from, n Node) string {
	switch {
	case n.Topic != nil:
		return "sink:" + n.Topic.Name.Value
	case n.Proc != nil:
		return "processor:" + n.Proc.Name.Value
	}
	return "op:" + n.Op.entryFrom(from)
}

// addOpShape adds the runtime nodes of operator o to shape, as NewTopology
// adds them.
func addOpShape(shape *stream.TopologyShape, o *OpNode) {
	out := "op:" + o.nodeName()
	add := func(name string, source bool) {
		shape.Nodes = append(shape.Nodes, name)
		if source {
			shape.Sources[name] = true
		}
	}
	nodes := o.nodes()
	if len(nodes) == 0 {
		return // a global table: no sub-topology reads it
	}
	for i, n := range nodes {
		name := "op:" + o.Name.Value + n.Suffix
		add(name, n.Source)
		switch {
		case n.Explicit:
			for _, f := range n.Feeds {
				shape.Children[name] = append(shape.Children[name], "op:"+o.Name.Value+f)
			}
		case n.Into != "":
			shape.Children[name] = []string{"op:" + o.Name.Value + n.Into}
		case !n.Sink && i+1 < len(nodes) && !nodes[i+1].Source:
			// Each node feeds the next, unless it writes a topic, the next
			// reads one, or it says which it feeds.
			shape.Children[name] = []string{"op:" + o.Name.Value + nodes[i+1].Suffix}
		}
	}
	for _, a := range o.Arms {
		shape.Children[out] = append(shape.Children[out], "op:"+a.nodeName())
		add("op:"+a.nodeName(), false)
		for _, c := range a.Children {
			shape.Children["op:"+a.nodeName()] = append(shape.Children["op:"+a.nodeName()], shapeKey(Node{Op: a}, c))
		}
	}
	if len(o.Arms) > 0 {
		return // the arms are its children
	}
	for _, c := range o.Children {
		shape.Children[out] = append(shape.Children[out], shapeKey(Node{Op: o}, c))
	}
}

// rekeyedOpState finds a key-changing operator (map, flatMap, selectKey)
// that feeds, in its own task, a processor keeping state per key: the same
// mistake rekeyedState reports for processors. Groupings repartition by
// themselves, and a kind whose output is partitioned by its key
// (KeyedOutput) has brought each key's records together, so the walk stops
// at them.
func (r *resolver) rekeyedOpState() {
	for _, o := range r.g.Operators {
		if !o.kind.KeyChanging {
			continue
		}
		seen := map[Node]bool{}
		var stateful *ProcNode
		var walk func(cs []Node)
		walk = func(cs []Node) {
			for _, c := range cs {
				if c.Topic != nil || seen[c] || stateful != nil {
					continue
				}
				seen[c] = true
				switch {
				case c.Proc != nil && len(c.Proc.Stores) > 0:
					stateful = c.Proc
				case c.Proc != nil:
					walk(c.Proc.Children)
				case !c.Op.kind.Grouping && !c.Op.kind.KeyedOutput:
					walk(c.Op.Children)
				}
			}
		}
		walk(o.Children)
		if stateful == nil {
			continue
		}
		r.errs.add(o.Name.Pos, "%s changes the key and feeds processor %q, whose store %q keeps state per key in the same task: the records of one key "+
			"would be spread over the tasks of every input partition. Route them through a repartition topic: "+
			"add topics: {%s-by-key: {key: %s, value: %s, repartition: true}}, give %q to: [%s-by-key] and %q from: [%s-by-key]",
			o.what(), stateful.Name.Value, stateful.Stores[0].Name.Value, o.Name.Value, o.Out.Key.Name, o.Out.Value.Name, o.Name.Value, o.Name.Value, stateful.Name.Value, o.Name.Value)
	}
}
