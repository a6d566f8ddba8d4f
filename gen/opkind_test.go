package gen

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dave/jennifer/jen"
	"github.com/google/go-cmp/cmp"

	"github.com/kgen-dev/kgen/schema"
)

// TestOperatorKeys: each kind's descriptor says which keys it takes; an
// operator written with other keys, or without a required one, or of no
// known kind, is reported at its place.
func TestOperatorKeys(t *testing.T) {
	kinds := strings.Join(opKindNames(), ", ")
	for _, tc := range []struct {
		name, spec string
		want       []string
	}{
		{"unknown op", "version: 1\napp: a\noperators:\n  o: {op: fliter, from: [t]}\n", []string{`kgen.yaml:4:11: operator "o": unknown op "fliter" (want one of ` + kinds + `) (did you mean "filter"?)`}},
		{"missing op", "version: 1\napp: a\noperators:\n  o: {from: [t]}\n", []string{`kgen.yaml:4:6: operator "o": missing op: the operator kind (` + kinds + `)`}},
		{"missing store", "version: 1\napp: a\noperators:\n  o: {op: count, from: [g]}\n", []string{`kgen.yaml:4:3: operator "o": count needs the store holding its rows: store: NAME`}},
		{"missing value", "version: 1\napp: a\noperators:\n  o: {op: mapValues, from: [g]}\n", []string{`kgen.yaml:4:3: operator "o": mapValues needs the value type it outputs: value: TYPE`}},
		{"wrong field", "version: 1\napp: a\noperators:\n  o: {op: filter, from: [g], store: s}\n", []string{`kgen.yaml:4:30: operator "o": filter takes no store (it takes from, op, to)`}},
		{"to on a table", "version: 1\napp: a\noperators:\n  o: {op: count, from: [g], store: s, to: [t]}\n", []string{`kgen.yaml:4:39: operator "o": count takes no to: count makes a table; write its updates to a topic with an operator {op: toStream, from: [o], to: [TOPIC]}`}},
		{"planned op", "version: 1\napp: a\noperators:\n  o: {op: cogroup, from: [a, b]}\n", []string{`kgen.yaml:4:11: operator "o": op cogroup is planned (global tables and cogroup come next) but not supported by this kgen yet`}},
		{"no key of its kind", "version: 1\napp: a\noperators:\n  o: {op: table, topic: t, store: s, from: [x]}\n", []string{`kgen.yaml:4:38: operator "o": table takes no from: a table reads one topic: topic: NAME`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := schema.Parse("kgen.yaml", []byte(tc.spec))
			if err != nil {
				t.Fatal(err)
			}
			var errs errList
			for _, o := range s.Operators {
				kindOf(o, &errs)
			}
			var got []string
			for _, e := range errs.errs.Sort() {
				got = append(got, e.Error())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestJSONSchemaOperators checks that the JSON Schema's operator kinds are
// the registered kinds, and that each kind requires in the schema the keys
// its descriptor requires.
func TestJSONSchemaOperators(t *testing.T) {
	var js struct {
		Definitions struct {
			Operator struct {
				Properties struct {
					Op struct {
						Enum []string `json:"enum"`
					} `json:"op"`
				} `json:"properties"`
				AllOf []struct {
					If struct {
						Properties struct {
							Op struct {
								Const string `json:"const"`
							} `json:"op"`
						} `json:"properties"`
					} `json:"if"`
					Then struct {
						Required []string `json:"required"`
					} `json:"then"`
				} `json:"allOf"`
			} `json:"operator"`
		} `json:"definitions"`
	}
	if err := json.Unmarshal(schema.JSONSchema, &js); err != nil {
		t.Fatal(err)
	}
	op := js.Definitions.Operator
	kinds := slices.Sorted(slices.Values(op.Properties.Op.Enum))
	if !slices.Equal(kinds, opKindNames()) {
		t.Errorf("schema's op kinds %v, registered %v", kinds, opKindNames())
	}
	schemaRequired := map[string][]string{}
	for _, c := range op.AllOf {
		schemaRequired[c.If.Properties.Op.Const] = slices.Sorted(slices.Values(c.Then.Required))
	}
	for _, kind := range opKindNames() {
		var required []string
		for _, k := range opKinds[kind].Keys {
			if k.Required {
				required = append(required, k.Name)
			}
		}
		slices.Sort(required)
		if !slices.Equal(required, schemaRequired[kind]) {
			t.Errorf("op %s: schema requires %v, the descriptor %v", kind, schemaRequired[kind], required)
		}
	}
}

// TestTypeRefWraps: wrappers compose, innermost first, and come off one at
// a time.
func TestTypeRefWraps(t *testing.T) {
	r := builtinRef("int64")
	change := r.wrapped(PointerTo).wrapped(ChangeOf)
	key := builtinRef("string").wrapped(WindowedOf)
	var got []string
	for _, x := range []TypeRef{r, change, change.unwrapped(), change.plain(), key, key.unwrapped()} {
		got = append(got, fmt.Sprintf("%s %s %#v", x.Name, refText(x, "example.com/m", map[string]string{}), typeOf(x)))
	}
	want := []string{
		"int64 int64 int64",
		"dsl.Change[*int64] dsl.Change[*int64] dsl.Change[*int64]",
		"*int64 *int64 *int64",
		"int64 int64 int64",
		"dsl.Windowed[string] dsl.Windowed[string] dsl.Windowed[string]",
		"string string string",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if !change.Same(r.wrapped(PointerTo).wrapped(ChangeOf)) || change.Same(r.wrapped(ChangeOf).wrapped(PointerTo)) || change.Same(r) {
		t.Error("Same does not compare the wrappers in order")
	}
	if !change.is(ChangeOf) || change.unwrapped().is(ChangeOf) || !change.unwrapped().is(PointerTo) {
		t.Error("is does not look at the outermost wrapper")
	}
}

func builtinRef(name string) TypeRef {
	r := &resolver{u: universe()}
	return r.builtin(name)
}

// testJoinKind is a kind reading a left and a right input of types of their
// own, as joins will, owning stores and an internal topic by role: it is
// registered by the tests that use it only.
var testJoinKind = &opKind{
	Name:   "testJoin",
	Keys:   keys("from", "to", "value!"),
	Inputs: leftRight,
	Type: func(r *resolver, o *OpNode, _ Node) {
		o.Out, o.HasOut = KV{o.Ins[0].Key, r.typ(o.Value)}, true
	},
	Internal: func(o *OpNode) []internalRole {
		if !o.HasOut {
			return nil
		}
		return []internalRole{
			{Role: "left", What: "left window store", KV: KV{o.Ins[0].Key, o.Ins[0].Value}, KeyFormat: "string", ValueFormat: "json"},
			{Role: "right", What: "right window store", KV: KV{o.Ins[1].Key, o.Ins[1].Value}, KeyFormat: "string", ValueFormat: "int64"},
			{Role: "left-repartition", Topic: true, What: "left repartition topic", KV: o.Ins[0], KeyFormat: "string", ValueFormat: "json"},
		}
	},
	Emit: func(*emitter, *OpNode) []jen.Code { return nil },
}

func withTestJoin(t *testing.T) {
	t.Helper()
	register(testJoinKind)
	t.Cleanup(func() { delete(opKinds, testJoinKind.Name) })
}

// TestLeftRightInputs: a kind may read two inputs of different types, left
// first; the resolver hands its typing rule both.
func TestLeftRightInputs(t *testing.T) {
	withTestJoin(t)
	const head = `version: 1
app: a
types: {go: [./model]}
topics:
  orders: {key: string, value: model.Sentence}
  prices: {key: string, value: int64}
  out:    {key: string, value: string}
operators:
`
	s, err := schema.Parse("kgen.yaml", []byte(head+"  j: {op: testJoin, from: [orders, prices], value: string, to: [out]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := Resolve(s, universe(), "example.com/m")
	if err != nil {
		t.Fatal(err)
	}
	o := g.Operators[0]
	var got []string
	for _, kv := range o.Ins {
		got = append(got, kv.String())
	}
	got = append(got, "in="+o.In.String(), "out="+o.Out.String())
	for _, in := range o.Internal {
		got = append(got, in.Role+"="+in.Name+" "+in.KeySerde+" "+in.ValueSerde)
	}
	want := []string{"string,model.Sentence", "string,int64", "in=string,model.Sentence", "out=string,string",
		"left=j-left StoreJLeftKey StoreJLeftValue", "right=j-right StoreJRightKey StoreJRightValue", "left-repartition=a-j-left-repartition JLeftKey JLeftValue"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// The Serdes fields of its stores and topics, as NewTopology gets them.
	var fields []string
	if err := (&emitter{g: g}).opSerdes(func(name, doc, format string, r TypeRef) error {
		fields = append(fields, name+" "+format+" "+r.Name+": "+doc)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	wantFields := []string{
		"StoreJLeftKey string string: StoreJLeftKey encodes the keys of store \"j-left\" (string).",
		"StoreJLeftValue json model.Sentence: StoreJLeftValue encodes the values of store \"j-left\" (json).",
		"StoreJRightKey string string: StoreJRightKey encodes the keys of store \"j-right\" (string).",
		"StoreJRightValue int64 int64: StoreJRightValue encodes the values of store \"j-right\" (int64).",
		"JLeftKey string string: JLeftKey encodes the keys of a-j-left-repartition (string).",
		"JLeftValue json model.Sentence: JLeftValue encodes the values of a-j-left-repartition (json).",
	}
	if diff := cmp.Diff(wantFields, fields); diff != "" {
		t.Errorf("Serdes fields (-want +got):\n%s", diff)
	}
	// kgen graph draws its stores.
	if m := Mermaid(g); !strings.Contains(m, "j-left") || !strings.Contains(m, "j-right") {
		t.Errorf("the diagram lacks the stores j-left and j-right:\n%s", m)
	}
	for _, tc := range []struct{ spec, want string }{
		{"  j: {op: testJoin, from: [orders], value: string}\n", `kgen.yaml:9:28: operator "j" (testJoin) reads from 1 inputs: it reads two, left first (from: [LEFT, RIGHT])`},
		{"  j: {op: testJoin, from: [orders, prices, out], value: string}\n", `kgen.yaml:9:28: operator "j" (testJoin) reads from 3 inputs: it reads two, left first (from: [LEFT, RIGHT])`},
		{"  j: {op: mapValues, from: [orders, prices], value: string}\n", `kgen.yaml:9:37: operator "j" (mapValues): input "prices" carries string,int64 but input "orders" carries string,model.Sentence: all inputs of an operator must carry the same key and value types`},
	} {
		if got := strings.Join(check(head+tc.spec), "\n"); !strings.Contains(got, tc.want) {
			t.Errorf("got\n%s\nwant it to contain\n%s", got, tc.want)
		}
	}
}

// TestInternalNameClashes: the stores and internal topics an operator
// derives from its name are checked against every other topic and store
// name of the application.
func TestInternalNameClashes(t *testing.T) {
	withTestJoin(t)
	for _, tc := range []struct {
		name, spec string
		want       []string
	}{
		{"derived topic and a grouping's", `version: 1
app: a
topics:
  l: {key: string, value: string}
  r: {key: string, value: int64}
operators:
  x-left: {op: groupByKey, from: [l]}
  n: {op: count, from: [x-left], store: n}
  sel: {op: selectKey, from: [l], key: string}
  x-left-g: {op: groupByKey, from: [sel]}
  m: {op: count, from: [x-left-g], store: m}
  x: {op: testJoin, from: [l, r], value: string}
`, nil},
		{"derived topic and a grouping's repartition topic", `version: 1
app: a
topics:
  l: {key: string, value: string}
  r: {key: string, value: int64}
operators:
  sel: {op: selectKey, from: [l], key: string}
  x-left: {op: groupByKey, from: [sel]}
  m: {op: count, from: [x-left], store: m}
  x: {op: testJoin, from: [l, r], value: string}
`, []string{`kgen.yaml:8:3: operator "x-left" (groupByKey): its repartition topic would be the topic name a-x-left-repartition, already taken by the left repartition topic of operator "x" (testJoin) (kgen.yaml:10:3): rename one of them`}},
		{"derived store and a store", `version: 1
app: a
topics:
  l: {key: string, value: string}
  r: {key: string, value: int64}
operators:
  g: {op: groupByKey, from: [l]}
  m: {op: count, from: [g], store: x-right}
  x: {op: testJoin, from: [l, r], value: string}
`, []string{
			`kgen.yaml:9:3: operator "x" (testJoin): its right window store would be the store name x-right, already taken by the name of store "x-right" (kgen.yaml:8:36): rename one of them`,
		}},
		{"topic and changelog", `version: 1
app: a
topics:
  l: {key: string, value: string}
  a-counts-changelog: {key: string, value: string}
operators:
  g: {op: groupByKey, from: [l]}
  m: {op: count, from: [g], store: counts}
`, []string{
			`kgen.yaml:8:36: store "counts": its changelog would be the topic name a-counts-changelog, already taken by the name of topic "a-counts-changelog" (kgen.yaml:5:3): rename one of them`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := check(tc.spec)
			if tc.want == nil {
				// Only that no clash is reported.
				got = slices.DeleteFunc(got, func(s string) bool { return !strings.Contains(s, "would be the") })
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestOperatorKindsComplete: every registered kind has what the drivers
// call without a default, and declares each key at most once.
func TestOperatorKindsComplete(t *testing.T) {
	for _, name := range opKindNames() {
		k := opKinds[name]
		if k.Name != name || k.Type == nil || k.Emit == nil {
			t.Errorf("kind %s: name %q, Type set %v, Emit set %v", name, k.Name, k.Type != nil, k.Emit != nil)
		}
		seen := map[string]bool{}
		for _, key := range k.Keys {
			if seen[key.Name] || key.Name == "op" {
				t.Errorf("kind %s: key %s declared twice or reserved", name, key.Name)
			}
			seen[key.Name] = true
			if key.Required && keyHelp[key.Name] == "" {
				t.Errorf("kind %s: required key %s has no help for the message about it missing", name, key.Name)
			}
		}
	}
}
