package gen

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/kgen-dev/kgen/gen/model"
	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/kgen-dev/kgen/schema"
)

// Graph is a validated spec with every name resolved: what the emitters
// read. Slices are sorted by name.
type Graph struct {
	Spec       *schema.Spec
	Universe   *model.Universe // the record types the spec was resolved against
	Topics     []*TopicNode
	Stores     []*StoreNode
	Processors []*ProcNode
	// Operators are the operators of the spec; a branch's arms hang off it.
	Operators []*OpNode

	pkgScope *scope // package-level generated names, set by nameGraph
}

// KV is a key and value type pair.
type KV struct{ Key, Value TypeRef }

func (kv KV) same(o KV) bool { return kv.Key.Same(o.Key) && kv.Value.Same(o.Value) }

func (kv KV) String() string { return kv.Key.Name + "," + kv.Value.Name }

// TopicNode is a resolved topic.
type TopicNode struct {
	*schema.Topic
	Ident       string // Go identifier form of the name ("WordCounts")
	Go          TopicNames
	KV          KV
	KeyFormat   string
	ValueFormat string
	// TimestampField is the value's field holding the event time, or nil.
	TimestampField *model.Field
	Readers        []*ProcNode // processors reading the topic, sorted
	Writers        []*ProcNode // processors writing to it, sorted
	// OpReaders and OpWriters are the operators reading and writing it
	// (a table reading it is Table instead).
	OpReaders, OpWriters []*OpNode
	Table                *OpNode
	// Tombstones says toStream writes to it: a deleted row is a tombstone.
	Tombstones bool
	// Windows are the windows of a windowed topic's keys (windowed: true),
	// its writers': its key serde wraps the key's with them.
	Windows *schema.Window
}

// read says whether a source reads the topic as a stream.
func (t *TopicNode) read() bool { return len(t.Readers) > 0 || len(t.OpReaders) > 0 }

// written says whether the application writes the topic.
func (t *TopicNode) written() bool { return len(t.Writers) > 0 || len(t.OpWriters) > 0 }

// StoreNode is a resolved store.
type StoreNode struct {
	*schema.Store
	Ident       string
	Go          StoreNames
	KV          KV
	KeyFormat   string
	ValueFormat string
	Owners      []*ProcNode
	// Op is the aggregation or table keeping its rows in the store;
	// Implied says the store is not declared under stores but named by Op.
	Op      *OpNode
	Implied bool
	// WindowKind is "window" or "session" for the store of a windowed
	// aggregation (a window or session store), "" for a key-value store.
	WindowKind string
	// Flavor is "global" for a global table's store (no changelog, every
	// partition on every instance), "versioned" for a versioned table's,
	// "" for a plain one.
	Flavor string
}

// Node is a parent or child of a processor or operator: exactly one field
// is set.
type Node struct {
	Topic *TopicNode
	Proc  *ProcNode
	Op    *OpNode
}

// Name is the spec name of the node.
func (n Node) Name() string {
	switch {
	case n.Topic != nil:
		return n.Topic.Name.Value
	case n.Proc != nil:
		return n.Proc.Name.Value
	}
	return n.Op.Name.Value
}

// ProcNode is a resolved processor.
type ProcNode struct {
	*schema.Processor
	Ident string
	Go    ProcNames
	In    KV
	// Out is what the processor forwards; meaningful when HasOut.
	Out      KV
	HasOut   bool
	Parents  []Node // in declaration order
	Children []Node // in declaration order
	Stores   []*StoreNode
	// Punctuations carry their method names ("Punctuate", "PunctuateFlush").
	Punctuations []*PunctuationNode
	// Subtopology numbers the connected component the processor is in.
	Subtopology int
}

// PunctuationNode is a resolved punctuation schedule.
type PunctuationNode struct {
	*schema.Punctuation
	Method    string
	WallClock bool
}

// Resolve validates a parsed spec against the known record types, builds
// its graph and names everything the emitters will declare (names.go) for a
// package with import path pkgPath. It reports every problem it finds as
// schema.Errors; the graph is only returned when there are none. u may be
// nil when no record types exist.
func Resolve(s *schema.Spec, u *model.Universe, pkgPath string) (*Graph, error) {
	r := &resolver{spec: s, u: u, g: &Graph{Spec: s, Universe: u}, topics: map[string]*TopicNode{}, stores: map[string]*StoreNode{}, procs: map[string]*ProcNode{}, ops: map[string]*OpNode{}, unresolved: map[string]bool{}}
	r.run()
	// Naming runs on the graph as far as it resolved, so a clash is
	// reported together with the other problems rather than after them.
	var avroTypes map[string]*model.Type
	if u != nil {
		for k, t := range u.Types {
			if t.GoPackage == "" {
				if avroTypes == nil {
					avroTypes = map[string]*model.Type{}
				}
				avroTypes[k] = t
			}
		}
	}
	errs := append(r.errs.errs, nameGraph(r.g, avroTypes, pkgPath)...)
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return r.g, nil
}

