//go:build !linux

package pebblestore

import "errors"

// allocate is not available here: the reserve is written instead.
func allocate(uintptr, int64) error { return errors.ErrUnsupported }
