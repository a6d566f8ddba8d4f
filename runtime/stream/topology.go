package stream

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
)

// Topology is a DAG of sources, processors and sinks, with state stores
// attached to processors. Build it with AddSource, AddProcessor, AddSink and
// AddKeyValueStore; mistakes are collected and reported all at once by
// Validate (and by New). A Topology is a blueprint: every task instantiates its
// own processors and stores from it.
type Topology struct {
	nodes      map[string]*node
	nodeOrder  []string
	stores     map[string]*storeDef
	storeOrder []string
	errs       []error
	// repartitions are the repartition steps, in the order added.
	repartitions []repartitionDef
	// globals are the global tables (global.go), by name and in order.
	globals     map[string]*globalDef
	globalOrder []string

	subs       []*subtopology // set by Validate
	validated  bool
	validation error
}

// NewTopology returns an empty topology.
func NewTopology() *Topology {
	return &Topology{nodes: map[string]*node{}, stores: map[string]*storeDef{}}
}

type nodeKind int

const (
	sourceKind nodeKind = iota
	processorKind
	sinkKind
)

func (k nodeKind) String() string {
	return [...]string{"source", "processor", "sink"}[k]
}

// builder makes a node's runtime instance for one task. children are the
// already built instances of the node's children, in the node's child order.
type builder func(tk *task, children []any) (any, error)

type node struct {
	name     string
	kind     nodeKind
	topic    string // source and sink
	parents  []string
	children []string
	stores   []string

	inKey, inVal   reflect.Type // processor, sink
	outKey, outVal reflect.Type // source, processor

	build builder
	sub   int
	// repartition names the repartition step a source or sink belongs to;
	// its topic is the App's (see forApp).
	repartition string
}

// storeDef is a store of the topology: its kind says what its changelog
// needs and how it is restored; open types a task's backend as the store.
type storeDef struct {
	name string
	kind *state.StoreKind
	opts StoreOptions
	// retention is how long a store of a kind with a retention period
	// keeps data; zero for kinds that keep everything.
	retention time.Duration
	keyType   reflect.Type
	valType   reflect.Type
	open      func(b state.Backend, logger state.ChangeLogger) any
	processor []string
}

// StoreOptions configures a state store.
type StoreOptions struct {
	// Persistent, if not nil, opens the store on disk, in a directory of its
	// own under the task's state directory, so that a restart only replays
	// the changelog's tail past the store's checkpoint: for example
	// pebblestore.Opener(pebblestore.Options{}) from package
	// runtime/state/pebblestore. Nil keeps the store in an ordered in-memory
	// map, rebuilt from its changelog after a restart. The disk backends live
	// outside this package so that a program that does not use them does not
	// link them.
	Persistent state.Opener
	// Changelog logs every write to the topic <app>-<store>-changelog, from
	// which the store is restored, each record with the timestamp of the
	// record that caused the write. The topic is created with the configs
	// the store's kind needs (compacted, for a key-value store), and an
	// existing one that would lose records the store needs is refused.
	Changelog bool
	// Queryable says the store is read by interactive queries (QueryKeyValue,
	// QueryWindow...): a query then reads it while the unit processes, each
	// store operation holding a lock of the store's own (state.Cache's
	// ShareReads), which costs processing a few ns an operation. A query of
	// a store without it waits until its unit lets queries in, between tasks
	// or while it polls (runtime/DESIGN.md, "Queries").
	Queryable bool
}

type subtopology struct {
	id      int
	topics  []string // source topics, sorted
	nodes   []*node  // parents before children
	sources map[string]*node
	stores  []*storeDef
}

// logged says some store of the sub-topology has a changelog: its tasks'
// state can be restored elsewhere, and standbys of them kept warm.
// joins says some task reads several topics (a join, or a merge of
// co-partitioned topics): see unitMemoryOpts.
func (t *Topology) joins() bool {
	for _, s := range t.subs {
		if len(s.topics) > 1 {
			return true
		}
	}
	return false
}

