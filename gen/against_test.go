package gen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kgen-dev/kgen/schema"
)

// TestCompareSpecs runs the golden pairs of testdata/against: each folder
// holds old.yaml, new.yaml and want.txt, the changes kgen check --against
// reports (-update rewrites want.txt).
func TestCompareSpecs(t *testing.T) {
	dirs, err := filepath.Glob("../testdata/against/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			parse := func(name string) *schema.Spec {
				data, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				s, err := schema.Parse(name, data)
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			var b strings.Builder
			for _, c := range CompareSpecs(parse("old.yaml"), parse("new.yaml")) {
				b.WriteString(c.String() + "\n")
			}
			got := b.String()
			path := filepath.Join(dir, "want.txt")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./gen -run TestCompareSpecs -update)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("changes differ (-want +got):\n%s", diff)
			}
		})
	}
}