type resolver struct {
	spec   *schema.Spec
	u      *model.Universe
	g      *Graph
	errs   errList
	topics map[string]*TopicNode
	stores map[string]*StoreNode
	procs  map[string]*ProcNode
	ops    map[string]*OpNode
	// unresolved names the operators whose kind is unknown or missing: their
	// mistake is reported once, and a from or to naming them is not another.
	unresolved map[string]bool
}

func (r *resolver) run() {
	s := r.spec
	if s.App.Value != "" && !validTopicName(s.App.Value) {
		r.errs.add(s.App.Pos, "app %q: want letters, digits, '.', '_' and '-' only", s.App.Value)
	}
	if s.Package.Value != "" && !validPackage(s.Package.Value) {
		r.errs.add(s.Package.Pos, "package %q is not a valid Go package name (lower-case letters and digits)", s.Package.Value)
	}
	for _, t := range s.Topics {
		tn := &TopicNode{Topic: t}
		if !validTopicName(t.Name.Value) {
			r.errs.add(t.Name.Pos, "topic name %q: Kafka allows letters, digits, '.', '_' and '-', at most 249 characters", t.Name.Value)
		}
		tn.KV = KV{r.typ(t.Key), r.typ(t.Value)}
		tn.KeyFormat = r.format(t.KeyFormat, t.Format, tn.KV.Key, true)
		tn.ValueFormat = r.format(t.Format, schema.Str{}, tn.KV.Value, false)
		r.timestamp(tn)
		// A nullable side is carried as a pointer, nil for null; bytes
		// are nil already.
		if t.KeyNullable() {
			tn.KV.Key = nullableRef(tn.KV.Key)
		}
		if t.ValueNullable() {
			tn.KV.Value = nullableRef(tn.KV.Value)
		}
		if t.Windowed {
			if t.KeyNullable() {
				r.errs.add(t.Nullable.Pos, "topic %q: a windowed key cannot be null (Kafka Streams' windowed serdes have no null): the key is not nullable", t.Name.Value)
			}
			tn.KV.Key = tn.KV.Key.wrapped(WindowedOf)
		}
		r.topics[t.Name.Value] = tn
		r.g.Topics = append(r.g.Topics, tn)
	}
	for _, st := range s.Stores {
		sn := &StoreNode{Store: st}
		switch st.Kind.Value {
		case "", "keyvalue", "window", "session": // window and session: for a windowed aggregation, checked there
		default:
			r.errs.add(st.Kind.Pos, "store %q: unknown kind %q (want keyvalue, or window or session for a windowed aggregation's store)%s", st.Name.Value, st.Kind.Value, schema.Suggest(st.Kind.Value, []string{"keyvalue", "window", "session"}))
		}
		if st.Backend.Value != "" && st.Backend.Value != schema.BackendMemory && st.Backend.Value != schema.BackendPebble {
			r.errs.add(st.Backend.Pos, "store %q: unknown backend %q (want memory or pebble)", st.Name.Value, st.Backend.Value)
		}
		sn.KV = KV{r.typ(st.Key), r.typ(st.Value)}
		sn.KeyFormat = r.format(st.Format, schema.Str{}, sn.KV.Key, true)
		sn.ValueFormat = r.format(st.Format, schema.Str{}, sn.KV.Value, false)
		if sn.KeyFormat == schema.FormatAvroConfluent || sn.ValueFormat == schema.FormatAvroConfluent {
			r.errs.add(st.Format.Pos, "store %q: format avro-confluent is for topics; stores use avro", st.Name.Value)
		}
		r.stores[st.Name.Value] = sn
		r.g.Stores = append(r.g.Stores, sn)
	}
	for _, p := range s.Processors {
		pn := &ProcNode{Processor: p}
		if t, clash := r.topics[p.Name.Value]; clash {
			r.errs.add(p.Name.Pos, "processor %q has the name of a topic (%s): names in from and to must say which they mean", p.Name.Value, t.Name.Pos)
		}
		r.procs[p.Name.Value] = pn
		r.g.Processors = append(r.g.Processors, pn)
	}
	r.operators()
	r.edges()
	r.opEdges()
	r.repartitions()
	r.opStores()
	r.storesOf()
	r.punctuations()
	if !r.cycles() {
		r.procOuts()
		r.opTypes()
		r.procIns()
		r.checkSinks()
		r.windowedTopics()
		r.rekeyedState()
		r.rekeyedOpState()
	}
	r.subtopologies()
}