func (s *subtopology) logged() bool {
	for _, st := range s.stores {
		if st.opts.Changelog {
			return true
		}
	}
	return false
}

func (t *Topology) errorf(format string, args ...any) {
	t.errs = append(t.errs, fmt.Errorf(format, args...))
}

func (t *Topology) addNode(n *node) bool {
	t.validated = false
	if n.name == "" {
		t.errorf("%s with an empty name", n.kind)
		return false
	}
	if old, dup := t.nodes[n.name]; dup {
		t.errorf("duplicate node name %q (a %s and a %s)", n.name, old.kind, n.kind)
		return false
	}
	t.nodes[n.name] = n
	t.nodeOrder = append(t.nodeOrder, n.name)
	return true
}

// SourceOption configures a source.
type SourceOption[K, V any] func(*sourceConfig[K, V])

type sourceConfig[K, V any] struct {
	timestamp func(key K, value V, recordTime time.Time) time.Time
}

// WithTimestamp sets the source's timestamp extractor: the record's time is
// what fn returns instead of the Kafka record timestamp. A zero time falls
// back to the record timestamp.
func WithTimestamp[K, V any](fn func(key K, value V, recordTime time.Time) time.Time) SourceOption[K, V] {
	return func(c *sourceConfig[K, V]) { c.timestamp = fn }
}

// AddSource adds a source node reading topic, decoding keys with kd and
// values with vd. A record whose key (or value) is null, where kd (or vd)
// does not decode null (serde.NullDecoder), is dropped before it is
// decoded: it is processed (its offset commits; stream time moves to its
// record time, unless the source has a timestamp extractor) but
// reaches no node, is counted in Stats.Dropped as DropNullKey (or
// DropNullValue) and logged at debug level; the first such drop of each
// source and side is also a warning. Read a side that carries nulls with a
// serde that decodes them (dsl.Nullable, serde.Bytes) to receive them.
func AddSource[K, V any](t *Topology, name, topic string, kd serde.Deserializer[K], vd serde.Deserializer[V], opts ...SourceOption[K, V]) {
	var cfg sourceConfig[K, V]
	for _, o := range opts {
		o(&cfg)
	}
	n := &node{
		name: name, kind: sourceKind, topic: topic,
		outKey: reflect.TypeFor[K](), outVal: reflect.TypeFor[V](),
	}
	n.build = sourceBuilder(n, kd, vd, cfg.timestamp)
	if topic == "" {
		t.errorf("source %q has no topic", name)
	}
	t.addNode(n)
}

// AddProcessor adds a processor node fed by parents. factory is called once
// per task, so each task has its own processor instance.
func AddProcessor[KIn, VIn, KOut, VOut any](t *Topology, name string, factory func() Processor[KIn, VIn, KOut, VOut], parents ...string) {
	n := &node{
		name: name, kind: processorKind, parents: parents,
		inKey: reflect.TypeFor[KIn](), inVal: reflect.TypeFor[VIn](),
		outKey: reflect.TypeFor[KOut](), outVal: reflect.TypeFor[VOut](),
	}
	n.build = func(tk *task, children []any) (any, error) {
		ctx := &Context[KOut, VOut]{nodeContext: nodeContext{t: tk, name: name, childNames: n.children, time: -1}}
		for i, c := range children {
			r, ok := c.(receiver[KOut, VOut])
			if !ok {
				return nil, fmt.Errorf("processor %q cannot forward to %q", name, n.children[i])
			}
			ctx.children = append(ctx.children, r)
		}
		p := factory()
		if p == nil {
			return nil, fmt.Errorf("processor %q: factory returned nil", name)
		}
		return &processorNode[KIn, VIn, KOut, VOut]{name: name, proc: p, ctx: ctx}, nil
	}
	if factory == nil {
		t.errorf("processor %q has no factory", name)
	}
	t.addNode(n)
}

// SinkConfig holds a sink's optional settings.
type SinkConfig[K, V any] struct {
	// Partitioner, when set, returns the partition in [0, partitions) for a
	// record instead of the default.
	Partitioner func(key K, value V, keyBytes []byte, partitions int32) int32
}

