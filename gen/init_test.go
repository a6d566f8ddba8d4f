package gen

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// TestInit makes a new project and runs its tests: kgen init must give a
// project that builds and passes right away, pointing at this checkout.
func TestInit(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go mod tidy and go test")
	}
	t.Parallel() // its go commands overlap the others' (gocmd_test.go)
	dir := filepath.Join(stableDir(t, "", "init"), "hello")
	if _, err := Init(dir, InitOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"vet", "./..."}, {"test", "-vet=off", "-ldflags=-w", "./..."}, {"tool", "kgen", "diff"}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %v in the new project: %v\n%s", args, err, out)
		}
	}
	if _, err := Init(dir, InitOptions{}); err == nil {
		t.Error("a second init in the same directory succeeded")
	}
}
