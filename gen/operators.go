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
	// Kind is the operator kind (schema.OpFilter...), or opArm for an arm.
	Kind  string
	Ident string
	Go    OpNames
	// In is what the operator reads, Out what it outputs (meaningful when
	// HasOut). A table's rows are carried as dsl.Change values; what
	// toStream outputs as pointers, nil for a deletion.
	In, Out  KV
	HasOut   bool
	Parents  []Node
	Children []Node
	// Table says the operator outputs a table (Out.Value is a dsl.Change);
	// InTable that it reads one.
	Table, InTable bool
	// Rows is the store of an aggregation or a table (the spec's store:).
	Rows *StoreNode
	// Repartition says a grouping reads through its repartition topic
	// <app>-<name>-repartition; Why says which operator or processor may
	// have changed the key.
	Repartition bool
	Why         string
	// KeyFormat and ValueFormat are the formats of a grouping's
	// repartition topic.
	KeyFormat, ValueFormat string
	// Arms are a branch's arms, the default last; Split is an arm's branch,
	// ArmName its own name and Default whether it is the default arm.
	Arms    []*OpNode
	Split   *OpNode
	ArmName string
	Default bool
	// Grouping is the grouping an aggregation reads.
	Grouping    *OpNode
	Subtopology int
	// UpSubtopology is, for a grouping that repartitions, the sub-topology
	// writing its repartition topic (Subtopology reads it).
	UpSubtopology int
}

// opArm is the Kind of a branch's arm.
const opArm = "arm"

// OpNames are the names generated for one operator.
type OpNames struct {
	// Funcs are the methods of Processors the operator calls, in order
	// (a predicate; an initializer and an aggregator...).
	Funcs []string
	// KeySerde and ValueSerde are the Serdes fields of a grouping's
	// repartition topic.
	KeySerde, ValueSerde string
}

// Node name of the operator in the runtime: what its children name as
// their parent.
func (o *OpNode) nodeName() string { return o.Name.Value }

// entryNode is the runtime node that receives what a parent sends to o.
func (o *OpNode) entryNode() string {
	switch {
	case o.Kind == schema.OpGroupBy:
		return o.Name.Value + "-select"
	case o.Kind == schema.OpGroupByKey && o.Repartition:
		return o.Name.Value + "-repartition-sink"
	}
	return o.Name.Value
}

func (o *OpNode) what() string {
	if o.Kind == opArm {
		return fmt.Sprintf("arm %q of branch %q", o.ArmName, o.Split.Name.Value)
	}
	return fmt.Sprintf("operator %q (%s)", o.Name.Value, o.Kind)
}

func isGrouping(kind string) bool { return kind == schema.OpGroupBy || kind == schema.OpGroupByKey }

func isAggregation(kind string) bool {
	return kind == schema.OpCount || kind == schema.OpReduce || kind == schema.OpAggregate
}

// keyChanging operators may forward records with other keys than they got.
func keyChanging(kind string) bool {
	return kind == schema.OpMap || kind == schema.OpFlatMap || kind == schema.OpSelectKey
}