// AddSink adds a sink node writing to topic. A record goes to the partition
// Kafka's Java clients would choose for its serialized key (murmur2), so kgen
// output co-partitions with any other Kafka application; records with a null
// key are spread round-robin.
func AddSink[K, V any](t *Topology, name, topic string, ks serde.Serializer[K], vs serde.Serializer[V], parents ...string) {
	AddSinkWith(t, name, topic, ks, vs, SinkConfig[K, V]{}, parents...)
}

// AddSinkWith is AddSink with settings.
func AddSinkWith[K, V any](t *Topology, name, topic string, ks serde.Serializer[K], vs serde.Serializer[V], cfg SinkConfig[K, V], parents ...string) {
	n := &node{
		name: name, kind: sinkKind, topic: topic, parents: parents,
		inKey: reflect.TypeFor[K](), inVal: reflect.TypeFor[V](),
	}
	n.build = sinkBuilder(n, ks, vs, cfg.Partitioner)
	if topic == "" {
		t.errorf("sink %q has no topic", name)
	}
	t.addNode(n)
}

// sourceBuilder makes a source's instance for a task. The topic is the one
// of the task's topology, which names the App's repartition topics.
func sourceBuilder[K, V any](n *node, kd serde.Deserializer[K], vd serde.Deserializer[V], timestamp func(K, V, time.Time) time.Time) builder {
	keyNull, valueNull, warned := serde.DecodesNull(kd), serde.DecodesNull(vd), &nullWarnings{}
	return func(tk *task, children []any) (any, error) {
		topic := tk.topo.nodes[n.name].topic
		src := &sourceNode[K, V]{name: n.name, topicName: topic, kd: kd, vd: vd, timestamp: timestamp, t: tk,
			keyNull: keyNull, valueNull: valueNull, warned: warned}
		for i, c := range children {
			r, ok := c.(receiver[K, V])
			if !ok {
				return nil, fmt.Errorf("source %q cannot forward to %q", n.name, tk.topo.nodes[n.name].children[i])
			}
			src.children = append(src.children, r)
		}
		return src, nil
	}
}

// sinkBuilder makes a sink's instance for a task, over the topic of the
// task's topology.
func sinkBuilder[K, V any](n *node, ks serde.Serializer[K], vs serde.Serializer[V], partitioner func(K, V, []byte, int32) int32) builder {
	return func(tk *task, _ []any) (any, error) {
		topic := tk.topo.nodes[n.name].topic
		parts := tk.env.partitions(topic)
		if parts <= 0 {
			return nil, fmt.Errorf("sink %q: topic %q does not exist", n.name, topic)
		}
		return &sinkNode[K, V]{name: n.name, topic: topic, ks: ks, vs: vs, partitioner: partitioner, t: tk, partitions: parts}, nil
	}
}

// AddKeyValueStore adds a key-value store and attaches it to processors.
// Keys are ordered by their serialized bytes in range scans.
func AddKeyValueStore[K, V any](t *Topology, name string, ks serde.Serde[K], vs serde.Serde[V], opts StoreOptions, processors ...string) {
	t.addStore(&storeDef{
		name: name, kind: state.KeyValue, opts: opts,
		keyType: reflect.TypeFor[K](), valType: reflect.TypeFor[V](),
		open: func(b state.Backend, logger state.ChangeLogger) any {
			return state.NewKeyValueStore(name, b, ks, vs, logger)
		},
	}, processors)
}

// addStore adds a store of any kind and attaches it to processors: each
// kind's Add function (AddKeyValueStore) fills def with its kind and its
// typed open.
func (t *Topology) addStore(def *storeDef, processors []string) {
	t.validated = false
	if def.name == "" {
		t.errorf("store with an empty name")
		return
	}
	if _, dup := t.stores[def.name]; dup {
		t.errorf("duplicate store name %q", def.name)
		return
	}
	t.stores[def.name] = def
	t.storeOrder = append(t.storeOrder, def.name)
	for _, p := range processors {
		t.ConnectStore(def.name, p)
	}
}

