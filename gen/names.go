package gen

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/kgen-dev/kgen/gen/avro"
	"github.com/kgen-dev/kgen/gen/model"
	"github.com/kgen-dev/kgen/schema"
)

// This file is the one authority for the Go identifiers, runtime node names
// and file names the generator emits. The namer decides every name derived
// from the spec and records it in the scope it is declared in (the package,
// a generated type's method set, the runtime's node names, the directory);
// the emitters read the names from TopicNames, StoreNames and ProcNames or
// the constants below and never build one themselves. A name that would be
// declared twice is reported at the spec position of the later declaration,
// naming the earlier one, so a spec that kgen check accepts compiles.

// Package-level identifiers of the generated files that no spec name
// changes.
const (
	idAppID              = "AppID"
	idProcessors         = "Processors"
	idNewTopology        = "NewTopology"
	idUsesSchemaRegistry = "UsesSchemaRegistry"
	idRegisterSchemas    = "RegisterSchemas"
	idTestDriver         = "TestDriver"
	idNewTestDriver      = "NewTestDriver"
	idConfig             = "Config"
	idTopics             = "Topics"
	idTopicConfigs       = "TopicConfigs"
	idStartDevBroker     = "StartDevBroker"
	idApplication        = "Application"
	idRun                = "Run"
	idMain               = "Main"
	// idFactories is the scaffolded (user-owned) implementation of
	// Processors.
	idFactories = "Factories"
	// idSerdes and idDefaultSerdes: the serdes a topology is built with.
	idSerdes        = "Serdes"
	idDefaultSerdes = "DefaultSerdes"
	// The store queries (kgen_app.gen.go, with a queryable store).
	idQueryHandlers   = "QueryHandlers"
	idQueryClient     = "QueryClient"
	idNewQueryClient  = "NewQueryClient"
	idOpenAPIDocument = "OpenAPIDocument"
)

// fixedPackage lists the fixed package-level identifiers with what declares
// them, for messages.
var fixedPackage = []struct{ id, what string }{
	{idAppID, "const AppID in " + FileMain},
	{idProcessors, "type Processors in " + FileMain},
	{idNewTopology, "func NewTopology in " + FileMain},
	{idUsesSchemaRegistry, "const UsesSchemaRegistry in " + FileMain},
	{idRegisterSchemas, "func RegisterSchemas in " + FileMain},
	{idTestDriver, "type TestDriver in " + FileTestDriver},
	{idNewTestDriver, "func NewTestDriver in " + FileTestDriver},
	{idConfig, "type Config in " + FileApp},
	{idTopics, "var Topics in " + FileApp},
	{idTopicConfigs, "var TopicConfigs in " + FileApp},
	{idStartDevBroker, "func StartDevBroker in " + FileApp},
	{idApplication, "func Application in " + FileApp},
	{idRun, "func Run in " + FileApp},
	{idMain, "func Main in " + FileApp},
	{idFactories, "type Factories (scaffolded in " + FileFactories + ")"},
	{idSerdes, "type Serdes in " + FileMain},
	{idDefaultSerdes, "func DefaultSerdes in " + FileMain},
	{idQueryHandlers, "func QueryHandlers in " + FileApp},
	{idQueryClient, "type QueryClient in " + FileApp},
	{idNewQueryClient, "func NewQueryClient in " + FileApp},
	{idOpenAPIDocument, "const OpenAPIDocument in " + FileApp},
}

// Methods and fields of every generated processor context that no spec
// name changes.
// ContextBase is embedded (stream.ContextBase), so its name is a field.
var fixedContext = []string{idContextBase, "Forward", "ForwardRecord", "Timestamp", "Headers", "Topic", "Partition", "Offset", "StreamTime", "ObservedTime", "TaskID", "Commit", "Runtime"}

// idContextBase is the runtime type every generated context embeds.
const idContextBase = "ContextBase"

