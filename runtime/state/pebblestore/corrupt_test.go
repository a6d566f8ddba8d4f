package pebblestore

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/kgen-dev/kgen/runtime/state"
)

// damagedSource writes a store with a table file (the first commits) and a
// WAL (the later ones), closes it and returns its directory and writes.
func damagedSource(t *testing.T) (string, []op) {
	t.Helper()
	const commits, perCommit = 4, 200
	dir := filepath.Join(t.TempDir(), "store")
	b := openT(t, dir, Options{CacheSize: 1 << 20}, vfs.Default)
	ops := workload(commits, perCommit)
	applyCommits(t, b, ops, 2, perCommit, true)
	if err := b.db.Flush(); err != nil { // the first two commits to a table
		t.Fatal(err)
	}
	applyCommits(t, tail{b, 2 * perCommit}, ops[2*perCommit:], 2, perCommit, true)
	closeT(t, b)
	return dir, ops
}

// the returns the one file of dir whose name starts or ends with affix.
func the(t *testing.T, dir, affix string) string {
	t.Helper()
	names := files(t, dir, affix)
	if len(names) != 1 {
		t.Fatalf("files %q in the store: %q, want one", affix, names)
	}
	return filepath.Join(dir, names[0])
}

func garbage(t *testing.T, path string) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, max(st.Size(), 64))
	for i := range data {
		data[i] = byte(i*131 + 7)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func truncate(t *testing.T, path string, frac float64) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, int64(float64(st.Size())*frac)); err != nil {
		t.Fatal(err)
	}
}

