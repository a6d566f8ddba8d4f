package gen

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
)

// The tests that run the go command (vet, build, test of generated
// projects) are most of this package's time. Two things keep it down, and
// neither drops a case:
//
//   - They run in parallel with one another (t.Parallel): each go command
//     spends much of its time in serial steps (loading packages, linking,
//     running a test binary), which leave a core idle that another one
//     fills.
//   - The projects they generate sit in fixed folders (stableDir), not in
//     fresh temporary ones: a package's import path and directory are part
//     of the go command's cache keys, so with a fixed folder an unchanged
//     project is vetted and tested from the cache, and a changed one (kgen
//     or the runtime edited) is rebuilt, as it must be.
//   - go test runs after a full go vet of the same packages with -vet=off
//     (its vet is a subset of those checks) and -ldflags=-w (a test binary
//     run once needs no DWARF; linking is most of building one).

// stableDir returns the folder parent/name emptied, and removes it when the
// test ends. With parent "" it is a folder of the system's temporary
// directory named after name and this checkout, so that two checkouts on
// one machine do not share it.
func stableDir(t *testing.T, parent, name string) string {
	t.Helper()
	if parent == "" {
		wd, err := os.Getwd()
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte(wd))
		parent = filepath.Join(os.TempDir(), "kgen-test-"+hex.EncodeToString(sum[:6]))
	}
	dir := filepath.Join(parent, name)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