// windowedTopics settles the windows of each windowed topic: those its spec
// says (windowed: session or SIZE), else its writers', which must agree with
// each other and with the spec: its key serde needs them (a time window's
// end is its start plus the windows' size, not on the wire). A topic read
// by the application must say them, as no writer of the application may
// write it.
func (r *resolver) windowedTopics() {
	for _, t := range r.g.Topics {
		switch {
		case t.WindowSession:
			t.Windows = &schema.Window{Kind: schema.Str{Value: schema.WindowSession}}
		case t.WindowSize.Set():
			t.Windows = &schema.Window{Kind: schema.Str{Value: schema.WindowTumbling}, Size: t.WindowSize}
		}
	}
	for _, t := range r.g.Topics {
		if !t.Windowed {
			continue
		}
		if t.Table != nil || t.Repartition {
			r.errs.add(t.WindowedPos, "topic %q: a table or repartition topic of windowed keys is not supported yet", t.Name.Value)
			continue
		}
		if t.read() && t.Windows == nil {
			r.errs.add(t.WindowedPos, "topic %q is read, so its windows must be said: windowed: session, or windowed: SIZE for time windows of that size (the end of a time window is not on the wire)", t.Name.Value)
			continue
		}
		var writers []Node
		for _, p := range t.Writers {
			writers = append(writers, Node{Proc: p})
		}
		for _, o := range t.OpWriters {
			writers = append(writers, Node{Op: o})
		}
		from := "says"
		for _, w := range writers {
			ws := windowsAbove(w)
			switch {
			case ws == nil:
				r.errs.add(t.WindowedPos, "topic %q is windowed but the windows of what %q writes are not known: a windowed topic is written from a windowed aggregation (count, reduce or aggregate with window:), through toStream", t.Name.Value, w.Name())
			case t.Windows == nil:
				t.Windows, from = ws, fmt.Sprintf("gets from %q", w.Name())
			case isSession(ws) != isSession(t.Windows) || !isSession(ws) && ws.Size.Value != t.Windows.Size.Value:
				r.errs.add(t.WindowedPos, "topic %q %s windows %s but %q writes windows %s: one topic's windowed keys are read with one serde, so its windows must be of one size (or all sessions)", t.Name.Value, from, windowedText(t.Windows), w.Name(), windowedText(ws))
			}
		}
	}
}

// windowedText says how windows w key a topic.
func windowedText(w *schema.Window) string {
	if isSession(w) {
		return "session"
	}
	return "of size " + durationText(w.Size.Value)
}

// repartitions checks that each repartition topic is written and read by
// processors of the spec: it is the application's own.
func (r *resolver) repartitions() {
	for _, t := range r.g.Topics {
		if !t.Repartition {
			continue
		}
		if !t.written() {
			r.errs.add(t.RepartitionPos, "repartition topic %q: no processor writes to it (to: [%s])", t.Name.Value, t.Name.Value)
		}
		if !t.read() {
			r.errs.add(t.RepartitionPos, "repartition topic %q: no processor reads it (from: [%s])", t.Name.Value, t.Name.Value)
		}
	}
}

// rekeyedState finds the mistake a re-keying processor makes when it feeds,
// in its own task, a processor that keeps state per key: the records of one
// key arrive in the tasks of every input partition, so each keeps its own
// share of the key's state. Only a topic in between (a repartition topic,
// or any topic the sink partitions by the new key) brings them together.
func (r *resolver) rekeyedState() {
	for _, p := range r.g.Processors {
		evident := p.HasOut && !p.Out.Key.Same(p.In.Key)
		if !p.Rekeys && !evident {
			continue
		}
		seen := map[*ProcNode]bool{}
		var stateful *ProcNode
		var walk func(q *ProcNode)
		walk = func(q *ProcNode) {
			for _, c := range q.Children {
				if c.Proc == nil || seen[c.Proc] || stateful != nil {
					continue
				}
				seen[c.Proc] = true
				if len(c.Proc.Stores) > 0 {
					stateful = c.Proc
					return
				}
				walk(c.Proc)
			}
		}
		walk(p)
		if stateful == nil {
			continue
		}
		pos, why := p.RekeysPos, "re-keys its records (rekeys: true)"
		if !p.Rekeys {
			pos, why = p.Name.Pos, fmt.Sprintf("changes the key type from %s to %s", p.In.Key.Name, p.Out.Key.Name)
			if p.Forward != nil {
				pos = p.Forward.Pos
			}
		}
		var fed []string
		for _, c := range p.Children {
			if c.Proc != nil {
				fed = append(fed, c.Proc.Name.Value)
			}
		}
		topic := p.Name.Value + "-by-key"
		r.errs.add(pos, "processor %q %s and feeds %q, whose store %q keeps state per key in the same task: the records of one key "+
			"would be spread over the tasks of every input partition. Route them through a repartition topic: "+
			"add topics: {%s: {key: %s, value: %s, repartition: true}}, give %q to: [%s] and %s from: [%s]",
			p.Name.Value, why, stateful.Name.Value, stateful.Stores[0].Name.Value, topic, p.Out.Key.Name, p.Out.Value.Name,
			p.Name.Value, topic, quoteList(fed), topic)
	}
}