func remove(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

// TestOpenDamagedStore damages one file of a store: Open must fail with an
// error that wraps state.ErrCorrupt and names the directory.
func TestOpenDamagedStore(t *testing.T) {
	src, _ := damagedSource(t)
	cases := []struct {
		name   string
		damage func(t *testing.T, dir string)
	}{
		{"garbage MANIFEST", func(t *testing.T, dir string) { garbage(t, the(t, dir, "MANIFEST-")) }},
		{"empty MANIFEST", func(t *testing.T, dir string) { truncate(t, the(t, dir, "MANIFEST-"), 0) }},
		{"missing MANIFEST", func(t *testing.T, dir string) { remove(t, the(t, dir, "MANIFEST-")) }},
		{"garbage OPTIONS", func(t *testing.T, dir string) { garbage(t, the(t, dir, "OPTIONS-")) }},
		{"garbage table", func(t *testing.T, dir string) { garbage(t, the(t, dir, ".sst")) }},
		{"garbage table footer", func(t *testing.T, dir string) {
			path := the(t, dir, ".sst")
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			st, _ := f.Stat()
			if _, err := f.WriteAt([]byte("not a footer, not a footer"), st.Size()-26); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
		}},
		{"truncated table", func(t *testing.T, dir string) { truncate(t, the(t, dir, ".sst"), 0.5) }},
		{"empty table", func(t *testing.T, dir string) { truncate(t, the(t, dir, ".sst"), 0) }},
		{"missing table", func(t *testing.T, dir string) { remove(t, the(t, dir, ".sst")) }},
		{"position of a later version", func(t *testing.T, dir string) {
			db, err := pebble.Open(dir, &pebble.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := db.RangeKeySet(positionStart, positionEnd, nil, []byte{positionVersion + 1, 0, 0, 0, 0, 0, 0, 0, 1}, pebble.Sync); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
		}},
		{"position record too short", func(t *testing.T, dir string) {
			db, err := pebble.Open(dir, &pebble.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := db.RangeKeySet(positionStart, positionEnd, nil, []byte{positionVersion, 1}, pebble.Sync); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store")
			copyDir(t, src, dir)
			c.damage(t, dir)
			b, err := Open(dir, Options{CacheSize: 1 << 20})
			if err == nil {
				_ = b.Close()
				t.Fatal("Open of a damaged store succeeded")
			}
			if !errors.Is(err, state.ErrCorrupt) {
				t.Errorf("Open = %v, want an error wrapping ErrCorrupt", err)
			}
			if !strings.Contains(err.Error(), dir) {
				t.Errorf("Open = %v, want an error naming %s", err, dir)
			}
		})
	}
}

// TestOpenTornStore damages a store the way Pebble takes for a torn write
// rather than corruption, so it may open: it must then hold a prefix of its
// writes that includes every write before its position.
func TestOpenTornStore(t *testing.T) {
	src, ops := damagedSource(t)
	cases := []struct {
		name   string
		damage func(t *testing.T, dir string)
	}{
		{"MANIFEST cut in half", func(t *testing.T, dir string) { truncate(t, the(t, dir, "MANIFEST-"), 0.5) }},
		{"MANIFEST marker missing", func(t *testing.T, dir string) { remove(t, the(t, dir, "marker.manifest.")) }},
		{"OPTIONS missing", func(t *testing.T, dir string) { remove(t, the(t, dir, "OPTIONS-")) }},
		{"newest WAL garbage", func(t *testing.T, dir string) {
			wals := files(t, dir, ".log")
			garbage(t, filepath.Join(dir, wals[len(wals)-1]))
		}},
		{"every WAL missing", func(t *testing.T, dir string) {
			for _, w := range files(t, dir, ".log") {
				remove(t, filepath.Join(dir, w))
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store")
			copyDir(t, src, dir)
			c.damage(t, dir)
			b, err := openPebble(dir, Options{CacheSize: 1 << 20}, vfs.Default)
			if err != nil {
				if !errors.Is(err, state.ErrCorrupt) {
					t.Fatalf("Open = %v, want success or ErrCorrupt", err)
				}
				t.Logf("Open: %v", err)
				return
			}
			defer closeT(t, b)
			n, err := consistent(t, b, ops)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("reopened at position %d with the first %d writes", position(t, b), n)
		})
	}
}

// TestReadOfDamagedBlockIsCorrupt damages a data block, which Open does not
// read: the read that finds it must fail with ErrCorrupt (not exit the
// process, as Pebble's default handler of corruption does).
func TestReadOfDamagedBlockIsCorrupt(t *testing.T) {
	src, _ := damagedSource(t)
	dir := filepath.Join(t.TempDir(), "store")
	copyDir(t, src, dir)
	f, err := os.OpenFile(the(t, dir, ".sst"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("damage in the first data block"), 64); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := Open(dir, Options{CacheSize: 1 << 20})
	if err != nil {
		t.Fatalf("Open = %v; the damage is in a block Open does not read", err)
	}
	defer b.Close()
	it := must(b.Range(nil, nil))
	for it.Next() {
	}
	err = it.Err()
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if !errors.Is(err, state.ErrCorrupt) || !strings.Contains(err.Error(), dir) {
		t.Errorf("iterating a damaged block: %v, want an error wrapping ErrCorrupt naming %s", err, dir)
	}
	_, _, err = b.Get([]byte("c000-0001"))
	if !errors.Is(err, state.ErrCorrupt) {
		t.Errorf("Get in a damaged block: %v, want an error wrapping ErrCorrupt", err)
	}
}

// deniedFS fails to open files whose name contains deny, as a file without
// read permission does (the tests run as root, who is never denied).
type deniedFS struct {
	vfs.FS
	deny string
}

func (d deniedFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	if strings.Contains(filepath.Base(name), d.deny) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	return d.FS.Open(name, opts...)
}

// TestOpenFailureThatIsNotDamage checks that failures which say nothing
// about the files do not wrap ErrCorrupt: the runtime would wipe the store.
func TestOpenFailureThatIsNotDamage(t *testing.T) {
	src, _ := damagedSource(t)
	cases := []struct {
		name string
		open func(t *testing.T, dir string) error
	}{
		{"lock held by this process", func(t *testing.T, dir string) error {
			openT(t, dir, Options{CacheSize: 1 << 20}, vfs.Default)
			_, err := openPebble(dir, Options{CacheSize: 1 << 20}, vfs.Default)
			return err
		}},
		{"lock held by another process", func(t *testing.T, dir string) error {
			holdInAnotherProcess(t, dir)
			_, err := openPebble(dir, Options{CacheSize: 1 << 20}, vfs.Default)
			return err
		}},
		{"MANIFEST not readable", func(t *testing.T, dir string) error {
			_, err := openPebble(dir, Options{CacheSize: 1 << 20}, deniedFS{vfs.Default, "MANIFEST-"})
			return err
		}},
		{"table not readable", func(t *testing.T, dir string) error {
			_, err := openPebble(dir, Options{CacheSize: 1 << 20}, deniedFS{vfs.Default, ".sst"})
			return err
		}},
		{"directory is a file", func(t *testing.T, dir string) error {
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dir, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := openPebble(dir, Options{CacheSize: 1 << 20}, vfs.Default)
			return err
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store")
			copyDir(t, src, dir)
			err := c.open(t, dir)
			if err == nil {
				t.Fatal("Open succeeded")
			}
			t.Logf("Open: %v", err)
			if errors.Is(err, state.ErrCorrupt) {
				t.Errorf("Open = %v, want an error not wrapping ErrCorrupt", err)
			}
			if !strings.Contains(err.Error(), dir) {
				t.Errorf("Open = %v, want an error naming %s", err, dir)
			}
		})
	}
}

// holdEnv names the store directory the test binary, started again by
// holdInAnotherProcess, opens and holds until its standard input closes.
const holdEnv = "PEBBLESTORE_TEST_HOLD"

// holdInAnotherProcess opens the store in dir in a child process until the
// test ends.
func holdInAnotherProcess(t *testing.T, dir string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHoldStore$")
	cmd.Env = append(os.Environ(), holdEnv+"="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("process holding the store: %v", err)
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "holding\n" {
		t.Fatalf("process holding the store said %q, %v", line, err)
	}
}

// TestHoldStore is the child process of holdInAnotherProcess; it does
// nothing in a normal run.
func TestHoldStore(t *testing.T) {
	dir := os.Getenv(holdEnv)
	if dir == "" {
		t.Skip("run by holdInAnotherProcess")
	}
	b, err := Open(dir, Options{CacheSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("holding")
	_, _ = io.Copy(io.Discard, os.Stdin)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}
