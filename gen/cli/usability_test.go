package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCommandLine: flags after arguments, help per command, and exit 2 for
// every bad command line (1 stays "a problem in your files").
func TestCommandLine(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		code     int
		out, err string // substrings
	}{
		{[]string{"graph", "../../testdata/golden/multichild", "-format", "dot"}, 0, `"sum" -> "topic:stats"`, ""},
		{[]string{"graph", "-format", "dot", "--", "../../testdata/golden/multichild"}, 0, `"sum" -> "topic:stats"`, ""},
		{[]string{"check", "../../testdata/golden/basic", "-format", "text"}, 0, "ok: app basic", ""},
		{[]string{"help", "graph"}, 0, "usage: kgen graph [-format mermaid|dot] [DIR]", ""},
		{[]string{"help", "init"}, 0, "usage: kgen init", ""},
		{[]string{"help", "check"}, 0, "-format json", ""},
		{[]string{"help", "version"}, 0, "usage: kgen version", ""},
		{[]string{"help"}, 0, "go:generate go tool kgen generate", ""},
		{[]string{"help", "frob"}, 2, "", `unknown command "frob"`},
		{[]string{"help", "a", "b"}, 2, "", "usage: kgen help"},
		{[]string{"graph", "-nope", "."}, 2, "", "flag provided but not defined: -nope"},
		{[]string{"check", "-format", "xml", "../../testdata/golden/basic"}, 2, "", `unknown format "xml"`},
		{[]string{"init"}, 2, "", "usage: kgen init"},
		{[]string{"check", "../../testdata/golden/err-cycle"}, 1, "", "cycle among processors"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errs := run(t, tc.args...)
			if code != tc.code || !strings.Contains(out, tc.out) || !strings.Contains(errs, tc.err) {
				t.Errorf("exit %d, want %d\nstdout (want %q):\n%s\nstderr (want %q):\n%s", code, tc.code, tc.out, out, tc.err, errs)
			}
		})
	}
}

func TestCheckJSON(t *testing.T) {
	for _, tc := range []struct {
		dir  string
		code int
		want CheckReport
	}{
		{"basic", 0, CheckReport{OK: true, Summary: "app basic: 3 topics, 2 stores, 2 processors", Diagnostics: []Diagnostic{}}},
		{"err-cycle", 1, CheckReport{Diagnostics: []Diagnostic{{File: "kgen.yaml", Line: 6, Column: 3, Severity: "error", Message: "cycle among processors: a -> b -> c -> a"}}}},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			code, out, errs := run(t, "check", "-format", "json", "../../testdata/golden/"+tc.dir)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %s", code, tc.code, errs)
			}
			var got CheckReport
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("stdout is not a report: %v\n%s", err, out)
			}
			for i := range got.Diagnostics {
				got.Diagnostics[i].File = filepath.Base(got.Diagnostics[i].File)
			}
			if tc.code != 0 {
				got.Diagnostics = got.Diagnostics[:1]
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("report (-want +got):\n%s", diff)
			}
		})
	}
}

// TestOrphanedScaffoldAndMissingScaffold: a processor file whose processor
// left the spec is reported by check (text and JSON) and generate; diff
// fails on a scaffold that generate would write.
func TestOrphanedScaffoldAndMissingScaffold(t *testing.T) {
	dir := copyCase(t, "basic")
	specPath := filepath.Join(dir, "kgen.yaml")
	spec, err := os.ReadFile(specPath)
	if err != nil {
		t.Fatal(err)
	}
	spec = []byte(strings.Replace(string(spec), "  remember-customer: {from: [customers], stores: [customers-by-id]}\n", "", 1))
	if err := os.WriteFile(specPath, spec, 0o644); err != nil {
		t.Fatal(err)
	}
	// Its factory goes too (TestCheckAndDiffSeeFactories has it kept).
	fpath := filepath.Join(dir, "factories.go")
	fsrc, err := os.ReadFile(fpath)
	if err != nil {
		t.Fatal(err)
	}
	fsrc = []byte(strings.Replace(string(fsrc), "func (Factories) RememberCustomer() RememberCustomerProcessor { return &RememberCustomer{} }", "", 1))
	if err := os.WriteFile(fpath, fsrc, 0o644); err != nil {
		t.Fatal(err)
	}
	want := `note: remember_customer.go: processor "remember-customer" is no longer in kgen.yaml`
	if code, _, errs := run(t, "check", dir); code != 0 || !strings.Contains(errs, want) {
		t.Errorf("check: exit %d, stderr:\n%s\nwant %q", code, errs, want)
	}
	code, out, _ := run(t, "check", "-format", "json", dir)
	if code != 0 || !strings.Contains(out, `"severity": "warning"`) || !strings.Contains(out, `"file": "remember_customer.go"`) {
		t.Errorf("check -format json: exit %d\n%s", code, out)
	}
	if code, _, errs := run(t, "generate", dir); code != 0 || !strings.Contains(errs, want) {
		t.Errorf("generate: exit %d, stderr:\n%s", code, errs)
	}

	if err := os.Remove(filepath.Join(dir, "enrich.go")); err != nil {
		t.Fatal(err)
	}
	code, _, errs := run(t, "diff", dir)
	if code != 1 || !strings.Contains(errs, "scaffold enrich.go is missing: kgen generate writes it") {
		t.Errorf("diff with a missing scaffold: exit %d, stderr:\n%s", code, errs)
	}
}

func TestVersionFrom(t *testing.T) {
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"none", nil, "(devel)"},
		{"installed", &debug.BuildInfo{Main: debug.Module{Path: kgenModule, Version: "v0.4.1"}}, "v0.4.1"},
		{"checkout", &debug.BuildInfo{Main: debug.Module{Path: kgenModule, Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}}, "(devel, revision 0123456789ab, modified)"},
		{"dependency", &debug.BuildInfo{Main: debug.Module{Path: "example.com/app"}, Deps: []*debug.Module{{Path: kgenModule, Version: "v0.5.0"}}}, "v0.5.0"},
		{"replaced by a directory", &debug.BuildInfo{Main: debug.Module{Path: "example.com/app"},
			Deps: []*debug.Module{{Path: kgenModule, Version: zeroPseudo, Replace: &debug.Module{Path: "../kgen"}}}}, "(devel, from a local directory)"},
	} {
		if got := versionFrom(tc.bi, tc.bi != nil); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
