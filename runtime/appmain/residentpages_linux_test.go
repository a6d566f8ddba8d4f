package appmain

import (
	"os"
	"syscall"
	"unsafe"
)

// residentPages counts the pages of b in memory (mincore(2)).
func residentPages(b []byte) (int, error) {
	page := uintptr(os.Getpagesize())
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b))) &^ (page - 1)
	end := (uintptr(unsafe.Pointer(unsafe.SliceData(b))) + uintptr(len(b)) + page - 1) &^ (page - 1)
	vec := make([]byte, (end-start)/page)
	if _, _, errno := syscall.Syscall(syscall.SYS_MINCORE, start, end-start, uintptr(unsafe.Pointer(unsafe.SliceData(vec)))); errno != 0 {
		return 0, errno
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n, nil
}