// typ resolves a type name.
func (r *resolver) typ(s schema.Str) TypeRef {
	if s.Value == "" {
		return TypeRef{}
	}
	t, ok := r.u.Lookup(s.Value)
	if !ok && r.u != nil {
		if pos, ok := r.u.Unmarked[s.Value]; ok {
			r.errs.add(s.Pos, "type %s is a struct (%s) without the %s comment: add it to the struct's doc comment to use it as a record type", s.Value, pos, recordMarker)
			return TypeRef{Name: s.Value}
		}
	}
	if !ok && r.u != nil && r.u.Incomplete && strings.Contains(s.Value, ".") {
		return TypeRef{Name: s.Value} // its package failed to load: reported
	}
	if !ok {
		var known []string
		if r.u != nil {
			for name := range r.u.Types {
				known = append(known, name)
			}
			slices.Sort(known)
		}
		known = append(known, "bool", "bytes", "float32", "float64", "int32", "int64", "string")
		r.errs.add(s.Pos, "unknown type %q%s", s.Value, schema.Suggest(s.Value, known))
		return TypeRef{Name: s.Value}
	}
	return TypeRef{Name: s.Value, Type: t}
}

// nullableRef is how a nullable side of type r is carried: *T, or T for
// a type whose values may be nil already (bytes).
func nullableRef(r TypeRef) TypeRef {
	if r.Type != nil && !r.Type.IsNamed() && r.Type.Kind == model.Bytes {
		return r
	}
	return r.wrapped(PointerTo)
}

// format picks and checks the format of one side of a topic or store. own is
// the format given for this side, fallback the topic's format (for keys).
func (r *resolver) format(own, fallback schema.Str, t TypeRef, key bool) string {
	f := own
	if f.Value == "" && (t.Type == nil || !isPrimitive(t.Type)) {
		f = fallback
	}
	if f.Value != "" && !slices.Contains(schema.Formats, f.Value) {
		r.errs.add(f.Pos, "unknown format %q (want one of %s)%s", f.Value, strings.Join(schema.Formats, ", "), schema.Suggest(f.Value, schema.Formats))
		return ""
	}
	if t.Type == nil {
		return f.Value
	}
	native := nativeFormat(t.Type)
	if f.Value == "" {
		switch {
		case native != "":
			return native
		case t.Type.Kind == model.Record && t.Type.Schema != "" && t.Type.GoPackage == "":
			return schema.FormatAvro // a record from an .avsc file
		}
		return schema.FormatJSON
	}
	switch f.Value {
	case schema.FormatJSON, schema.FormatJSONLenient:
		return f.Value
	case schema.FormatAvro, schema.FormatAvroConfluent:
		if t.Type.Kind != model.Record || t.Type.Schema == "" || t.Type.GoPackage != "" {
			r.errs.add(f.Pos, "format %s needs a record type from an Avro schema (types: avro), but %s is not one", f.Value, t.Name)
		}
		return f.Value
	}
	if native != f.Value {
		side := "value"
		if key {
			side = "key"
		}
		r.errs.add(f.Pos, "format %s cannot carry %s type %s", f.Value, side, t.Name)
	}
	return f.Value
}

func isPrimitive(t *model.Type) bool { return !t.IsNamed() && t.Kind <= model.Float64 }

// nativeFormat is the Kafka serializer format of a primitive, "" for others.
func nativeFormat(t *model.Type) string {
	if t.IsNamed() {
		return ""
	}
	switch t.Kind {
	case model.String:
		return schema.FormatString
	case model.Bytes:
		return schema.FormatBytes
	case model.Int32:
		return schema.FormatInt32
	case model.Int64:
		return schema.FormatInt64
	case model.Float64:
		return schema.FormatFloat64
	}
	return ""
}