// Methods and fields of the generated TestDriver that no spec name changes.
var fixedDriver = []string{"d", "s", "AdvanceWallClock", "Driver", "Close"}

// Methods of a processor implementation the runtime calls.
var fixedImpl = []string{"Process", "Init", "Close"}

// TopicNames are the names generated for one topic.
type TopicNames struct {
	Const      string // "TopicWordCounts"
	KeySerde   string // field of Serdes, "WordCountsKey"
	ValueSerde string // field of Serdes, "WordCountsValue"
	// Pipe and Read are TestDriver methods; empty when no processor reads
	// (for Pipe) or writes (for Read) the topic, so none is generated.
	// Delete pipes a tombstone to a topic a table reads.
	Pipe, Read, Delete string
	// PipeNullKey and PipeTombstone pipe a null key, or a null value, to a
	// topic whose side cannot say null, so a test can show what drops it
	// (a nullable side is piped as nil through Pipe); empty otherwise.
	PipeNullKey, PipeTombstone string
	// SourceNode and SinkNode are the runtime's node names.
	SourceNode, SinkNode string
}

// StoreNames are the names generated for one store.
type StoreNames struct {
	Const      string // "StoreCounts"
	KeySerde   string // field of Serdes, "StoreCountsKey"
	ValueSerde string // field of Serdes, "StoreCountsValue"
	// Field holds the store in the contexts of its owners; Accessor is the
	// method returning it there and on the TestDriver.
	Field, Accessor string
}

// ProcNames are the names generated for one processor.
type ProcNames struct {
	Impl      string // the user's type, "Count" (scaffolded once)
	Interface string // "CountProcessor"
	Context   string // "CountContext"
	Node      string // "countNode", the adapter to the runtime
	Factory   string // the method of Processors that makes an Impl, "Count"
	File      string // the scaffold file, "count.go"
	// ForwardTo holds the per-child forwarding methods, parallel to
	// Children; nil when there is at most one child (Forward is enough).
	ForwardTo []string
}

// owner is what declares a name, for messages.
type owner struct {
	what string // `processor "shout"`; empty for fixed generated names
	role string // "interface", or for fixed names the full description
	pos  model.Pos
}

func (o owner) describe() string {
	if o.what == "" {
		return o.role
	}
	s := "the " + o.role + " of " + o.what
	if o.pos.File != "" {
		s += " (" + o.pos.String() + ")"
	}
	return s
}

// scope is one namespace of generated names.
type scope struct {
	kind  string // "Go name", "method", "runtime node name", "file"
	in    string // " on ShoutContext"; empty for the package
	taken map[string]owner
}

func newScope(kind, in string) *scope { return &scope{kind: kind, in: in, taken: map[string]owner{}} }

// namer assigns every generated name of one graph.
type namer struct {
	errs errList
	pkg  *scope
	// reported holds the pairs of owners already reported: two things
	// whose names clash once clash in all their derived names, and one
	// message says it.
	reported map[[2]string]bool
}

