package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/gen"
)

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestCommands(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		code     int
		out, err string // substrings
	}{
		{[]string{"help"}, 0, "Commands:", ""},
		{nil, 2, "", "Usage:"},
		{[]string{"frobnicate"}, 2, "", `unknown command "frobnicate"`},
		{[]string{"version"}, 0, fmt.Sprintf("generated code contract %d", gen.ContractVersion), ""},
		{[]string{"check", "../../testdata/golden/basic"}, 0, "ok: app basic: 3 topics, 2 stores, 2 processors", ""},
		{[]string{"check", "../../testdata/golden/err-cycle"}, 1, "", "kgen.yaml:6:3: cycle among processors: a -> b -> c -> a"},
		{[]string{"check", "../../testdata/golden/err-typos"}, 1, "", `kgen.yaml:10:71: unknown key "frm" in processor "p" (did you mean "from"?)`},
		{[]string{"check", "/nonexistent"}, 1, "", "no spec here"},
		// The spec file names its directory; another file is no directory.
		{[]string{"check", "../../testdata/golden/basic/kgen.yaml"}, 0, "ok: app basic", ""},
		{[]string{"check", "../../testdata/golden/basic/model/model.go"}, 1, "", "model.go: not a directory: give the directory that holds kgen.yaml"},
		{[]string{"check", "a", "b"}, 2, "", "usage: kgen check"},
		{[]string{"graph", "../../testdata/golden/multichild"}, 0, "route -->|string,model.Reading| check", ""},
		// Operators, and where the repartition topics are: after a groupBy, and
		// after a groupByKey whose input a map re-keyed.
		{[]string{"graph", "../../testdata/golden/ops"}, 0, "by_letter -->|string,int64| topic_ops_by_letter_repartition\n  topic_ops_by_letter_repartition --> total", ""},
		{[]string{"graph", "../../testdata/golden/ops"}, 0, `by_word["by-word<br/>groupBy"]`, ""},
		{[]string{"graph", "-format", "dot", "../../testdata/golden/multichild"}, 0, `"sum" -> "topic:stats" [label="model.Key,int64"];`, ""},
		{[]string{"graph", "-format", "svg", "../../testdata/golden/multichild"}, 2, "", "unknown format"},
		{[]string{"diff", "../../testdata/golden/basic"}, 0, "", ""},
		{[]string{"generate", "-h"}, 0, "", "usage: kgen generate"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errs := run(t, tc.args...)
			if code != tc.code || !strings.Contains(out, tc.out) || !strings.Contains(errs, tc.err) {
				t.Errorf("exit %d, want %d\nstdout (want %q):\n%s\nstderr (want %q):\n%s", code, tc.code, tc.out, out, tc.err, errs)
			}
		})
	}
}