func (r *resolver) timestamp(tn *TopicNode) {
	ts := tn.Timestamp
	if ts.Value == "" || tn.KV.Value.Type == nil {
		return
	}
	vt := tn.KV.Value.Type
	if vt.Kind != model.Record {
		r.errs.add(ts.Pos, "topic %q: timestamp field %q needs a record value, but %s is not one", tn.Name.Value, ts.Value, tn.KV.Value.Name)
		return
	}
	for _, f := range vt.Fields {
		if f.Name != ts.Value && f.WireName != ts.Value {
			continue
		}
		ft := f.Type
		if ft.Kind == model.Optional && ft.Elem != nil {
			ft = ft.Elem
		}
		if !ft.IsTime() {
			r.errs.add(ts.Pos, "topic %q: timestamp field %s.%s is %s %s, not a time (want time.Time or int64 milliseconds)", tn.Name.Value, tn.KV.Value.Name, f.Name, article(ft.Kind.String()), ft.Kind)
			return
		}
		tn.TimestampField = f
		return
	}
	var names []string
	for _, f := range vt.Fields {
		names = append(names, f.Name)
	}
	r.errs.add(ts.Pos, "topic %q: %s has no field %q%s", tn.Name.Value, tn.KV.Value.Name, ts.Value, schema.Suggest(ts.Value, names))
}

// edges links processors to their parents and children. An edge between two
// processors may be declared on either side (from or to) or both.
func (r *resolver) edges() {
	for _, p := range r.g.Processors {
		for _, f := range p.From {
			if t, ok := r.topics[f.Value]; ok {
				p.Parents = appendNode(p.Parents, Node{Topic: t})
				t.Readers = appendProc(t.Readers, p)
			} else if q, ok := r.procs[f.Value]; ok {
				if q == p {
					r.errs.add(f.Pos, "processor %q reads from itself", p.Name.Value)
					continue
				}
				p.Parents = appendNode(p.Parents, Node{Proc: q})
				q.Children = appendNode(q.Children, Node{Proc: p})
			} else if o, ok := r.ops[f.Value]; ok {
				switch {
				case o.kind.Arms != nil:
					r.errs.add(f.Pos, "processor %q reads from branch %q itself: read one of its arms (%s-ARM)", p.Name.Value, f.Value, f.Value)
					continue
				case o.kind.Terminal:
					r.errs.add(f.Pos, "processor %q reads from %s, which is terminal: use peek to pass records on", p.Name.Value, o.what())
					continue
				case o.kind.Grouping:
					r.errs.add(f.Pos, "processor %q reads grouping %q: a grouping feeds an aggregation (count, reduce or aggregate)", p.Name.Value, f.Value)
					continue
				}
				p.Parents = appendNode(p.Parents, Node{Op: o})
				o.Children = appendNode(o.Children, Node{Proc: p})
			} else {
				if !r.unresolved[f.Value] {
					r.errs.add(f.Pos, "processor %q reads from %q, which is %s%s", p.Name.Value, f.Value, r.neither(), schema.Suggest(f.Value, r.names()))
				}
			}
		}
	}
	for _, p := range r.g.Processors {
		for _, c := range p.To {
			if t, ok := r.topics[c.Value]; ok {
				p.Children = appendNode(p.Children, Node{Topic: t})
				t.Writers = appendProc(t.Writers, p)
			} else if q, ok := r.procs[c.Value]; ok {
				if q == p {
					r.errs.add(c.Pos, "processor %q forwards to itself", p.Name.Value)
					continue
				}
				p.Children = appendNode(p.Children, Node{Proc: q})
				q.Parents = appendNode(q.Parents, Node{Proc: p})
			} else if o, ok := r.ops[c.Value]; ok {
				if o.kind.Closed != "" {
					r.errs.add(c.Pos, "processor %q forwards to %s, which reads %s only", p.Name.Value, o.what(), o.kind.Closed)
					continue
				}
				p.Children = appendNode(p.Children, Node{Op: o})
				o.Parents = appendNode(o.Parents, Node{Proc: p})
			} else {
				if !r.unresolved[c.Value] {
					r.errs.add(c.Pos, "processor %q forwards to %q, which is %s%s", p.Name.Value, c.Value, r.neither(), schema.Suggest(c.Value, r.names()))
				}
			}
		}
	}
	for _, p := range r.g.Processors {
		if len(p.Parents) == 0 && len(p.From) == 0 {
			r.errs.add(p.Name.Pos, "processor %q has no input: add from: [TOPIC or PROCESSOR]", p.Name.Value)
		}
	}
	for _, t := range r.g.Topics {
		slices.SortFunc(t.Readers, byName)
		slices.SortFunc(t.Writers, byName)
	}
}

// neither names what a from or to may name, for a name that is none of them.
func (r *resolver) neither() string {
	if len(r.spec.Operators) == 0 {
		return "neither a topic nor a processor"
	}
	return "neither a topic, a processor nor an operator"
}

