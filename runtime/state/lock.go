package state

import "errors"

// LockFileName is the file in a task's state directory that LockDir locks.
const LockFileName = "LOCK"

// ErrDirLocked is returned, wrapped, by LockDir when another holder, in this
// process or another, has the directory locked. The runtime may retry: during
// a rebalance the previous owner of a task releases its directory shortly.
var ErrDirLocked = errors.New("state directory is in use")
