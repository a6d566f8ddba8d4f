package gen

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kgen-dev/kgen/gen/model"
	"github.com/kgen-dev/kgen/schema"
)

const wordcount = `version: 1
app: wordcount
types:
  go: [./model]
topics:
  sentences:   {key: string, value: model.Sentence, format: json}
  word-counts: {key: string, value: int64}
stores:
  counts: {kind: keyvalue, key: string, value: int64}
processors:
  split: {from: [sentences], forward: {key: string, value: string}, to: [count]}
  count: {from: [split], stores: [counts], to: [word-counts], punctuate: [{every: 1m, time: wall-clock}]}
`

func universe() *model.Universe {
	ts := &model.Type{Kind: model.Timestamp}
	return &model.Universe{Types: map[string]*model.Type{
		"model.Sentence": {Kind: model.Record, Name: "Sentence", GoPackage: "example.com/m/model", FullName: "model.Sentence",
			Fields: []*model.Field{{Name: "Text", WireName: "text", Type: &model.Type{Kind: model.String}}, {Name: "At", WireName: "at", Type: ts}}},
	}}
}

func TestResolveWordcount(t *testing.T) {
	spec, err := schema.Parse("kgen.yaml", []byte(wordcount))
	if err != nil {
		t.Fatal(err)
	}
	g, err := Resolve(spec, universe(), "example.com/m")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range g.Processors {
		got = append(got, p.Name.Value+" "+p.Ident+" in="+p.In.String()+" out="+p.Out.String())
	}
	want := []string{
		"count Count in=string,string out=string,int64",
		"split Split in=string,model.Sentence out=string,string",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("processors (-want +got):\n%s", diff)
	}
	if g.Topics[0].ValueFormat != schema.FormatJSON || g.Topics[1].ValueFormat != schema.FormatInt64 {
		t.Errorf("formats: %q %q", g.Topics[0].ValueFormat, g.Topics[1].ValueFormat)
	}
	if !g.Stores[0].Changelog {
		t.Error("stores are changelogged by default")
	}
	if pu := g.Processors[0].Punctuations; len(pu) != 1 || !pu[0].WallClock || pu[0].Method != "Punctuate" {
		t.Errorf("punctuation: %+v", pu)
	}
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		want       []string
	}{
		{"typo", "version: 1\napp: a\ntopcis: {}\n", []string{`kgen.yaml:3:1: unknown key "topcis" in spec (did you mean "topics"?)`}},
		{"version", "version: 2\napp: a\n", []string{`kgen.yaml:1:10: unsupported spec version "2": this kgen reads version 1`}},
		{"missing", "types: {}\n", []string{`kgen.yaml:1:1: missing app: add "app: NAME" (the application id)`, `kgen.yaml:1:1: missing version: add "version: 1"`}},
		{"syntax", "version: 1\napp: [\n", []string{"kgen.yaml:2:6: invalid YAML: did not find expected node content"}},
		{"unknown refs", `version: 1
app: a
topics:
  in: {key: string, value: strin}
processors:
  p: {from: [inn], to: [out], stores: [s]}
`, []string{
			`kgen.yaml:4:28: unknown type "strin" (did you mean "string"?)`,
			`kgen.yaml:6:14: processor "p" reads from "inn", which is neither a topic nor a processor (did you mean "in"?)`,
			`kgen.yaml:6:25: processor "p" forwards to "out", which is neither a topic nor a processor`,
			`kgen.yaml:6:40: processor "p" uses unknown store "s"`,
		}},
		{"unknown op reported once", `version: 1
app: a
topics:
  in: {key: string, value: string}
  out: {key: string, value: string}
operators:
  quiet: {op: filterOut, from: [in]}
  loud: {op: mapValues, from: [quiet], value: string, to: [out]}
processors:
  p: {from: [quiet], to: [out]}
  q: {from: [in], to: [quiet]}
`, []string{
			`kgen.yaml:7:15: operator "quiet": unknown op "filterOut" (want one of ` + strings.Join(opKindNames(), ", ") + `) (did you mean "filterNot"?)`,
		}},
		{"mismatch", `version: 1
app: a
topics:
  in: {key: string, value: string}
  out: {key: string, value: int64}
processors:
  p: {from: [in], forward: {key: string, value: string}, to: [out, q]}
  q: {from: [in]}
`, []string{
			`kgen.yaml:7:63: processor "p" forwards string,string but topic "out" takes string,int64`,
		}},
		{"child mismatch", `version: 1
app: a
topics:
  in: {key: string, value: string}
  nums: {key: string, value: int64}
processors:
  p: {from: [in], forward: {key: string, value: string}, to: [q]}
  q: {from: [nums, p]}
`, []string{
			`kgen.yaml:7:63: processor "p" forwards string,string but child "q" takes string,int64 (what its input "nums" carries)`,
		}},
		{"cycle and owner", `version: 1
app: a
topics:
  in: {key: string, value: string}
stores:
  lonely: {key: string, value: string}
processors:
  a: {from: [in, c], forward: {key: string, value: string}, to: [b]}
  b: {from: [a], forward: {key: string, value: string}, to: [c]}
  c: {from: [b], forward: {key: string, value: string}}
`, []string{
			`kgen.yaml:6:3: store "lonely" has no owner: list it under stores: of the processor that uses it`,
			`kgen.yaml:8:3: cycle among processors: a -> b -> c -> a`,
		}},
		{"timestamp", `version: 1
app: a
topics:
  in: {key: string, value: model.Sentence, timestamp: Text}
  in2: {key: string, value: model.Sentence, timestamp: at}
  in3: {key: string, value: model.Sentence, timestamp: when}
`, []string{
			`kgen.yaml:4:55: topic "in": timestamp field model.Sentence.Text is a string, not a time (want time.Time or int64 milliseconds)`,
			`kgen.yaml:6:56: topic "in3": model.Sentence has no field "when"`,
		}},
		{"identifiers", `version: 1
app: a
topics:
  9lives: {key: string, value: string}
  word-counts: {key: string, value: string}
  word_counts: {key: string, value: string}
`, []string{
			`kgen.yaml:4:3: topic name "9lives" does not convert to a Go identifier (got "9lives"): use ASCII letters, digits, '-', '_' and '.', starting with a letter`,
			`kgen.yaml:6:3: topic "word_counts": its name constant would be the Go name TopicWordCounts, already taken by the name constant of topic "word-counts" (kgen.yaml:5:3): rename one of them`,
		}},
		{"copartition", `version: 1
app: a
topics:
  a: {key: string, value: string, partitions: 3}
  b: {key: string, value: string, partitions: 4}
  c: {key: string, value: string, partitions: 5}
processors:
  j: {from: [a, b]}
  k: {from: [c]}
`, []string{
			`kgen.yaml:5:47: topics "a" (3 partitions) and "b" (4 partitions) are read by the same sub-topology, so they must be co-partitioned: give them the same partition count`,
		}},
		{"format", `version: 1
app: a
topics:
  a: {key: string, value: model.Sentence, format: int64}
  b: {key: string, value: string, format: jsn}
  c: {key: string, value: model.Sentence, format: avro}
`, []string{
			`kgen.yaml:4:51: format int64 cannot carry value type model.Sentence`,
			`kgen.yaml:5:43: unknown format "jsn" (want one of avro, avro-confluent, bytes, float64, int32, int64, json, json-lenient, string) (did you mean "json"?)`,
			`kgen.yaml:6:51: format avro needs a record type from an Avro schema (types: avro), but model.Sentence is not one`,
		}},
		{"per-child forward", `version: 1
app: a
topics:
  in: {key: string, value: string}
processors:
  p: {from: in, forward: {q: {key: string, value: string}}, to: [q]}
  q: {}
`, []string{
			`kgen.yaml:6:27: processor "p": forward: per-child forward types are not supported: a processor forwards one key and value type to all its children (forward: {key: K, value: V}); use ForwardTo<Child> to pick a child`,
		}},
		{"node names", `version: 1
app: a
topics:
  in: {key: string, value: string}
processors:
  in-source: {from: [in]}
`, []string{
			`kgen.yaml:6:3: processor "in-source": its node would be the runtime node name in-source, already taken by the source node of topic "in" (kgen.yaml:4:3): rename one of them`,
		}},
		{"punctuate", `version: 1
app: a
topics:
  a: {key: string, value: string}
processors:
  p: {from: [a], punctuate: [{every: 0s}, {every: 1m, time: wallclock}]}
`, []string{
			`kgen.yaml:6:30: processor "p" has several punctuate schedules: give each a name (it names the method Punctuate<Name>)`,
			`kgen.yaml:6:38: processor "p": punctuate: every: want a positive duration such as 30s or 1m, got "0s"`,
			`kgen.yaml:6:43: processor "p" has several punctuate schedules: give each a name (it names the method Punctuate<Name>)`,
			`kgen.yaml:6:61: processor "p": punctuate time "wallclock": want stream-time or wall-clock`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := check(tc.spec)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// check parses and resolves a spec and returns its error lines.
func check(spec string) []string {
	s, err := schema.Parse("kgen.yaml", []byte(spec))
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	if _, err := Resolve(s, universe(), "example.com/m"); err != nil {
		errs = append(errs, err)
	}
	var all schema.Errors
	for _, err := range errs {
		var es schema.Errors
		if !errors.As(err, &es) {
			return []string{"not schema.Errors: " + err.Error()}
		}
		all = append(all, es...)
	}
	all = all.Sort()
	if len(all) == 0 {
		return nil
	}
	return strings.Split(all.Error(), "\n")
}

func FuzzResolve(f *testing.F) {
	f.Add([]byte(wordcount))
	f.Add([]byte("version: 1\napp: a\ntopics: {a: {key: string, value: string, partitions: 2}}\n"))
	f.Add([]byte("a: &x [*x, *x]\n"))
	f.Add([]byte("version: 1\nprocessors: {p: {from: p, to: [p], punctuate: [{every: 1s}]}}\n"))
	for _, c := range []string{"ops", "ops-keyed", "err-ops-types", "err-ops-syntax", "windows", "err-windows"} {
		if data, err := os.ReadFile(filepath.Join(goldenDir, c, schema.FileName)); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("version: 1\napp: a\ntopics: {t: {key: string, value: string}}\noperators: {b: {op: branch, from: [t], branches: [x], default: y}, m: {op: merge, from: [b-x, b-y]}, g: {op: groupByKey, from: [m]}, c: {op: count, from: [g], store: c}, s: {op: toStream, from: [c], to: [t]}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := schema.Parse("kgen.yaml", data)
		if s == nil {
			t.Fatal("nil spec")
		}
		if err != nil {
			var es schema.Errors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("parse error is not schema.Errors: %v", err)
			}
		}
		if _, err := Resolve(s, universe(), "example.com/m"); err != nil {
			var es schema.Errors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("resolve error is not schema.Errors: %v", err)
			}
			for _, e := range es {
				if e.Pos.File != "kgen.yaml" {
					t.Fatalf("error without position: %v", e)
				}
			}
		}
	})
}

// TestNullableTopics: a nullable side is a pointer everywhere it goes; what
// does not take nulls yet says so, and a timestamp field of a nullable value
// falls back to the record's time for a tombstone.
func TestNullableTopics(t *testing.T) {
	const head = `version: 1
app: a
types: {go: [./model]}
topics:
  both:  {key: string, value: string, nullable: both}
  keys:  {key: string, value: string, nullable: key}
  raw:   {key: bytes, value: bytes, nullable: both}
  times: {key: string, value: model.Sentence, nullable: value, timestamp: at}
`
	for _, tc := range []struct{ name, spec, want string }{
		{"groupBy", head + "operators:\n  g: {op: groupBy, from: [both], key: string}\n  c: {op: count, from: [g], store: c}\n",
			`kgen.yaml:10:27: operator "g" (groupBy) reads "both", whose values may be null (*string): groupBy takes no null values yet; drop them first ({op: filter, from: [both]}, then a mapValues or selectKey to string)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := strings.Join(check(tc.spec), "\n"); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
	// A grouping of nullable sides drops the nulls first and aggregates
	// plain values; a table reads a nullable key with the plain key serde,
	// so its source drops a null key: both as Kafka Streams drops them.
	for _, tc := range []struct {
		name, spec string
		want       []string
	}{
		{"grouping", head + "operators:\n  g: {op: groupByKey, from: [both]}\n  c: {op: count, from: [g], store: c}\n", []string{
			"dsl.DropNulls(t, \"g-non-null\", dsl.Deref[string], dsl.Deref[string], \"both-source\")",
			"dsl.Merge[string, string](t, \"g\", \"g-non-null\")",
			"dsl.Count[string, string](t, \"c\", StoreC, s.StoreCKey",
		}},
		{"table", head + "operators:\n  rows: {op: table, topic: keys, store: rows}\n", []string{
			"dsl.Table[string, string](t, \"rows\", TopicKeys, s.KeysKey, s.KeysValue",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := schema.Parse("kgen.yaml", []byte(tc.spec))
			if err != nil {
				t.Fatal(err)
			}
			g, err := Resolve(s, universe(), "example.com/m")
			if err != nil {
				t.Fatal(err)
			}
			src, err := (&emitter{g: g, pkgPath: "example.com/m", pkgName: "m"}).main()
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(src), w) {
					t.Errorf("generated code lacks\n%s\n%s", w, src)
				}
			}
		})
	}
	s, err := schema.Parse("kgen.yaml", []byte(head+"processors:\n  p: {from: [both, times, raw], forward: {key: string, value: string}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Resolve(s, universe(), "example.com/m")
	want := []string{
		`kgen.yaml:10:20: processor "p": input "times" carries string,*model.Sentence but input "both" carries *string,*string: all inputs of a processor must carry the same key and value types`,
		`kgen.yaml:10:27: processor "p": input "raw" carries bytes,bytes but input "both" carries *string,*string: all inputs of a processor must carry the same key and value types`,
	}
	if err == nil || err.Error() != strings.Join(want, "\n") {
		t.Errorf("got %v\nwant\n%s", err, strings.Join(want, "\n"))
	}
	s, err = schema.Parse("kgen.yaml", []byte(head+"processors:\n  p: {from: [times]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := Resolve(s, universe(), "example.com/m")
	if err != nil {
		t.Fatal(err)
	}
	src, err := (&emitter{g: g, pkgPath: "example.com/m", pkgName: "m"}).main()
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		"stream.AddSource(t, \"times-source\", TopicTimes, s.TimesKey, dsl.Nullable(s.TimesValue), stream.WithTimestamp(func(_ string, v *model.Sentence, recordTime time.Time) time.Time {\n\t\tif v == nil {\n\t\t\treturn recordTime\n\t\t}\n\t\treturn v.At\n\t}))",
		"Process(ctx *PContext, key string, value *model.Sentence) error",
	} {
		if !strings.Contains(string(src), w) {
			t.Errorf("generated code lacks\n%s\n%s", w, src)
		}
	}
}