func byName(a, b *ProcNode) int { return strings.Compare(a.Name.Value, b.Name.Value) }

func appendNode(ns []Node, n Node) []Node {
	if slices.Contains(ns, n) {
		return ns
	}
	return append(ns, n)
}

func appendProc(ps []*ProcNode, p *ProcNode) []*ProcNode {
	if slices.Contains(ps, p) {
		return ps
	}
	return append(ps, p)
}

func (r *resolver) names() []string {
	var out []string
	for _, t := range r.g.Topics {
		out = append(out, t.Name.Value)
	}
	for _, p := range r.g.Processors {
		out = append(out, p.Name.Value)
	}
	for _, o := range r.g.allOps() {
		out = append(out, o.Name.Value)
	}
	return out
}

func (r *resolver) storesOf() {
	for _, p := range r.g.Processors {
		for _, s := range p.Processor.Stores {
			sn, ok := r.stores[s.Value]
			if !ok {
				var names []string
				for _, st := range r.g.Stores {
					names = append(names, st.Name.Value)
				}
				r.errs.add(s.Pos, "processor %q uses unknown store %q%s", p.Name.Value, s.Value, schema.Suggest(s.Value, names))
				continue
			}
			if slices.Contains(p.Stores, sn) {
				r.errs.add(s.Pos, "processor %q lists store %q twice", p.Name.Value, s.Value)
				continue
			}
			if sn.Op != nil {
				r.errs.add(s.Pos, "processor %q uses store %q, where %s keeps its rows: read the operator's output instead (from: [%s])", p.Name.Value, s.Value, sn.Op.what(), sn.Op.Name.Value)
				continue
			}
			if k := sn.Kind.Value; k == "window" || k == "session" {
				r.errs.add(s.Pos, "processor %q uses store %q, a %s store: processors use key-value stores (a windowed aggregation keeps its windows in a %s store)", p.Name.Value, s.Value, k, k)
			}
			p.Stores = append(p.Stores, sn)
			sn.Owners = append(sn.Owners, r.procs[p.Name.Value])
		}
	}
	for _, sn := range r.g.Stores {
		if len(sn.Owners) == 0 && sn.Op == nil {
			r.errs.add(sn.Name.Pos, "store %q has no owner: list it under stores: of the processor that uses it", sn.Name.Value)
		}
	}
}

func (r *resolver) punctuations() {
	for _, p := range r.g.Processors {
		for _, pu := range p.Punctuate {
			pn := &PunctuationNode{Punctuation: pu}
			switch pu.Time.Value {
			case "", schema.StreamTime:
			case schema.WallClock:
				pn.WallClock = true
			default:
				r.errs.add(pu.Time.Pos, "processor %q: punctuate time %q: want stream-time or wall-clock", p.Name.Value, pu.Time.Value)
			}
			if len(p.Punctuate) > 1 {
				if pu.Name.Value == "" {
					r.errs.add(pu.Pos, "processor %q has several punctuate schedules: give each a name (it names the method Punctuate<Name>)", p.Name.Value)
					continue
				}
			}
			p.Punctuations = append(p.Punctuations, pn)
		}
	}
}

// cycles reports every cycle among processors; it returns true when there
// is at least one, in which case types are not checked (they would only
// repeat the news).
func (r *resolver) cycles() bool {
	// The runtime's own walk (stream.TopologyShape.Cycles), over the
	// processors only: topics cannot close a cycle.
	shape := stream.TopologyShape{Children: map[string][]string{}}
	for _, p := range r.g.Processors {
		shape.Nodes = append(shape.Nodes, p.Name.Value)
		for _, c := range p.Children {
			if c.Topic == nil {
				shape.Children[p.Name.Value] = append(shape.Children[p.Name.Value], c.Name())
			}
		}
	}
	for _, o := range r.g.allOps() {
		shape.Nodes = append(shape.Nodes, o.Name.Value)
		for _, c := range o.Children {
			if c.Topic == nil {
				shape.Children[o.Name.Value] = append(shape.Children[o.Name.Value], c.Name())
			}
		}
	}
	cycles := shape.Cycles()
	for _, c := range cycles {
		n, _ := r.lookup(c[0])
		pos := schema.Pos{}
		if n.Proc != nil {
			pos = n.Proc.Name.Pos
		} else if n.Op != nil {
			pos = n.Op.Name.Pos
		}
		what := "processors"
		if len(r.g.Operators) > 0 {
			what = "processors and operators"
		}
		r.errs.add(pos, "cycle among %s: %s", what, strings.Join(c, " -> "))
	}
	return len(cycles) > 0
}

