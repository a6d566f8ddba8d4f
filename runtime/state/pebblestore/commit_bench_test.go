//go:build unix

package pebblestore

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// BenchmarkCommit models a task's commit cycle on a store: puts of 100-byte
// values under 8-byte keys, SetPosition, Flush; one op is one commit. It
// compares the WAL on (Flush syncs the log) with the WAL off (Flush writes
// the memtable to a table file), over a hot key set (1,000 keys, each
// overwritten many times per commit) and a uniform one (2^24 keys, almost
// every put a new key). Besides ns/op (per commit) it reports ns/put, the
// process CPU per put (with Pebble's background flushes and compactions,
// which the wall clock of a busy machine hides or inflates) and the bytes
// written to disk per put (WAL, flushes, compactions).
//
// Run it with a fixed number of commits, so both modes reach the
// compactions their files cause:
//
//	go test -run '^$' -bench Commit -benchtime 40x -count 5 ./runtime/state/pebblestore
func BenchmarkCommit(b *testing.B) {
	for _, wal := range []bool{true, false} {
		for _, puts := range []int{1000, 10000} {
			for _, keys := range []struct {
				name  string
				space uint64
			}{{"hot", 1000}, {"uniform", 1 << 24}} {
				b.Run(fmt.Sprintf("wal=%v/puts=%d/keys=%s", wal, puts, keys.name), func(b *testing.B) {
					benchCommit(b, Options{DisableWAL: !wal}, puts, keys.space)
				})
			}
		}
	}
}

func benchCommit(b *testing.B, opts Options, puts int, space uint64) {
	s, err := openPebble(filepath.Join(b.TempDir(), "store"), opts, vfs.Default)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := s.Close(); err != nil {
			b.Error(err)
		}
	}()
	rng := rand.New(rand.NewPCG(1, 2))
	key := make([]byte, 8)
	// Values are random windows of a random megabyte: as incompressible
	// as they come, so table files are not smaller than real ones.
	random := make([]byte, 1<<20)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	cpu0 := cpuTime()
	var offset int64
	for b.Loop() {
		for range puts {
			binary.BigEndian.PutUint64(key, rng.Uint64N(space))
			at := rng.IntN(len(random) - 100)
			if err := s.Put(key, random[at:at+100]); err != nil {
				b.Fatal(err)
			}
			offset++
		}
		if err := s.SetPosition(offset); err != nil {
			b.Fatal(err)
		}
		if err := s.Flush(); err != nil {
			b.Fatal(err)
		}
	}
	cpu := cpuTime() - cpu0
	b.StopTimer()
	m := s.db.Metrics()
	total := m.Total()
	n := float64(b.N * puts)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/put")
	b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/put")
	b.ReportMetric(float64(total.TableBytesFlushed+total.TableBytesCompacted)/n, "disk-B/put")
}

// cpuTime is the CPU time the process has used, user and system, in all
// its threads.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
