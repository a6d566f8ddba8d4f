//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package state

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestLockDirSameProcess(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "task-0_1")
	unlock, err := LockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, LockFileName)); err != nil {
		t.Errorf("lock file: %v", err)
	}

	_, err = LockDir(dir)
	if !errors.Is(err, ErrDirLocked) || !strings.Contains(err.Error(), "in use") || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second LockDir = %v, want an error wrapping ErrDirLocked naming %s", err, dir)
	}

	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	if err := unlock(); err != nil {
		t.Errorf("second unlock = %v, want nil", err)
	}
	unlock2, err := LockDir(dir)
	if err != nil {
		t.Fatalf("LockDir after unlock = %v", err)
	}
	if err := unlock2(); err != nil {
		t.Fatal(err)
	}
}

func TestLockDirOtherDirectories(t *testing.T) {
	root := t.TempDir()
	u1, err := LockDir(filepath.Join(root, "a"))
	if err != nil {
		t.Fatal(err)
	}
	defer u1()
	u2, err := LockDir(filepath.Join(root, "b"))
	if err != nil {
		t.Fatalf("locking another directory = %v", err)
	}
	defer u2()
}

// lockChildEnv names the directory a re-executed test binary tries to lock.
const lockChildEnv = "KGEN_STATE_LOCK_CHILD_DIR"

// TestLockDirChild is the child side of TestLockDirOtherProcess; run
// directly, it does nothing.
func TestLockDirChild(t *testing.T) {
	dir := os.Getenv(lockChildEnv)
	if dir == "" {
		t.Skip("run by TestLockDirOtherProcess")
	}
	unlock, err := LockDir(dir)
	if err != nil {
		os.Stdout.WriteString("LOCK-ERROR: " + err.Error() + "\n")
		return
	}
	os.Stdout.WriteString("LOCKED\n")
	_ = unlock()
}

func TestLockDirOtherProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	dir := filepath.Join(t.TempDir(), "task")
	child := func() string {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run=^TestLockDirChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), lockChildEnv+"="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return string(out)
	}
	unlock, err := LockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if out := child(); !strings.Contains(out, "LOCK-ERROR:") || !strings.Contains(out, "in use") {
		t.Errorf("child locked a directory this process holds; output:\n%s", out)
	}
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	if out := child(); !strings.Contains(out, "LOCKED") {
		t.Errorf("child could not lock a released directory; output:\n%s", out)
	}
}
