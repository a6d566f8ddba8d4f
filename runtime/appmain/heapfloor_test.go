package appmain

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
)

// TestSetHeapFloor checks, in a fresh process (the floor is the process's),
// that the heap target stays at the floor after a collection, that the
// ballast holding it up is not resident, and that 0 takes it away.
func TestSetHeapFloor(t *testing.T) {
	if os.Getenv("KGEN_HEAP_FLOOR_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestSetHeapFloor$", "-test.v")
		cmd.Env = append(os.Environ(), "KGEN_HEAP_FLOOR_CHILD=1", "GOGC=100")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return
	}
	goal := func() uint64 {
		runtime.GC()
		s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	before, rssBefore := goal(), residentBytes(t)
	if before >= 32<<20 {
		t.Fatalf("heap target %d MiB before any floor: the test cannot tell", before>>20)
	}
	SetHeapFloor(64)
	with, rssWith := goal(), residentBytes(t)
	if with < 63<<20 || with > 72<<20 {
		t.Errorf("heap target with a 64 MiB floor: %d MiB", with>>20)
	}
	if grown := int64(rssWith) - int64(rssBefore); grown > 8<<20 {
		t.Errorf("the floor made %d MiB resident; its ballast should not be", grown>>20)
	}
	SetHeapFloor(0)
	if after := goal(); after >= 32<<20 {
		t.Errorf("heap target %d MiB once the floor is gone", after>>20)
	}
}

// residentBytes is the process's resident set (Linux).
func residentBytes(t *testing.T) uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(fmt.Errorf("VmRSS %q: %w", rest, err))
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}