// operators builds the operator nodes and their arms.
func (r *resolver) operators() {
	for _, op := range r.spec.Operators {
		o := &OpNode{Operator: op, Kind: op.Op.Value}
		if _, ok := schema.OpKeysOf(o.Kind); !ok {
			continue // reported by the loader
		}
		if !r.claim(op.Name, fmt.Sprintf("operator %q", op.Name.Value)) {
			continue
		}
		r.ops[op.Name.Value] = o
		r.g.Operators = append(r.g.Operators, o)
		if o.Kind != schema.OpBranch {
			continue
		}
		arms := slices.Clone(op.Branches)
		if op.Default.Value != "" {
			arms = append(arms, op.Default)
		}
		for i, a := range arms {
			name := schema.Str{Value: op.Name.Value + "-" + a.Value, Pos: a.Pos}
			arm := &OpNode{Operator: &schema.Operator{Name: name}, Kind: opArm, Split: o, ArmName: a.Value, Default: i == len(op.Branches)}
			if slices.ContainsFunc(arms[:i], func(b schema.Str) bool { return b.Value == a.Value }) {
				r.errs.add(a.Pos, "branch %q: arm %q named twice", op.Name.Value, a.Value)
				continue
			}
			if !r.claim(name, fmt.Sprintf("arm %q of branch %q", a.Value, op.Name.Value)) {
				continue
			}
			arm.Parents = []Node{{Op: o}}
			o.Children = append(o.Children, Node{Op: arm})
			o.Arms = append(o.Arms, arm)
			r.ops[name.Value] = arm
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
		if o.Kind == schema.OpTable {
			t, ok := r.topics[o.Topic.Value]
			if !ok {
				if o.Topic.Value != "" {
					r.errs.add(o.Topic.Pos, "%s reads topic %q, which is not a topic of the spec%s", o.what(), o.Topic.Value, schema.Suggest(o.Topic.Value, r.topicNames()))
				}
				continue
			}
			if t.Repartition {
				r.errs.add(o.Topic.Pos, "%s reads topic %q, a repartition topic: a table reads a topic of the spec", o.what(), t.Name.Value)
			}
			if t.Table != nil {
				r.errs.add(o.Topic.Pos, "%s reads topic %q, which table %q reads already", o.what(), t.Name.Value, t.Table.Name.Value)
				continue
			}
			if t.Timestamp.Value != "" {
				// dsl.Table adds its own source, without an extractor.
				r.errs.add(t.Timestamp.Pos, "topic %q: table %q reads it with the records' own timestamps: a timestamp field is not supported on a table's topic yet", t.Name.Value, o.Name.Value)
			}
			t.Table = o
			o.Parents = []Node{{Topic: t}}
			continue
		}
		for _, f := range o.From {
			n, ok := r.lookup(f.Value)
			switch {
			case !ok:
				r.errs.add(f.Pos, "%s reads from %q, which is neither a topic, a processor nor an operator%s", o.what(), f.Value, schema.Suggest(f.Value, r.names()))
				continue
			case n.Op == o:
				r.errs.add(f.Pos, "%s reads from itself", o.what())
				continue
			case n.Op != nil && n.Op.Kind == schema.OpBranch:
				var arms []string
				for _, a := range n.Op.Arms {
					arms = append(arms, a.Name.Value)
				}
				r.errs.add(f.Pos, "%s reads from branch %q itself: read one of its arms (%s)", o.what(), f.Value, strings.Join(arms, ", "))
				continue
			case n.Op != nil && n.Op.Kind == schema.OpForeach:
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
		if len(o.Parents) == 0 && len(o.From) == 0 && o.Kind != schema.OpTable {
			r.errs.add(o.Name.Pos, "%s has no input: add from: [TOPIC, PROCESSOR or OPERATOR]", o.what())
		}
	}
	for _, o := range r.g.Operators {
		if len(o.Parents) == 0 && len(o.From) == 0 && o.Kind != schema.OpTable {
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

func (r *resolver) opType(o *OpNode) {
	// The input: what every parent outputs, alike.
	var first Node
	known := false
	for i, p := range o.Parents {
		kv, ok := outOf(p)
		if !ok {
			continue
		}
		if !known {
			first, o.In, known = p, kv, true
			continue
		}
		if !kv.same(o.In) {
			r.errs.add(r.opFromPos(o, i), "%s: input %q carries %s but input %q carries %s: all inputs of an operator must carry the same key and value types", o.what(), p.Name(), kv, first.Name(), o.In)
		}
	}
	if o.Kind == schema.OpTable {
		if len(o.Parents) == 1 {
			t := o.Parents[0].Topic
			o.Out, o.HasOut, o.Table = KV{t.KV.Key, t.KV.Value.wrapped(ChangeOf)}, true, true
			r.opStoreTypes(o, KV{t.KV.Key, t.KV.Value}, t.KeyFormat, t.ValueFormat)
		}
		return
	}
	if !known {
		return // a parent's types are unknown: reported there
	}
	o.InTable = o.In.Value.Wrap == ChangeOf
	kind := o.Kind
	if len(o.Parents) > 1 && kind != schema.OpMerge {
		r.errs.add(r.opFromPos(o, 1), "%s reads from %d inputs: an operator reads one; merge them first ({op: merge, from: [...]})", o.what(), len(o.Parents))
	}
	streamOnly := func() bool {
		if o.InTable {
			r.errs.add(r.opFromPos(o, 0), "%s reads table %q (%s): %s works on a stream; turn the table into one first ({op: toStream, from: [%s]})", o.what(), first.Name(), o.In, kind, first.Name())
			return false
		}
		return true
	}
	if first.Op != nil && isGrouping(first.Op.Kind) && !isAggregation(kind) {
		r.errs.add(r.opFromPos(o, 0), "%s reads grouping %q: a grouping feeds an aggregation (count, reduce or aggregate)", o.what(), first.Name())
		return
	}
	switch kind {
	case schema.OpFilter, schema.OpFilterNot, schema.OpPeek, schema.OpMerge, schema.OpBranch, opArm:
		if streamOnly() {
			o.Out, o.HasOut = o.In, true
		}
	case schema.OpForeach:
		streamOnly()
	case schema.OpMap, schema.OpFlatMap:
		if streamOnly() {
			o.Out, o.HasOut = KV{r.typ(o.Key), r.typ(o.Value)}, true
		}
	case schema.OpMapValues, schema.OpFlatMapValues:
		if streamOnly() {
			o.Out, o.HasOut = KV{o.In.Key, r.typ(o.Value)}, true
		}
	case schema.OpSelectKey:
		if streamOnly() {
			o.Out, o.HasOut = KV{r.typ(o.Key), o.In.Value}, true
		}
	case schema.OpGroupByKey:
		if !streamOnly() {
			return
		}
		o.Out, o.HasOut = o.In, true
		o.Why = r.keyChangedAbove(o)
		o.Repartition = o.Why != ""
	case schema.OpGroupBy:
		if o.InTable {
			if o.Value.Value == "" {
				r.errs.add(o.Name.Pos, "%s groups table %q: say the value type its function outputs too (value: TYPE), as KTable.groupBy maps each row to a new key and value", o.what(), first.Name())
				return
			}
			o.Out, o.HasOut = KV{r.typ(o.Key), r.typ(o.Value).wrapped(ChangeOf)}, true
		} else {
			if o.Value.Value != "" {
				r.errs.add(o.Keys["value"], "%s groups a stream by a new key and keeps the values: it takes no value (to change values too, put a map before it)", o.what())
			}
			o.Out, o.HasOut = KV{r.typ(o.Key), o.In.Value}, true
		}
		o.Repartition, o.Why = true, "groupBy"
	case schema.OpCount, schema.OpReduce, schema.OpAggregate:
		g := first.Op
		if g == nil || !isGrouping(g.Kind) {
			r.errs.add(r.opFromPos(o, 0), "%s reads %q, which is not a grouping: aggregate a grouped stream ({op: groupByKey, from: [%s]} or groupBy)", o.what(), first.Name(), first.Name())
			return
		}
		o.Grouping, o.InTable = g, g.Out.Value.Wrap == ChangeOf
		in := g.Out.Value.plain()
		va := in
		switch kind {
		case schema.OpCount:
			va = r.builtin("int64")
		case schema.OpAggregate:
			va = r.typ(o.Value)
		}
		o.Out, o.HasOut, o.Table = KV{g.Out.Key, va.wrapped(ChangeOf)}, true, true
		r.opStoreTypes(o, KV{g.Out.Key, va}, "", "")
	case schema.OpToStream:
		if !o.InTable {
			r.errs.add(r.opFromPos(o, 0), "%s reads %q, which is not a table (%s): toStream turns a table's updates into a stream", o.what(), first.Name(), o.In)
			return
		}
		o.Out, o.HasOut = KV{o.In.Key, o.In.Value.plain().wrapped(PointerTo)}, true
	}
	if isGrouping(kind) && o.HasOut {
		o.KeyFormat = r.format(schema.Str{}, schema.Str{}, o.Out.Key, true)
		o.ValueFormat = r.format(schema.Str{}, schema.Str{}, o.Out.Value.plain(), false)
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
			if keyChanging(n.Op.Kind) {
				return n.Op.what() + " changes the key"
			}
			if n.Op.Table || n.Op.Kind == schema.OpToStream {
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
			if out.Value.Wrap == PointerTo {
				// toStream's deletions become tombstones.
				out.Value = out.Value.plain()
				t.Nullable = true
			}
			if !out.same(t.KV) {
				r.errs.add(r.opToPos(o, c), "%s outputs %s but topic %q takes %s", o.what(), o.Out, t.Name.Value, t.KV)
			}
		case c.Proc != nil:
			if isGrouping(o.Kind) {
				r.errs.add(r.opToPos(o, c), "%s feeds processor %q: a grouping feeds an aggregation (count, reduce or aggregate)", o.what(), c.Proc.Name.Value)
			}
		}
	}
	if isGrouping(o.Kind) && len(o.Children) == 0 {
		r.errs.add(o.Name.Pos, "%s: nothing aggregates it: add an operator {op: count, from: [%s], store: NAME} (or reduce, aggregate)", o.what(), o.Name.Value)
	}
}

// checkSinks reports a topic written both with tombstones (after toStream)
// and without: one sink writes it, with one value serde.
func (r *resolver) checkSinks() {
	for _, t := range r.g.Topics {
		if !t.Nullable {
			continue
		}
		for _, o := range t.OpWriters {
			if o.Out.Value.Wrap != PointerTo {
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

// opFuncs are the methods of Processors an operator calls, as suffixes of
// its identifier, with what each does.
func opFuncs(o *OpNode) []string {
	switch o.Kind {
	case schema.OpFilter, schema.OpFilterNot, schema.OpMap, schema.OpMapValues, schema.OpFlatMap, schema.OpFlatMapValues,
		schema.OpSelectKey, schema.OpPeek, schema.OpForeach, schema.OpGroupBy:
		return []string{""}
	case schema.OpReduce:
		if o.InTable {
			return []string{"Add", "Subtract"}
		}
		return []string{"Reduce"}
	case schema.OpAggregate:
		if o.InTable {
			return []string{"Init", "Add", "Subtract"}
		}
		return []string{"Init", "Aggregate"}
	case opArm:
		if !o.Default {
			return []string{""}
		}
	}
	return nil
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
		if n.Op != nil && n.Op.Kind == opArm {
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
// node a parent's records enter.
func shapeKey(n Node) string {
	switch {
	case n.Topic != nil:
		return "sink:" + n.Topic.Name.Value
	case n.Proc != nil:
		return "processor:" + n.Proc.Name.Value
	}
	return "op:" + n.Op.entryNode()
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
	switch {
	case o.Kind == schema.OpTable:
		add("op:"+o.Name.Value+"-source", true)
		shape.Children["op:"+o.Name.Value+"-source"] = []string{out}
		add(out, false)
	case o.Kind == schema.OpGroupBy:
		add("op:"+o.Name.Value+"-select", false)
		shape.Children["op:"+o.Name.Value+"-select"] = []string{"op:" + o.Name.Value + "-repartition-sink"}
		add("op:"+o.Name.Value+"-repartition-sink", false)
		add(out, true)
	case o.Kind == schema.OpGroupByKey && o.Repartition:
		add("op:"+o.Name.Value+"-repartition-sink", false)
		add(out, true)
	default:
		add(out, false)
	}
	for _, a := range o.Arms {
		shape.Children[out] = append(shape.Children[out], "op:"+a.nodeName())
		add("op:"+a.nodeName(), false)
		for _, c := range a.Children {
			shape.Children["op:"+a.nodeName()] = append(shape.Children["op:"+a.nodeName()], shapeKey(c))
		}
	}
	if o.Kind == schema.OpBranch {
		return
	}
	for _, c := range o.Children {
		shape.Children[out] = append(shape.Children[out], shapeKey(c))
	}
}

// rekeyedOpState finds a key-changing operator (map, flatMap, selectKey)
// that feeds, in its own task, a processor keeping state per key: the same
// mistake rekeyedState reports for processors. Groupings repartition by
// themselves, so the walk stops at them.
func (r *resolver) rekeyedOpState() {
	for _, o := range r.g.Operators {
		if !keyChanging(o.Kind) {
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
				case !isGrouping(c.Op.Kind):
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
