package appmain

import (
	"runtime/debug"
	"sync"
)

// DefaultHeapFloorMiB is the heap floor of an instance that serves store
// queries (Config.HeapFloorMiB).
const DefaultHeapFloorMiB = 64

// An instance serving store queries keeps little on Go's heap (a store's
// data lives in Pebble's memory or in pointer-free slabs) and allocates
// some 5 KB a query, mostly net/http's. With Go's default GOGC=100 and a
// live heap of 4 MiB the collector then runs every few megabytes: some 15
// to 30 times a second at 25,000 queries a second, each with its
// stop-the-world phases and a P taken for marking, and on two cores that
// was the p99 of a local get (1.0-1.8 ms against a median of 70 us). A
// floor under the heap's target removes most of those collections for a
// bounded price: the heap may hold up to the floor in garbage, where a
// higher GOGC would multiply whatever the live heap is.
//
// The floor is a ballast: a pointer-free allocation the heap target
// counts and the collector neither scans nor touches, so its pages are
// never resident. Go has no floor setting of its own (GOMEMLIMIT is a
// ceiling).

var (
	ballastMu sync.Mutex
	ballast   []byte
)

// SetHeapFloor keeps Go's heap target at about mib MiB or more, at the
// process's GOGC: the collector does not run before the heap reaches it.
// 0 removes the floor; with GOGC=off it does nothing. It is the process's
// setting: the generated main calls it for an instance that serves store
// queries (Config.HeapFloorMiB), and a program serving them by hand may.
func SetHeapFloor(mib int) {
	ballastMu.Lock()
	defer ballastMu.Unlock()
	ballast = nil
	gogc := debug.SetGCPercent(100)
	debug.SetGCPercent(gogc)
	if mib <= 0 || gogc < 0 {
		return
	}
	// The target is the live heap times 1+GOGC/100, the ballast included.
	n := int64(mib) << 20 * 100 / int64(100+gogc)
	ballast = make([]byte, n)
	// The runtime zeroes a large allocation made of memory its heap used
	// before (fresh memory it leaves alone), and that made the ballast
	// resident in about one start in fifteen under load. Nothing reads or
	// writes it: its pages go back to the kernel, and would come back zero.
	releasePages(ballast)
}