// ConnectStore gives processor access to store.
func (t *Topology) ConnectStore(store, processor string) {
	t.validated = false
	s, ok := t.stores[store]
	if !ok {
		t.errorf("processor %q: unknown store %q", processor, store)
		return
	}
	s.processor = append(s.processor, processor)
}

// Validate checks the whole topology and reports every problem it finds.
func (t *Topology) Validate() error {
	if t.validated {
		return t.validation
	}
	t.validated = true
	t.validation = t.validate()
	return t.validation
}

func (t *Topology) validate() error {
	errs := slices.Clone(t.errs)
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if len(t.nodes) == 0 {
		add("topology has no nodes")
	}
	for _, name := range t.nodeOrder {
		t.nodes[name].children = nil
		t.nodes[name].stores = nil
	}
	topicSource := map[string]string{}
	for _, name := range t.nodeOrder {
		n := t.nodes[name]
		if n.kind == sourceKind {
			if other, ok := topicSource[n.topic]; ok {
				add("topic %q is read by two sources, %q and %q", n.topic, other, n.name)
			}
			topicSource[n.topic] = n.name
			continue
		}
		if len(n.parents) == 0 {
			add("%s %q has no parent", n.kind, n.name)
		}
		for _, pname := range n.parents {
			p, ok := t.nodes[pname]
			switch {
			case !ok:
				add("%s %q: unknown parent %q", n.kind, n.name, pname)
				continue
			case p.kind == sinkKind:
				add("%s %q: parent %q is a sink, and sinks have no children", n.kind, n.name, pname)
				continue
			}
			p.children = append(p.children, n.name)
			if p.outKey != n.inKey || p.outVal != n.inVal {
				add("%s %q forwards (%v, %v) but child %s %q takes (%v, %v)",
					p.kind, p.name, p.outKey, p.outVal, n.kind, n.name, n.inKey, n.inVal)
			}
		}
	}
	for _, sname := range t.storeOrder {
		s := t.stores[sname]
		if len(s.processor) == 0 {
			add("store %q is not attached to any processor", s.name)
		}
		for _, pname := range s.processor {
			p, ok := t.nodes[pname]
			if !ok || p.kind != processorKind {
				add("store %q: unknown processor %q", s.name, pname)
				continue
			}
			p.stores = append(p.stores, s.name)
		}
	}
	if cycle := t.findCycle(); cycle != nil {
		add("cycle: %s", strings.Join(cycle, " -> "))
	}
	t.validateGlobals(topicSource, add)
	if len(errs) > 0 {
		return fmt.Errorf("invalid topology: %w", errors.Join(errs...))
	}
	t.subs = t.split()
	return nil
}

// findCycle returns the nodes of one cycle, or nil.
// TopologyShape is a topology reduced to what decides its sub-topologies:
// node names in the order they were added, which are sources, each node's
// children, and the processors sharing each store. The generator builds
// one from a spec, so it numbers sub-topologies (and so tasks) exactly as
// the runtime will.
type TopologyShape struct {
	Nodes       []string
	Sources     map[string]bool
	Children    map[string][]string
	StoreOwners [][]string
}

// Subtopologies numbers the sub-topologies of s: nodes joined by an edge or
// a shared store are in one, numbered in the order their first source was
// added. It returns each node's number; a node in no component with a
// source is absent.
func (s TopologyShape) Subtopologies() map[string]int {
	parent := map[string]string{}
	var find func(string) string
	find = func(x string) string {
		if p, ok := parent[x]; ok && p != x {
			r := find(p)
			parent[x] = r
			return r
		}
		parent[x] = x
		return x
	}
	union := func(a, b string) { parent[find(a)] = find(b) }
	for _, name := range s.Nodes {
		for _, c := range s.Children[name] {
			union(name, c)
		}
	}
	for _, owners := range s.StoreOwners {
		for _, p := range owners[min(1, len(owners)):] {
			union(owners[0], p)
		}
	}
	roots := map[string]int{}
	for _, name := range s.Nodes {
		if !s.Sources[name] {
			continue
		}
		if _, ok := roots[find(name)]; !ok {
			roots[find(name)] = len(roots)
		}
	}
	ids := map[string]int{}
	for _, name := range s.Nodes {
		if id, ok := roots[find(name)]; ok {
			ids[name] = id
		}
	}
	return ids
}

