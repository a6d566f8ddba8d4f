package gen

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestStaleFactoryNotes: only a leftover Factories method naming a type
// that nothing declares is reported; one that compiles is left alone, and
// parameter names (nested ones too) are not taken for types.
func TestStaleFactoryNotes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "shop")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src := `package shop

import "strings"

type Factories struct{}

type Kept struct{}

const N = 2

func (Factories) Enrich() EnrichProcessor { return nil }
func (Factories) Shout() ShoutProcessor { return &Shout{} }
func (Factories) Upper(key string, value [N]Kept, f func(limit int) strings.Builder) (out []byte) { return nil }
func (Kept) Other() Missing { return nil }
`
	if err := os.WriteFile(filepath.Join(dir, "factories.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	res := &Result{Files: []File{{Path: "kgen.gen.go", Data: []byte("package shop\n\ntype EnrichProcessor interface{}\n")}}}
	got := staleFactoryNotes(dir, "factories.go", res, []string{"Enrich"})
	want := []string{`shop/factories.go: Factories method Shout is for no processor or operator of kgen.yaml and names ShoutProcessor, which kgen no longer generates (it will not compile: undefined: ShoutProcessor): delete the method`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
}