// nameGraph decides the generated names of g and reports every clash. It
// keeps the package scope on g for checkUserDecls.
// avroTypes are the types declared from .avsc files in the package; local
// lists the Go record types declared in the spec's own package (pkgPath).
func nameGraph(g *Graph, avroTypes map[string]*model.Type, pkgPath string) schema.Errors {
	n := &namer{pkg: newScope("Go name", ""), reported: map[[2]string]bool{}}
	g.pkgScope = n.pkg
	for _, f := range fixedPackage {
		n.declare(n.pkg, f.id, owner{role: "the generated " + f.what})
	}
	// Record types come first: they exist whatever the spec says.
	if len(avroTypes) > 0 {
		for _, d := range avro.Declared(avro.Types(&model.Universe{Types: avroTypes})) {
			n.declare(n.pkg, d.Name, owner{what: "Avro " + d.Type.Kind.String() + " " + d.Type.FullName, role: d.Role, pos: d.Type.Pos})
		}
	}
	if g.Universe != nil {
		var local []*model.Type
		for _, t := range g.Universe.Types {
			if t.GoPackage == pkgPath && t.GoPackage != "" {
				local = append(local, t)
			}
		}
		slices.SortFunc(local, func(a, b *model.Type) int { return strings.Compare(a.Name, b.Name) })
		for _, t := range local {
			n.declare(n.pkg, t.Name, owner{what: "Go record type " + t.FullName, role: "declaration", pos: t.Pos})
		}
	}

	nodes := newScope("runtime node name", "")
	driver := newScope("method", " of "+idTestDriver)
	for _, id := range fixedDriver {
		n.declare(driver, id, owner{role: "the generated " + idTestDriver + "." + id})
	}
	files := newScope("file name", " in the spec's directory")
	for _, f := range []string{FileMain, FileTestDriver, FileApp, FileAvro, FileFactories} {
		n.declare(files, f, owner{role: "the generated file " + f})
	}
	factories := newScope("method", " of "+idProcessors)
	serdes := newScope("field", " of "+idSerdes)

	for _, t := range g.Topics {
		id, ok := n.ident("topic", t.Name)
		if !ok {
			continue // reported; names derived from it would only repeat it
		}
		o := func(role string) owner {
			return owner{what: fmt.Sprintf("topic %q", t.Name.Value), role: role, pos: t.Name.Pos}
		}
		t.Ident = id
		if t.Repartition {
			// The runtime's repartition step: its source node bears the
			// step's name, its sink the name and -repartition-sink. The
			// topic is the app's own (no constant, nothing to pipe or read).
			t.Go = TopicNames{
				KeySerde:   n.declare(serdes, id+"Key", o("key serde")),
				ValueSerde: n.declare(serdes, id+"Value", o("value serde")),
				SourceNode: n.declare(nodes, t.Name.Value, o("repartition source node")),
				SinkNode:   n.declare(nodes, t.Name.Value+"-repartition-sink", o("repartition sink node")),
			}
			continue
		}
		t.Go = TopicNames{
			Const:      n.declare(n.pkg, "Topic"+id, o("name constant")),
			KeySerde:   n.declare(serdes, id+"Key", o("key serde")),
			ValueSerde: n.declare(serdes, id+"Value", o("value serde")),
			SourceNode: n.declare(nodes, t.Name.Value+"-source", o("source node")),
			SinkNode:   n.declare(nodes, t.Name.Value+"-sink", o("sink node")),
		}
		if t.read() || t.Table != nil {
			t.Go.Pipe = n.declare(driver, "Pipe"+id, o("test driver input method"))
			if !t.KV.Key.is(PointerTo) {
				t.Go.PipeNullKey = n.declare(driver, "Pipe"+id+"NullKey", o("test driver null-key method"))
			}
		}
		if t.read() && t.Table == nil && !t.KV.Value.is(PointerTo) {
			t.Go.PipeTombstone = n.declare(driver, "Pipe"+id+"Tombstone", o("test driver tombstone method"))
		}
		if t.Table != nil {
			t.Go.Delete = n.declare(driver, "Delete"+id, o("test driver tombstone method"))
		}
		if t.written() {
			t.Go.Read = n.declare(driver, "Read"+id, o("test driver output method"))
		}
	}
	for _, s := range g.Stores {
		id, ok := n.ident("store", s.Name)
		if !ok {
			continue
		}
		o := func(role string) owner {
			return owner{what: fmt.Sprintf("store %q", s.Name.Value), role: role, pos: s.Name.Pos}
		}
		s.Ident = id
		s.Go = StoreNames{
			Const:      n.declare(n.pkg, "Store"+id, o("name constant")),
			KeySerde:   n.declare(serdes, "Store"+id+"Key", o("key serde")),
			ValueSerde: n.declare(serdes, "Store"+id+"Value", o("value serde")),
			// A prefix keeps the field clear of keywords ("type").
			Field:    "store" + id,
			Accessor: n.declare(driver, id, o("test driver accessor")),
		}
	}
	// Topic and store names: the spec's topics, the application's internal
	// topics (repartition topics, changelogs) and the stores, so that a
	// name an operator derives (internalRole) is checked like every other.
	internalTopics := newScope("topic name", "")
	storeNames := newScope("store name", "")
	app := g.Spec.App.Value
	for _, t := range g.Topics {
		o := owner{what: fmt.Sprintf("topic %q", t.Name.Value), role: "name", pos: t.Name.Pos}
		if t.Repartition {
			o.role = "repartition topic"
			n.declare(internalTopics, app+"-"+t.Name.Value+"-repartition", o)
			continue
		}
		n.declare(internalTopics, t.Name.Value, o)
	}
	for _, s := range g.Stores {
		o := owner{what: fmt.Sprintf("store %q", s.Name.Value), role: "name", pos: s.Name.Pos}
		n.declare(storeNames, s.Name.Value, o)
		if s.Changelog {
			o.role = "changelog"
			n.declare(internalTopics, app+"-"+s.Name.Value+"-changelog", o)
		}
	}
	for _, p := range g.Processors {
		id, ok := n.ident("processor", p.Name)
		if !ok {
			continue
		}
		o := func(role string) owner {
			return owner{what: fmt.Sprintf("processor %q", p.Name.Value), role: role, pos: p.Name.Pos}
		}
		p.Ident = id
		p.Go = ProcNames{
			Impl:      n.declare(n.pkg, id, o("implementation type")),
			Interface: n.declare(n.pkg, id+"Processor", o("interface")),
			Context:   n.declare(n.pkg, id+"Context", o("context type")),
			Node:      n.declare(n.pkg, lowerFirst(id)+"Node", o("runtime adapter")),
			Factory:   n.declare(factories, id, o("factory")),
			File:      n.declare(files, scaffoldFile(id), o("scaffold file")),
		}
		n.declare(nodes, p.Name.Value, o("node"))

		ctx := newScope("method", " of "+p.Go.Context)
		for _, m := range fixedContext {
			n.declare(ctx, m, owner{role: "the generated " + p.Go.Context + "." + m})
		}
		if len(p.Children) > 1 {
			for _, c := range p.Children {
				co := o("forwarding method to child " + fmt.Sprintf("%q", c.Name()))
				co.pos = childRefPos(p, c)
				cid, ok := Ident(c.Name())
				if !ok {
					continue // reported at the child
				}
				p.Go.ForwardTo = append(p.Go.ForwardTo, n.declare(ctx, "ForwardTo"+cid, co))
			}
		}
		for i, s := range p.Stores {
			if s.Ident == "" {
				continue
			}
			so := owner{what: fmt.Sprintf("store %q", s.Name.Value), role: "accessor", pos: storeRefPos(p, i)}
			n.declare(ctx, s.Ident, so)
		}
		impl := newScope("method", " of "+p.Go.Impl)
		for _, m := range fixedImpl {
			n.declare(impl, m, owner{role: "the method " + m + " the runtime calls"})
		}
		for _, pu := range p.Punctuations {
			pu.Method = "Punctuate"
			pos := pu.Pos
			if pu.Name.Value != "" {
				pid, ok := Ident(pu.Name.Value)
				if !ok {
					n.errs.add(pu.Name.Pos, "punctuation name %q does not convert to a Go identifier: use ASCII letters, digits, '-', '_' and '.', starting with a letter", pu.Name.Value)
				}
				pu.Method += pid
				pos = pu.Name.Pos
			}
			n.declare(impl, pu.Method, owner{what: fmt.Sprintf("a punctuation of processor %q", p.Name.Value), role: "method", pos: pos})
		}
	}
	for _, op := range g.allOps() {
		id, ok := n.ident("operator", op.Name)
		if !ok {
			continue
		}
		o := func(role string) owner {
			return owner{what: op.what(), role: role, pos: op.Name.Pos}
		}
		op.Ident = id
		n.declare(nodes, op.Name.Value, o("node"))
		for _, rn := range op.nodes() {
			if rn.Suffix != "" {
				n.declare(nodes, op.Name.Value+rn.Suffix, o(rn.Role))
			}
		}
		if op.kind.Internal != nil {
			for _, ir := range op.kind.Internal(op) {
				in := &InternalName{internalRole: ir}
				switch {
				case ir.Topic && ir.RuntimeSerdes:
					in.Name = n.declare(internalTopics, g.Spec.App.Value+"-"+op.Name.Value+"-"+ir.Role, o(ir.What))
				case !ir.Topic && ir.RuntimeSerdes:
					in.Name = n.declare(storeNames, op.Name.Value+"-"+ir.Role, o(ir.What))
					n.declare(internalTopics, g.Spec.App.Value+"-"+in.Name+"-changelog", o(ir.What+"'s changelog"))
				case ir.Topic:
					in.Name = n.declare(internalTopics, g.Spec.App.Value+"-"+op.Name.Value+"-"+ir.Role, o(ir.What))
					rid, _ := Ident(strings.TrimSuffix(strings.TrimSuffix(ir.Role, "repartition"), "-"))
					in.KeySerde = n.declare(serdes, id+rid+"Key", o(strings.TrimSuffix(ir.What, " topic")+" key serde"))
					in.ValueSerde = n.declare(serdes, id+rid+"Value", o(strings.TrimSuffix(ir.What, " topic")+" value serde"))
				default:
					in.Name = n.declare(storeNames, op.Name.Value+"-"+ir.Role, o(ir.What))
					n.declare(internalTopics, g.Spec.App.Value+"-"+in.Name+"-changelog", o(ir.What+"'s changelog"))
					// Named as a store of the spec would be.
					sid, _ := Ident(in.Name)
					in.KeySerde = n.declare(serdes, "Store"+sid+"Key", o(ir.What+"'s key serde"))
					in.ValueSerde = n.declare(serdes, "Store"+sid+"Value", o(ir.What+"'s value serde"))
				}
				op.Internal = append(op.Internal, in)
			}
		}
		if op.kind.Funcs != nil {
			for _, f := range op.kind.Funcs(op) {
				role := "function"
				if f.suffix != "" {
					role = strings.ToLower(f.suffix) + " function"
				}
				op.Go.Funcs = append(op.Go.Funcs, n.declare(factories, id+f.suffix, o(role)))
			}
		}
	}
	return n.errs.errs.Sort()
}

