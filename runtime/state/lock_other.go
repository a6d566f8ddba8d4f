//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package state

import (
	"fmt"
	"runtime"
)

// LockDir takes an exclusive advisory lock (flock on a LOCK file) on a task's state directory, creating it;
// a second lock on the same directory, from this or another process, fails with an error that says the directory is in use.
//
// On this operating system locking is not implemented yet and LockDir fails.
func LockDir(dir string) (unlock func() error, err error) {
	return nil, fmt.Errorf("lock state directory %s: not supported on %s", dir, runtime.GOOS)
}
