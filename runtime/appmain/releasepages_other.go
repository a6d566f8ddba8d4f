//go:build !linux

package appmain

// releasePages does nothing off Linux: there the ballast may be resident
// when the runtime zeroed it.
func releasePages(b []byte) {}