func (t *Topology) findCycle() []string {
	shape := TopologyShape{Nodes: t.nodeOrder, Children: map[string][]string{}}
	for _, name := range t.nodeOrder {
		shape.Children[name] = t.nodes[name].children
	}
	if cycles := shape.Cycles(); len(cycles) > 0 {
		return cycles[0]
	}
	return nil
}

// Cycles lists every cycle of s found by a depth-first walk from each node
// in order: each as the nodes from where it closes back to the same node
// ("a", "b", "a"). The generator reports each one at its place; the
// runtime refuses a topology with any.
func (s TopologyShape) Cycles() [][]string {
	const (
		unseen = iota
		open
		done
	)
	mark := map[string]int{}
	var stack []string
	var cycles [][]string
	var visit func(name string)
	visit = func(name string) {
		mark[name] = open
		stack = append(stack, name)
		for _, c := range s.Children[name] {
			switch mark[c] {
			case unseen:
				visit(c)
			case open:
				i := slices.Index(stack, c)
				cycles = append(cycles, append(slices.Clone(stack[i:]), c))
			}
		}
		stack = stack[:len(stack)-1]
		mark[name] = done
	}
	for _, name := range s.Nodes {
		if mark[name] == unseen {
			visit(name)
		}
	}
	return cycles
}

// split groups nodes into sub-topologies: nodes joined by an edge or by a
// shared store must run in the same task.
func (t *Topology) split() []*subtopology {
	shape := TopologyShape{Nodes: t.nodeOrder, Sources: map[string]bool{}, Children: map[string][]string{}}
	for _, name := range t.nodeOrder {
		n := t.nodes[name]
		shape.Sources[name] = n.kind == sourceKind
		shape.Children[name] = n.children
	}
	for _, sname := range t.storeOrder {
		shape.StoreOwners = append(shape.StoreOwners, t.stores[sname].processor)
	}
	ids := shape.Subtopologies()
	n := 0
	for _, id := range ids {
		n = max(n, id+1)
	}
	subs := make([]*subtopology, n)
	for i := range subs {
		subs[i] = &subtopology{id: i, sources: map[string]*node{}}
	}
	for _, name := range t.topoOrder() {
		n := t.nodes[name]
		s := subs[ids[name]]
		n.sub = s.id
		s.nodes = append(s.nodes, n)
		if n.kind == sourceKind {
			s.topics = append(s.topics, n.topic)
			s.sources[n.topic] = n
		}
	}
	for _, sname := range t.storeOrder {
		st := t.stores[sname]
		s := subs[ids[st.processor[0]]]
		s.stores = append(s.stores, st)
	}
	for _, s := range subs {
		sort.Strings(s.topics)
	}
	return subs
}

// topoOrder lists nodes parents first, keeping insertion order where free.
func (t *Topology) topoOrder() []string {
	indeg := map[string]int{}
	for _, name := range t.nodeOrder {
		indeg[name] = len(t.nodes[name].parents)
	}
	var order []string
	queue := []string{}
	for _, name := range t.nodeOrder {
		if indeg[name] == 0 {
			queue = append(queue, name)
		}
	}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		order = append(order, name)
		for _, c := range t.nodes[name].children {
			indeg[c]--
			if indeg[c] == 0 {
				queue = append(queue, c)
			}
		}
	}
	return order
}

// SourceTopics lists every topic the topology reads, sorted.
func (t *Topology) SourceTopics() []string {
	var topics []string
	for _, name := range t.nodeOrder {
		if n := t.nodes[name]; n.kind == sourceKind {
			topics = append(topics, n.topic)
		}
	}
	sort.Strings(topics)
	return topics
}