// checkUserDecls reports the package-level names the user's hand-written
// Go files in the spec's directory declare that generated code declares
// too: the compiler would say "redeclared" in a generated file. The types
// the user is meant to write (processor implementations, Factories) and
// record types already known are not clashes.
func checkUserDecls(g *Graph, decls map[string]model.Pos) schema.Errors {
	if g.pkgScope == nil {
		return nil
	}
	impls := map[string]bool{idFactories: true}
	for _, p := range g.Processors {
		impls[p.Go.Impl] = true
	}
	var errs errList
	for id, o := range g.pkgScope.taken {
		pos, ok := decls[id]
		if !ok || impls[id] || strings.HasPrefix(o.what, "Go record type") {
			continue
		}
		if o.what == "" {
			errs.add(pos, "%s is declared here and by %s: rename yours", id, o.role)
			continue
		}
		errs.add(o.pos, "%s: its %s would be the Go name %s, already declared in %s: rename one of them", o.what, o.role, id, pos)
	}
	return errs.errs.Sort()
}

// ident converts a spec name, reporting one that does not convert.
func (n *namer) ident(what string, name schema.Str) (string, bool) {
	id, ok := Ident(name.Value)
	if !ok {
		got := ""
		if id != "" {
			got = fmt.Sprintf(" (got %q)", id)
		}
		n.errs.add(name.Pos, "%s name %q does not convert to a Go identifier%s: use ASCII letters, digits, '-', '_' and '.', starting with a letter", what, name.Value, got)
	}
	return id, ok
}

