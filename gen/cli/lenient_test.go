package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestJSONLenientFormat: format json-lenient makes the topic's serde decode
// as encoding/json does; the generated code compiles.
func TestJSONLenientFormat(t *testing.T) {
	dir := copyCase(t, "basic")
	specPath := filepath.Join(dir, "kgen.yaml")
	spec, err := os.ReadFile(specPath)
	if err != nil {
		t.Fatal(err)
	}
	spec = bytes.Replace(spec, []byte("value: model.Order, format: json,"), []byte("value: model.Order, format: json-lenient,"), 1)
	if err := os.WriteFile(specPath, spec, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := run(t, "generate", dir); code != 0 {
		t.Fatalf("generate: exit %d\n%s", code, errs)
	}
	src, err := os.ReadFile(filepath.Join(dir, "kgen.gen.go"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "serde.JSON[model.Order]{Lenient: true}"; !strings.Contains(string(src), want) {
		t.Errorf("kgen.gen.go lacks %q", want)
	}
	if want := "serde.JSON[model.Customer]{}"; !strings.Contains(string(src), want) {
		t.Errorf("kgen.gen.go lacks %q: the other topics stay strict", want)
	}
	// The copy's own files still import the golden case's packages.
	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(path, bytes.ReplaceAll(data, []byte("testdata/golden/basic"), []byte("testdata/"+filepath.Base(dir))), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "vet", "./...")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go vet: %v\n%s", err, out)
	}
}
