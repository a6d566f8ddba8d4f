//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// LockDir takes an exclusive advisory lock (flock on a LOCK file) on a task's state directory, creating it;
// a second lock on the same directory, from this or another process, fails with an error that says the directory is in use.
//
// The error then wraps ErrDirLocked. The lock is released by unlock, or when
// the process exits. Calling unlock more than once is harmless.
func LockDir(dir string) (unlock func() error, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("lock state directory %s: %w", dir, err)
	}
	path := filepath.Join(dir, LockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock state directory %s: %w", dir, err)
	}
	// Locks taken with flock belong to the open file description, so two
	// opens in one process conflict just as two processes do.
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("lock state directory %s: %w", dir, ErrDirLocked)
		}
		return nil, fmt.Errorf("lock state directory %s: %w", dir, err)
	}
	var once sync.Once
	return func() error {
		err := error(nil)
		once.Do(func() {
			// Closing the last descriptor of the file releases the lock.
			if cerr := f.Close(); cerr != nil {
				err = fmt.Errorf("unlock state directory %s: %w", dir, cerr)
			}
		})
		return err
	}, nil
}