// declare records that o declares id in s, reporting a clash with an
// earlier declaration at o's position. It returns id either way so the
// caller can go on.
func (n *namer) declare(s *scope, id string, o owner) string {
	prev, dup := s.taken[id]
	if !dup {
		s.taken[id] = o
		return id
	}
	if o.what == "" {
		// Fixed names are declared before any spec name: two of them
		// clashing is a bug in this file.
		panic(fmt.Sprintf("gen: fixed name %s declared twice", id))
	}
	pair := [2]string{o.what + o.pos.String(), prev.what + prev.pos.String() + prev.role}
	if prev.what != "" {
		pair[1] = prev.what + prev.pos.String()
	}
	if n.reported[pair] {
		return id
	}
	n.reported[pair] = true
	fix := "rename it"
	if prev.what != "" {
		fix = "rename one of them"
	}
	n.errs.add(o.pos, "%s: its %s would be the %s %s%s, already taken by %s: %s", o.what, o.role, s.kind, id, s.in, prev.describe(), fix)
	return id
}

// childRefPos is where processor p names child c, or p's name when the edge
// is declared on the child's side.
func childRefPos(p *ProcNode, c Node) model.Pos {
	for _, t := range p.To {
		if t.Value == c.Name() {
			return t.Pos
		}
	}
	return p.Name.Pos
}