// procOuts works out what each processor forwards.
func (r *resolver) procOuts() {
	// What a processor forwards depends only on its own declaration (or on
	// the topics it writes to), so it can be settled first.
	for _, p := range r.g.Processors {
		if f := p.Forward; f != nil {
			if f.Key.Value == "" || f.Value.Value == "" {
				continue // reported by the loader
			}
			p.Out, p.HasOut = KV{r.typ(f.Key), r.typ(f.Value)}, true
			continue
		}
		if len(p.Children) == 0 {
			continue
		}
		var topic *TopicNode
		for _, c := range p.Children {
			if c.Topic == nil {
				what := "processor"
				if c.Op != nil {
					what = "operator"
				}
				r.errs.add(p.Name.Pos, "processor %q forwards to %s %q: declare what it forwards (forward: {key: K, value: V})", p.Name.Value, what, c.Name())
				topic = nil
				break
			}
			if topic == nil {
				topic = c.Topic
			}
		}
		if topic != nil {
			p.Out, p.HasOut = topic.KV, true
		}
	}
}

// procIns works out what each processor takes, from its parents (topics,
// processors and operators, whose outputs are settled), and checks every
// edge.
func (r *resolver) procIns() {
	for _, p := range r.g.Processors {
		var first Node
		for i, par := range p.Parents {
			kv, ok := outOf(par)
			if !ok {
				continue
			}
			if first == (Node{}) {
				first, p.In = par, kv
				continue
			}
			switch {
			case kv.same(p.In):
			case par.Proc != nil:
				r.errs.add(r.childPos(par.Proc, Node{Proc: p}), "processor %q forwards %s but child %q takes %s (what its input %q carries)", par.Proc.Name.Value, kv, p.Name.Value, p.In, first.Name())
			default:
				r.errs.add(r.inputPos(p, i), "processor %q: input %q carries %s but input %q carries %s: all inputs of a processor must carry the same key and value types", p.Name.Value, par.Name(), kv, first.Name(), p.In)
			}
		}
		for _, c := range p.Children {
			if c.Topic == nil || !p.HasOut || c.Topic.KV.same(p.Out) {
				continue
			}
			r.errs.add(r.childPos(p, c), "processor %q forwards %s but topic %q takes %s", p.Name.Value, p.Out, c.Topic.Name.Value, c.Topic.KV)
		}
	}
}

func (r *resolver) inputPos(p *ProcNode, i int) model.Pos {
	name := p.Parents[i].Name()
	for _, f := range p.From {
		if f.Value == name {
			return f.Pos
		}
	}
	return p.Name.Pos
}

func (r *resolver) childPos(p *ProcNode, c Node) model.Pos {
	for _, t := range p.To {
		if t.Value == c.Name() {
			return t.Pos
		}
	}
	if p.Forward != nil {
		return p.Forward.Pos
	}
	return p.Name.Pos
}

// subtopologies numbers sub-topologies with the runtime's own computation
// (stream.TopologyShape), fed the nodes in the order the generated
// NewTopology adds them, so the numbers (and task ids) kgen reports are
// the ones the application will have. It then checks that the topics read
// by one sub-topology can be co-partitioned.
func (r *resolver) subtopologies() {
	shape := stream.TopologyShape{Sources: map[string]bool{}, Children: map[string][]string{}}
	// Nodes in the order NewTopology adds them, so that the numbers are the
	// runtime's: sources, processors and operators, then the repartition
	// steps.
	source := func(t *TopicNode) {
		src := "source:" + t.Name.Value
		shape.Nodes = append(shape.Nodes, src)
		shape.Sources[src] = true
		for _, p := range t.Readers {
			shape.Children[src] = append(shape.Children[src], "processor:"+p.Name.Value)
		}
		for _, o := range t.OpReaders {
			shape.Children[src] = append(shape.Children[src], shapeKey(Node{Topic: t}, Node{Op: o}))
		}
	}
	for _, t := range r.g.Topics {
		if t.read() && !t.Repartition {
			source(t)
		}
	}
	for _, n := range emitOrder(r.g) {
		if n.Op != nil {
			addOpShape(&shape, n.Op)
			continue
		}
		p := n.Proc
		k := "processor:" + p.Name.Value
		shape.Nodes = append(shape.Nodes, k)
		for _, c := range p.Children {
			shape.Children[k] = append(shape.Children[k], shapeKey(n, c))
		}
	}
	for _, t := range r.g.Topics {
		if t.read() && t.Repartition {
			shape.Nodes = append(shape.Nodes, "sink:"+t.Name.Value)
			source(t)
		}
	}
	for _, s := range r.g.Stores {
		var owners []string
		for _, o := range s.Owners {
			owners = append(owners, "processor:"+o.Name.Value)
		}
		if len(owners) > 0 {
			shape.StoreOwners = append(shape.StoreOwners, owners)
		}
	}
	ids := shape.Subtopologies()
	n := 0
	for _, p := range r.g.Processors {
		p.Subtopology = ids["processor:"+p.Name.Value]
		n = max(n, p.Subtopology+1)
	}
	for _, o := range r.g.allOps() {
		o.Subtopology = ids["op:"+o.nodeName()]
		o.UpSubtopology = ids["op:"+o.entryNode()]
		o.entrySubs = map[Node]int{}
		for _, p := range o.Parents {
			o.entrySubs[p] = ids["op:"+o.entryFrom(p)]
		}
		n = max(n, o.Subtopology+1)
	}
	readBy := (*TopicNode).readBy
	// Co-partitioning: every topic a sub-topology reads must have the same
	// partition count, when counts are given.
	for id := range n {
		var first *TopicNode
		for _, t := range r.g.Topics {
			if t.Partitions == 0 || readBy(t) != id {
				continue
			}
			if first == nil {
				first = t
				continue
			}
			if t.Partitions != first.Partitions {
				r.errs.add(t.PartitionsPos, "topics %q (%d partitions) and %q (%d partitions) are read by the same sub-topology, so they must be co-partitioned: give them the same partition count", first.Name.Value, first.Partitions, t.Name.Value, t.Partitions)
			}
		}
	}
	r.copartitionedRepartitions()
}

