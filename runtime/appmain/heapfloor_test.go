package appmain

import (
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
)

// TestSetHeapFloor checks, in a fresh process (the floor is the process's),
// that the heap target stays at the floor after a collection, that the
// ballast holding it up is not resident, and that 0 takes it away. Several
// children run at once: the runtime zeroed the ballast (and made it
// resident) in about one start in fifteen when the machine was busy.
func TestSetHeapFloor(t *testing.T) {
	if os.Getenv("KGEN_HEAP_FLOOR_CHILD") == "" {
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				cmd := exec.Command(os.Args[0], "-test.run", "^TestSetHeapFloor$", "-test.v")
				cmd.Env = append(os.Environ(), "KGEN_HEAP_FLOOR_CHILD=1", "GOGC=100")
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Errorf("child: %v\n%s", err, out)
				}
			})
		}
		wg.Wait()
		return
	}
	goal := func() uint64 {
		runtime.GC()
		s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	if before := goal(); before >= 32<<20 {
		t.Fatalf("heap target %d MiB before any floor: the test cannot tell", before>>20)
	}
	SetHeapFloor(64)
	if with := goal(); with < 63<<20 || with > 72<<20 {
		t.Errorf("heap target with a 64 MiB floor: %d MiB", with>>20)
	}
	ballastMu.Lock()
	resident, err := residentPages(ballast)
	size := len(ballast)
	ballastMu.Unlock()
	switch {
	case err != nil:
		t.Logf("the ballast's residence is not known here: %v", err)
	case resident > 16:
		t.Errorf("%d KiB of the %d MiB ballast resident; it should not be", resident*os.Getpagesize()>>10, size>>20)
	}
	SetHeapFloor(0)
	if after := goal(); after >= 32<<20 {
		t.Errorf("heap target %d MiB once the floor is gone", after>>20)
	}
}
