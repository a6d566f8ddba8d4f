package appmain

import (
	"os"
	"syscall"
	"unsafe"
)

// releasePages hands the whole pages of b back to the kernel; b reads as
// zeros afterwards, as a fresh allocation does.
func releasePages(b []byte) {
	if len(b) == 0 {
		return
	}
	page := uintptr(os.Getpagesize())
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	first := (start + page - 1) &^ (page - 1)
	end := (start + uintptr(len(b))) &^ (page - 1)
	if end <= first {
		return
	}
	// An error leaves the pages as they were: resident at worst.
	_ = syscall.Madvise(b[first-start:end-start], syscall.MADV_DONTNEED)
}
