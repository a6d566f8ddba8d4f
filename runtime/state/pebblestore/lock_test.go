//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package pebblestore

import (
	"path/filepath"
	"testing"

	"github.com/kgen-dev/kgen/runtime/state"
)

// TestLockDirWithPebbleStoreInside checks that a locked task directory can
// hold Pebble stores in subdirectories (Pebble locks its own directory).
func TestLockDirWithPebbleStoreInside(t *testing.T) {
	task := filepath.Join(t.TempDir(), "0_1")
	unlock, err := state.LockDir(task)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	b, err := Open(filepath.Join(task, "counts"), Options{CacheSize: 1 << 20})
	if err != nil {
		t.Fatalf("Open inside a locked task directory: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}