// copyCase copies a golden case into a fresh folder inside the module (the
// generator needs go.mod above the spec) and returns its path.
func copyCase(t *testing.T, name string) string {
	t.Helper()
	dir, err := os.MkdirTemp("../../testdata", "tmp-cli-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	src := filepath.Join("../../testdata/golden", name)
	err = filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	// The copy has its own import path: bring its generated files in line.
	if code, _, errs := run(t, "generate", dir); code != 0 {
		t.Fatalf("generate %s: exit %d\n%s", dir, code, errs)
	}
	return dir
}

func TestDiffAndGenerate(t *testing.T) {
	dir := copyCase(t, "basic")
	gen := filepath.Join(dir, "kgen.gen.go")
	data, err := os.ReadFile(gen)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gen, bytes.Replace(data, []byte(`const AppID = "basic"`), []byte(`const AppID = "stale"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "diff", dir)
	if code != 1 || !strings.Contains(out, "-const AppID = \"stale\"\n+const AppID = \"basic\"") || !strings.Contains(errs, "stale") {
		t.Fatalf("diff on a stale file: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, _ = run(t, "generate", dir)
	if code != 0 || out != "wrote kgen.gen.go\n" {
		t.Fatalf("generate: exit %d, output %q", code, out)
	}
	if code, out, _ := run(t, "diff", dir); code != 0 || out != "" {
		t.Fatalf("diff after generate: exit %d\n%s", code, out)
	}
}

// TestGenerateAnnouncesNewMethods: when the spec gains a punctuation, the
// user's processor file is left alone and generate says what to add.
func TestGenerateAnnouncesNewMethods(t *testing.T) {
	dir := copyCase(t, "basic")
	specPath := filepath.Join(dir, "kgen.yaml")
	spec, err := os.ReadFile(specPath)
	if err != nil {
		t.Fatal(err)
	}
	spec = bytes.Replace(spec, []byte("remember-customer: {from: [customers], stores: [customers-by-id]}"),
		[]byte("remember-customer: {from: [customers], stores: [customers-by-id], punctuate: [{every: 1h, time: wall-clock}]}"), 1)
	if err := os.WriteFile(specPath, spec, 0o644); err != nil {
		t.Fatal(err)
	}
	user := filepath.Join(dir, "remember_customer.go")
	before, err := os.ReadFile(user)
	if err != nil {
		t.Fatal(err)
	}
	code, _, errs := run(t, "generate", dir)
	if code != 0 {
		t.Fatalf("generate: exit %d\n%s", code, errs)
	}
	want := "RememberCustomer does not have method Punctuate yet: add\n\tfunc (p *RememberCustomer) Punctuate(ctx *RememberCustomerContext, now time.Time) error {"
	if !strings.Contains(errs, want) {
		t.Errorf("generate did not announce the new method; stderr:\n%s", errs)
	}
	after, err := os.ReadFile(user)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Error("generate changed the user's file")
	}
}

// TestObsoleteGeneratedFile: a generated file the spec no longer calls for
// is stale for diff and removed by generate.
func TestObsoleteGeneratedFile(t *testing.T) {
	dir := copyCase(t, "basic")
	avro := filepath.Join(dir, "kgen_avro.gen.go")
	if err := os.WriteFile(avro, []byte("// Code generated by kgen. DO NOT EDIT.\n\npackage basic\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := run(t, "diff", dir); code != 1 || !strings.Contains(out, "-package basic") {
		t.Fatalf("diff: exit %d\n%s", code, out)
	}
	if code, out, errs := run(t, "generate", dir); code != 0 || !strings.Contains(out, "kgen_avro.gen.go (removed)") {
		t.Fatalf("generate: exit %d\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(avro); !os.IsNotExist(err) {
		t.Fatalf("kgen_avro.gen.go still there: %v", err)
	}
}

// TestGenerateScaffoldsNewProcessor: a processor added to the spec gets its
// file written, and the factory it needs in the user's factories.go is
// announced, not edited.
func TestGenerateScaffoldsNewProcessor(t *testing.T) {
	dir := copyCase(t, "basic")
	specPath := filepath.Join(dir, "kgen.yaml")
	spec, err := os.ReadFile(specPath)
	if err != nil {
		t.Fatal(err)
	}
	spec = append(spec, []byte("  audit-log: {from: [orders]}\n")...)
	if err := os.WriteFile(specPath, spec, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "generate", dir)
	if code != 0 {
		t.Fatalf("generate: exit %d\n%s", code, errs)
	}
	if !strings.Contains(out, "wrote audit_log.go") {
		t.Errorf("no scaffold for the new processor:\n%s", out)
	}
	if want := "factories.go: Factories has no method for processor \"audit-log\" yet (it will not compile): add\n\tfunc (Factories) AuditLog() AuditLogProcessor { return &AuditLog{} }"; !strings.Contains(errs, want) {
		t.Errorf("the missing factory not announced; stderr:\n%s", errs)
	}
	src, err := os.ReadFile(filepath.Join(dir, "audit_log.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"var _ AuditLogProcessor = (*AuditLog)(nil)", "func (p *AuditLog) Process(ctx *AuditLogContext, key string, value model.Order) error {"} {
		if !strings.Contains(string(src), want) {
			t.Errorf("audit_log.go lacks %q:\n%s", want, src)
		}
	}
}

// TestCheckAgainst: check -against a spec file reports a renamed store at
// the new spec's position with exit status 1, and an unchanged spec passes.
func TestCheckAgainst(t *testing.T) {
	dir := copyCase(t, "basic")
	specPath := filepath.Join(dir, "kgen.yaml")
	spec, err := os.ReadFile(specPath)
	if err != nil {
		t.Fatal(err)
	}
	oldPath := filepath.Join(t.TempDir(), "old.yaml")
	if err := os.WriteFile(oldPath, spec, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := run(t, "check", "-against", oldPath, dir); code != 0 || !strings.Contains(out, "no change from") {
		t.Fatalf("unchanged: exit %d\n%s%s", code, out, errs)
	}
	renamed := strings.ReplaceAll(string(spec), "pending", "waiting")
	if err := os.WriteFile(specPath, []byte(renamed), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := run(t, "check", "-against", oldPath, dir)
	if code != 1 || !strings.Contains(errs, `breaking: store "waiting" looks like store "pending" renamed`) || !strings.Contains(errs, "kgen.yaml:") {
		t.Fatalf("renamed store: exit %d\n%s", code, errs)
	}
}

// TestCheckAndDiffSeeFactories: Factories lacking the method of a new
// processor, or keeping the one of a removed processor (whose interface is
// no longer generated), does not compile; check and diff say so at
// factories.go, as generate's notes do, instead of ok.
func TestCheckAndDiffSeeFactories(t *testing.T) {
	for _, tc := range []struct {
		name   string
		edit   func(spec string) string
		stderr string // after the case folder's name
	}{
		{"processor added", func(spec string) string { return spec + "  audit-log: {from: [orders]}\n" },
			"/factories.go: Factories has no method for processor \"audit-log\" yet (it will not compile): add\n\tfunc (Factories) AuditLog() AuditLogProcessor { return &AuditLog{} }\n"},
		{"processor removed", func(spec string) string {
			return strings.Replace(spec, "  remember-customer: {from: [customers], stores: [customers-by-id]}\n", "", 1)
		}, "/factories.go: Factories method RememberCustomer is for no processor or operator of kgen.yaml and names RememberCustomerProcessor, " +
			"which kgen no longer generates (it will not compile: undefined: RememberCustomerProcessor): delete the method\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyCase(t, "basic")
			specPath := filepath.Join(dir, "kgen.yaml")
			spec, err := os.ReadFile(specPath)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(specPath, []byte(tc.edit(string(spec))), 0o644); err != nil {
				t.Fatal(err)
			}
			// What go generate does: files written, the user told.
			if code, _, errs := run(t, "generate", dir); code != 0 || !strings.Contains(errs, "note: "+filepath.Base(dir)+tc.stderr) {
				t.Fatalf("generate: exit %d\n%s", code, errs)
			}
			want := filepath.Base(dir) + tc.stderr
			orphan := ""
			if tc.name == "processor removed" {
				orphan = "note: remember_customer.go: processor \"remember-customer\" is no longer in kgen.yaml: delete the file if its code is not needed\n"
			}
			if code, out, errs := run(t, "check", dir); code != 1 || out != "" || errs != want+orphan {
				t.Errorf("check: exit %d, want 1\nstdout:\n%s\nstderr:\n%s\nwant stderr:\n%s", code, out, errs, want+orphan)
			}
			if code, out, errs := run(t, "diff", dir); code != 1 || out != "" || errs != want {
				t.Errorf("diff: exit %d, want 1\nstdout:\n%s\nstderr:\n%s\nwant stderr:\n%s", code, out, errs, want)
			}
			code, out, _ := run(t, "check", "-format", "json", dir)
			wantJSON := fmt.Sprintf("%q", strings.TrimPrefix(tc.stderr, "/factories.go: ")[:40])
			if code != 1 || !strings.Contains(out, `"ok": false`) || !strings.Contains(out, `"file": "`+filepath.Base(dir)+`/factories.go"`) || !strings.Contains(out, strings.Trim(wantJSON, `"`)) {
				t.Errorf("check -format json: exit %d, want 1 and the diagnostic at factories.go\n%s", code, out)
			}
		})
	}
}
