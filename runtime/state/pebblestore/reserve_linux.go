package pebblestore

import "syscall"

// allocate gives the file fd size bytes of disk without writing them.
func allocate(fd uintptr, size int64) error { return syscall.Fallocate(int(fd), 0, 0, size) }