// readBy is the sub-topology reading topic t, -1 for none.
func (t *TopicNode) readBy() int {
	switch {
	case len(t.Readers) > 0:
		return t.Readers[0].Subtopology
	case len(t.OpReaders) > 0:
		o := t.OpReaders[0]
		if id, ok := o.entrySubs[Node{Topic: t}]; ok {
			return id // a grouping's upstream half reads, a join's side
		}
		return o.UpSubtopology
	case t.Table != nil && !t.Table.kind.Global:
		return t.Table.Subtopology
	}
	return -1 // not read, or read by a global table: no task reads it
}

// CopartitionGroups are the groups of the user's topics (repartition
// topics left out: the application makes them) read by one sub-topology,
// which must have the same partition count; each group has two topics or
// more, in spec order.
func (g *Graph) CopartitionGroups() [][]string {
	bySub := map[int][]string{}
	var order []int
	for _, t := range g.Topics {
		id := t.readBy()
		if id < 0 || t.Repartition {
			continue
		}
		if _, ok := bySub[id]; !ok {
			order = append(order, id)
		}
		bySub[id] = append(bySub[id], t.Name.Value)
	}
	var out [][]string
	for _, id := range order {
		if len(bySub[id]) > 1 {
			out = append(out, bySub[id])
		}
	}
	return out
}

func validTopicName(s string) bool {
	if s == "" || len(s) > 249 || s == "." || s == ".." {
		return false
	}
	for _, r := range s {
		if !(r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

func validPackage(s string) bool {
	for i, r := range s {
		if !(r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	// main would make the generated code a command, which the scaffolded
	// cmd/APP/main.go cannot import.
	return s != "" && !isKeyword(s) && s != "main"
}

func isKeyword(s string) bool {
	return slices.Contains([]string{"break", "case", "chan", "const", "continue", "default", "defer", "else", "fallthrough", "for", "func", "go", "goto", "if", "import", "interface", "map", "package", "range", "return", "select", "struct", "switch", "type", "var"}, s)
}

// errList collects positioned problems.
type errList struct{ errs schema.Errors }

func (l *errList) add(pos model.Pos, format string, args ...any) {
	l.errs = append(l.errs, &schema.Error{Pos: pos, Msg: fmt.Sprintf(format, args...)})
}

// Describe is a one-line summary of the graph, for logs and tests.
func (g *Graph) Describe() string {
	s := fmt.Sprintf("app %s: %d topics, %d stores, %d processors", g.Spec.App.Value, len(g.Topics), len(g.Stores), len(g.Processors))
	if len(g.Operators) > 0 {
		s += fmt.Sprintf(", %d operators", len(g.Operators))
	}
	return s
}

// article is "an" before a word read with a vowel sound ("an int32", "an
// enum", "an optional") and "a" otherwise ("a string", "a uuid").
func article(word string) string {
	if word == "" || strings.HasPrefix(word, "u") {
		return "a" // "a uuid", "a union"
	}
	if strings.ContainsRune("aeio", rune(word[0])) {
		return "an"
	}
	return "a"
}

// quoteList is "a", "a" and "b", or "a", "b" and "c".
func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	if len(q) <= 1 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " and " + q[len(q)-1]
}