// SinkTopics lists every topic the topology writes, sorted and deduplicated.
func (t *Topology) SinkTopics() []string {
	var topics []string
	for _, name := range t.nodeOrder {
		if n := t.nodes[name]; n.kind == sinkKind && !slices.Contains(topics, n.topic) {
			topics = append(topics, n.topic)
		}
	}
	sort.Strings(topics)
	return topics
}

// Describe returns a readable description of a valid topology, sub-topology
// by sub-topology, in the form Kafka Streams users know.
func (t *Topology) Describe() string {
	if err := t.Validate(); err != nil {
		return err.Error()
	}
	var b strings.Builder
	b.WriteString("Topologies:\n")
	for _, s := range t.subs {
		fmt.Fprintf(&b, "  Sub-topology: %d\n", s.id)
		for _, n := range s.nodes {
			switch n.kind {
			case sourceKind:
				fmt.Fprintf(&b, "    Source: %s (topics: [%s])\n", n.name, n.topic)
			case processorKind:
				fmt.Fprintf(&b, "    Processor: %s (stores: [%s])\n", n.name, strings.Join(n.stores, ", "))
			case sinkKind:
				fmt.Fprintf(&b, "    Sink: %s (topic: %s)\n", n.name, n.topic)
			}
			if len(n.children) > 0 {
				fmt.Fprintf(&b, "      --> %s\n", strings.Join(n.children, ", "))
			}
			if len(n.parents) > 0 {
				fmt.Fprintf(&b, "      <-- %s\n", strings.Join(n.parents, ", "))
			}
		}
	}
	// Global tables belong to no sub-topology (Kafka Streams lists its
	// global stores apart too).
	for _, name := range t.globalOrder {
		fmt.Fprintf(&b, "  Global table: %s (topic: %s)\n", name, t.globals[name].topic)
	}
	return b.String()
}

// Mermaid renders a valid topology as a Mermaid flowchart.
func (t *Topology) Mermaid() string {
	if err := t.Validate(); err != nil {
		return "%% " + strings.ReplaceAll(err.Error(), "\n", "\n%% ")
	}
	return t.Diagram().Mermaid()
}

// DOT renders a valid topology in Graphviz's DOT language.
func (t *Topology) DOT() string {
	if err := t.Validate(); err != nil {
		return "// " + strings.ReplaceAll(err.Error(), "\n", "\n// ")
	}
	return t.Diagram().DOT()
}

// Diagram describes a valid topology for drawing: its nodes and stores by
// sub-topology, and its edges.
func (t *Topology) Diagram() Diagram {
	var d Diagram
	if t.Validate() != nil {
		return d
	}
	kinds := map[nodeKind]DiagramKind{sourceKind: DiagramSource, processorKind: DiagramProcessor, sinkKind: DiagramSink}
	for _, s := range t.subs {
		g := DiagramGroup{ID: s.id}
		for _, n := range s.nodes {
			g.Nodes = append(g.Nodes, DiagramNode{Kind: kinds[n.kind], Name: n.name})
		}
		for _, st := range s.stores {
			g.Nodes = append(g.Nodes, DiagramNode{Kind: DiagramStore, Name: st.name})
		}
		d.Groups = append(d.Groups, g)
	}
	for _, name := range t.nodeOrder {
		n := t.nodes[name]
		for _, c := range n.children {
			d.Edges = append(d.Edges, DiagramEdge{From: name, To: c})
		}
		for _, st := range n.stores {
			d.Edges = append(d.Edges, DiagramEdge{From: name, To: "store:" + st, Store: true})
		}
	}
	return d
}

func mermaidID(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, name)
}

// anyPersistent says whether a store of t lives on disk (unless every store
// is kept in memory).
func (t *Topology) anyPersistent(memoryStores bool) bool {
	if memoryStores {
		return false
	}
	for _, s := range t.stores {
		if s.opts.Persistent != nil {
			return true
		}
	}
	for _, g := range t.globals {
		if g.opts.Persistent != nil {
			return true
		}
	}
	return false
}
