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

// TestNameClashes covers every spec that used to pass kgen check and then
// fail go build inside the generated code: each is reported at its place,
// naming what it clashes with.
func TestNameClashes(t *testing.T) {
	const head = "version: 1\napp: a\ntopics:\n  greetings: {key: string, value: string}\n  shouts: {key: string, value: string}\n"
	for _, tc := range []struct {
		name, spec string
		want       []string
	}{
		{"suffix processor", head + `processors:
  shout: {from: [greetings]}
  shout-processor: {from: [greetings]}
`, []string{`kgen.yaml:8:3: processor "shout-processor": its implementation type would be the Go name ShoutProcessor, already taken by the interface of processor "shout" (kgen.yaml:7:3): rename one of them`}},
		{"suffix context", head + `processors:
  shout: {from: [greetings]}
  shout-context: {from: [greetings]}
`, []string{`kgen.yaml:8:3: processor "shout-context": its implementation type would be the Go name ShoutContext, already taken by the context type of processor "shout" (kgen.yaml:7:3): rename one of them`}},
		{"generated names", head + `processors:
  processors: {from: [greetings]}
  run: {from: [greetings]}
  config: {from: [greetings]}
  main: {from: [greetings]}
  topics: {from: [greetings]}
`, []string{
			`kgen.yaml:7:3: processor "processors": its implementation type would be the Go name Processors, already taken by the generated type Processors in kgen.gen.go: rename it`,
			`kgen.yaml:8:3: processor "run": its implementation type would be the Go name Run, already taken by the generated func Run in kgen_app.gen.go: rename it`,
			`kgen.yaml:9:3: processor "config": its implementation type would be the Go name Config, already taken by the generated type Config in kgen_app.gen.go: rename it`,
			`kgen.yaml:10:3: processor "main": its implementation type would be the Go name Main, already taken by the generated func Main in kgen_app.gen.go: rename it`,
			`kgen.yaml:11:3: processor "topics": its implementation type would be the Go name Topics, already taken by the generated var Topics in kgen_app.gen.go: rename it`,
		}},
		{"avro record", "version: 1\napp: a\ntopics:\n  greetings: {key: string, value: Shout}\nprocessors:\n  shout: {from: [greetings]}\n", []string{
			`kgen.yaml:6:3: processor "shout": its implementation type would be the Go name Shout, already taken by the Go type of Avro record com.example.Shout (schemas/shout.avsc:1:1): rename one of them`,
		}},
		{"store and child", head + `stores:
  forward-to-shouts: {key: string, value: string}
processors:
  shout: {from: [greetings], forward: {key: string, value: string}, to: [shouts, log], stores: [forward-to-shouts]}
  log: {from: [shout]}
`, []string{`kgen.yaml:9:97: store "forward-to-shouts": its accessor would be the method ForwardToShouts of ShoutContext, already taken by the forwarding method to child "shouts" of processor "shout" (kgen.yaml:9:74): rename one of them`}},
		{"store and driver", head + `stores:
  pipe-greetings: {key: string, value: string}
  read-shouts: {key: string, value: string}
processors:
  shout: {from: [greetings], to: [shouts], stores: [pipe-greetings, read-shouts]}
`, []string{
			`kgen.yaml:7:3: store "pipe-greetings": its test driver accessor would be the method PipeGreetings of TestDriver, already taken by the test driver input method of topic "greetings" (kgen.yaml:4:3): rename one of them`,
			`kgen.yaml:8:3: store "read-shouts": its test driver accessor would be the method ReadShouts of TestDriver, already taken by the test driver output method of topic "shouts" (kgen.yaml:5:3): rename one of them`,
		}},
		{"store field keyword", head + `stores:
  type: {key: string, value: string}
  rt: {key: string, value: string}
processors:
  shout: {from: [greetings], stores: [type, rt]}
`, nil},
		{"case and punctuation", `version: 1
app: a
topics:
  Orders: {key: string, value: string}
  orders: {key: string, value: string}
  a.b: {key: string, value: string}
  a_b: {key: string, value: string}
processors:
  p: {from: [Orders, orders, a.b, a_b]}
`, []string{
			`kgen.yaml:5:3: topic "orders": its name constant would be the Go name TopicOrders, already taken by the name constant of topic "Orders" (kgen.yaml:4:3): rename one of them`,
			`kgen.yaml:7:3: topic "a_b": its name constant would be the Go name TopicAB, already taken by the name constant of topic "a.b" (kgen.yaml:6:3): rename one of them`,
		}},
		{"across kinds", `version: 1
app: a
topics:
  orders: {key: string, value: string}
  store-x: {key: string, value: string}
stores:
  x: {key: string, value: string}
processors:
  topic-orders: {from: [orders], stores: [x]}
`, []string{
			`kgen.yaml:7:3: store "x": its key serde would be the field StoreXKey of Serdes, already taken by the key serde of topic "store-x" (kgen.yaml:5:3): rename one of them`,
			`kgen.yaml:9:3: processor "topic-orders": its implementation type would be the Go name TopicOrders, already taken by the name constant of topic "orders" (kgen.yaml:4:3): rename one of them`,
		}},
		{"punctuation methods", `version: 1
app: a
topics:
  in: {key: string, value: string}
processors:
  p: {from: [in], punctuate: [{name: flush, every: 1s}, {name: Flush, every: 2s}]}
`, []string{
			`kgen.yaml:6:64: a punctuation of processor "p": its method would be the method PunctuateFlush of P, already taken by the method of a punctuation of processor "p" (kgen.yaml:6:38): rename one of them`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := schema.Parse("kgen.yaml", []byte(tc.spec))
			if err != nil {
				t.Fatal(err)
			}
			u := &model.Universe{Types: map[string]*model.Type{}}
			if strings.Contains(tc.spec, "value: Shout") {
				u.Types["Shout"] = &model.Type{Kind: model.Record, Name: "Shout", FullName: "com.example.Shout", Schema: `{"type":"record","name":"Shout","fields":[]}`, Pos: model.Pos{File: "schemas/shout.avsc", Line: 1, Col: 1}}
			}
			_, err = Resolve(s, u, "example.com/m")
			var got []string
			if err != nil {
				var es schema.Errors
				if !errors.As(err, &es) {
					t.Fatalf("not schema.Errors: %v", err)
				}
				got = strings.Split(es.Error(), "\n")
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPackageClash: a package: that differs from the Go files already in
// the directory is reported at package:.
func TestPackageClash(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/demo\n\ngo 1.24\n")
	write("demo.go", "package demo\n")
	write("tool.go", "//go:build ignore\n\npackage main\n")
	write("kgen.yaml", "version: 1\napp: demo\npackage: other\ntopics:\n  in: {key: string, value: string}\nprocessors:\n  p: {from: [in]}\n")
	_, err := Load(dir)
	var es schema.Errors
	if !errors.As(err, &es) {
		t.Fatalf("want schema.Errors, got %v", err)
	}
	want := []string{filepath.Join(dir, "kgen.yaml") + `:3:10: package "other": the Go files in this directory are package demo (demo.go), and one directory holds one package: write package: demo, or change their package clauses`}
	if diff := cmp.Diff(want, strings.Split(es.Error(), "\n")); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

func TestScaffoldFile(t *testing.T) {
	for _, tc := range []struct{ ident, want string }{
		{"Split", "split.go"},
		{"RememberCustomer", "remember_customer.go"},
		{"AuditTest", "audit_test_processor.go"},
		{"XLinux", "x_linux_processor.go"},
		{"Linux", "linux.go"},
		{"CountAmd64", "count_amd64_processor.go"},
	} {
		if got := scaffoldFile(tc.ident); got != tc.want {
			t.Errorf("scaffoldFile(%q) = %q, want %q", tc.ident, got, tc.want)
		}
	}
}

// TestUserDeclClash: a hand-written file declaring a name the generated
// code declares is reported at the right side; the processor's own type and
// Factories are the user's to declare.
func TestUserDeclClash(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/demo\n\ngo 1.24\n")
	write("demo.go", "package demo\n\ntype Shout struct{}\n\ntype Factories struct{}\n\nfunc Run() {}\n\ntype ShoutProcessor int\n")
	write("kgen.yaml", "version: 1\napp: demo\ntopics:\n  in: {key: string, value: string}\nprocessors:\n  shout: {from: [in]}\n")
	_, err := Load(dir)
	var es schema.Errors
	if !errors.As(err, &es) {
		t.Fatalf("want schema.Errors, got %v", err)
	}
	got := strings.ReplaceAll(es.Error(), dir+string(filepath.Separator), "")
	want := []string{
		`demo.go:7:6: Run is declared here and by the generated func Run in kgen_app.gen.go: rename yours`,
		`kgen.yaml:6:3: processor "shout": its interface would be the Go name ShoutProcessor, already declared in demo.go:9:6: rename one of them`,
	}
	if diff := cmp.Diff(want, strings.Split(got, "\n")); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}