// storeRefPos is where processor p lists its i-th store.
func storeRefPos(p *ProcNode, i int) model.Pos {
	name := p.Stores[i].Name.Value
	for _, s := range p.Processor.Stores {
		if s.Value == name {
			return s.Pos
		}
	}
	return p.Name.Pos
}

// Ident converts a spec name to an exported Go identifier: "word-counts"
// becomes "WordCounts". It reports false when the result is not a valid
// identifier. Only ASCII letters and digits are kept as they are, since
// Kafka names are ASCII and an exported identifier must start with an upper
// case letter.
func Ident(name string) (string, bool) {
	var b strings.Builder
	upper := true
	for _, r := range name {
		switch {
		case r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			if upper {
				r = unicode.ToUpper(r)
			}
			upper = false
			b.WriteRune(r)
		case r == '-' || r == '_' || r == '.':
			upper = true
		default:
			return "", false
		}
	}
	s := b.String()
	if s == "" || !unicode.IsLetter(rune(s[0])) {
		return s, false
	}
	return s, true
}

// scaffoldFile is the file name of a processor's user code: "split.go",
// "remember_customer.go". A name the go command would read as a test file
// or a build constraint ("audit_test.go", "x_linux.go") gets a suffix that
// keeps it an ordinary source file.
func scaffoldFile(ident string) string {
	stem := strings.ToLower(ident[:1]) + snake(ident[1:])
	parts := strings.Split(stem, "_")
	if last := parts[len(parts)-1]; len(parts) > 1 && (last == "test" || knownOS[last] || knownArch[last]) {
		stem += "_processor"
	}
	return stem + ".go"
}

// knownOS and knownArch are the GOOS and GOARCH values that make a file
// name suffix a build constraint (go/build's list).
var (
	knownOS   = setOf("aix", "android", "darwin", "dragonfly", "freebsd", "hurd", "illumos", "ios", "js", "linux", "nacl", "netbsd", "openbsd", "plan9", "solaris", "wasip1", "windows", "zos")
	knownArch = setOf("386", "amd64", "amd64p32", "arm", "armbe", "arm64", "arm64be", "loong64", "mips", "mipsle", "mips64", "mips64le", "mips64p32", "mips64p32le", "ppc", "ppc64", "ppc64le", "riscv", "riscv64", "s390", "s390x", "sparc", "sparc64", "wasm")
)

func setOf(ss ...string) map[string]bool {
	m := map[string]bool{}
	for _, s := range ss {
		m[s] = true
	}
	return m
}
