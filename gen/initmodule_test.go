package gen

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestInitInsideAModule: kgen init in a directory of a module makes a
// package of that module, with no go.mod of its own, whose go:generate,
// vet and tests run from the module root, as the README's walkthrough does.
func TestInitInsideAModule(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go generate and go test")
	}
	t.Parallel() // its go commands overlap the others' (gocmd_test.go)
	parent := stableDir(t, "../testdata", "tmp-init-module")
	dir := filepath.Join(parent, "orders")
	wrote, err := Init(dir, InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(wrote, "go.mod") {
		t.Errorf("init wrote a go.mod inside a module: %v", wrote)
	}
	spec, err := os.ReadFile(filepath.Join(dir, "kgen.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(spec), "# yaml-language-server: $schema=https://") {
		t.Errorf("kgen.yaml does not name its JSON Schema:\n%s", spec)
	}
	rel := "./testdata/" + filepath.Base(parent) + "/orders/..."
	for _, args := range [][]string{{"generate", rel}, {"vet", rel}, {"test", "-vet=off", "-ldflags=-w", rel}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %v from the module root: %v\n%s", args, err, out)
		}
	}
}

func TestReplaceTargetAndSchemaURL(t *testing.T) {
	for _, tc := range []struct{ project, checkout, want string }{
		{"/w/apps/hello", "/w/kgen", "../../kgen"},
		{"/w/kgen/x/hello", "/w/kgen", "../.."},
	} {
		if got := replaceTarget(filepath.FromSlash(tc.project), filepath.FromSlash(tc.checkout)); got != tc.want {
			t.Errorf("replaceTarget(%s, %s) = %s, want %s", tc.project, tc.checkout, got, tc.want)
		}
	}
	for _, tc := range []struct{ version, ref string }{
		{"v1.2.3", "v1.2.3"}, {"(devel)", "main"}, {"", "main"},
		{"v0.0.0-20260101120000-abcdefabcdef", "main"}, {"v0.0.0-00010101000000-000000000000", "main"},
	} {
		if got := schemaURL(tc.version); !strings.Contains(got, "/kgen/"+tc.ref+"/schema/kgen.schema.json") {
			t.Errorf("schemaURL(%q) = %s, want ref %s", tc.version, got, tc.ref)
		}
	}
}

// TestInitInAnotherModuleNeedsTheTool: a development build cannot add
// itself to another module; init says the one command to run and writes
// nothing.
func TestInitInAnotherModuleNeedsTheTool(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module example.com/shop\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "orders")
	wrote, err := Init(dir, InitOptions{KgenVersion: "(devel)"})
	if err == nil || !strings.Contains(err.Error(), "go get -tool github.com/kgen-dev/kgen/cmd/kgen") {
		t.Fatalf("Init: %v, want the go get -tool command named", err)
	}
	if len(wrote) != 0 {
		t.Errorf("wrote %v", wrote)
	}
	if _, err := os.Stat(filepath.Join(dir, "kgen.yaml")); !os.IsNotExist(err) {
		t.Errorf("kgen.yaml written: %v", err)
	}
	if root2, path := enclosingModule(dir); root2 != root || path != "example.com/shop" {
		t.Errorf("enclosingModule = %s, %s", root2, path)
	}
}
