package pebblestore

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/google/go-cmp/cmp"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/state/statetest"
)

// openT opens a store on fs for a test and closes it at the end.
func openT(t testing.TB, dir string, opts Options, fs vfs.FS) *pebbleStore {
	t.Helper()
	b, err := openPebble(dir, opts, fs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if b.db != nil {
			if err := b.Close(); err != nil {
				t.Error(err)
			}
		}
	})
	return b
}

func closeT(t testing.TB, b state.Backend) {
	t.Helper()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}

// position returns b's position, -1 for none.
func position(t testing.TB, b state.Positioned) int64 {
	t.Helper()
	p, ok, err := b.Position()
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return -1
	}
	return p
}

// contents returns every key and value of b.
func contents(t testing.TB, b state.Backend) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, c := range statetest.DrainRaw(t, must(b.Range(nil, nil))) {
		got[string(c.Key)] = string(c.Value)
	}
	return got
}

func TestPositionRoundTrips(t *testing.T) {
	for _, disableWAL := range []bool{false, true} {
		for _, offset := range []int64{0, 1, 1 << 40, math.MaxInt64} {
			t.Run(fmt.Sprintf("disableWAL=%v/offset=%d", disableWAL, offset), func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "store")
				opts := Options{CacheSize: 1 << 20, DisableWAL: disableWAL}
				b := openT(t, dir, opts, vfs.Default)
				if got := position(t, b); got != -1 {
					t.Fatalf("new store: position %d, want none", got)
				}
				// An older position first: the newer one must replace it.
				for _, p := range []int64{7, offset} {
					if err := b.SetPosition(p); err != nil {
						t.Fatal(err)
					}
				}
				if got := position(t, b); got != offset {
					t.Errorf("after SetPosition: position %d, want %d", got, offset)
				}
				if err := b.Flush(); err != nil {
					t.Fatal(err)
				}
				closeT(t, b)
				b = openT(t, dir, opts, vfs.Default)
				if got := position(t, b); got != offset {
					t.Errorf("after reopen: position %d, want %d", got, offset)
				}
				// A position may also move back (the runtime restores a store
				// from an older offset and records it).
				if err := b.SetPosition(3); err != nil {
					t.Fatal(err)
				}
				if err := b.Flush(); err != nil {
					t.Fatal(err)
				}
				closeT(t, b)
				b = openT(t, dir, opts, vfs.Default)
				if got := position(t, b); got != 3 {
					t.Errorf("after moving back and reopening: position %d, want 3", got)
				}
			})
		}
	}
}

// TestPositionIsNotAKey checks the position's range key is seen neither by
// point reads, iteration nor the count, including at the empty key and at
// the bytes that bound it, in the memtable and in a table file.
func TestPositionIsNotAKey(t *testing.T) {
	for _, inTable := range []bool{false, true} {
		for _, userKeys := range [][]string{nil, {"a"}, {"", "\x00", "\x00\x00", "a"}} {
			t.Run(fmt.Sprintf("inTable=%v/keys=%q", inTable, userKeys), func(t *testing.T) {
				b := openT(t, filepath.Join(t.TempDir(), "store"), Options{CacheSize: 1 << 20, DisableWAL: true}, vfs.Default)
				want := map[string]string{}
				for _, k := range userKeys {
					if err := b.Put([]byte(k), []byte("v"+k)); err != nil {
						t.Fatal(err)
					}
					want[k] = "v" + k
				}
				if err := b.SetPosition(42); err != nil {
					t.Fatal(err)
				}
				if inTable {
					if err := b.Flush(); err != nil { // WAL disabled: writes a table
						t.Fatal(err)
					}
				}
				if diff := cmp.Diff(want, contents(t, b)); diff != "" {
					t.Errorf("Range(nil, nil) (-want +got):\n%s", diff)
				}
				// The range that holds the position's bounds.
				var wantLow, gotLow []string
				for _, k := range userKeys {
					if k < "\x00\x00\x00" {
						wantLow = append(wantLow, k)
					}
				}
				for _, c := range statetest.DrainRaw(t, must(b.Range([]byte{}, []byte{0, 0, 0}))) {
					gotLow = append(gotLow, string(c.Key))
				}
				if diff := cmp.Diff(wantLow, gotLow); diff != "" {
					t.Errorf("Range(\"\", \"\\x00\\x00\\x00\") keys (-want +got):\n%s", diff)
				}
				for _, raw := range []string{"", "\x00"} {
					v, ok, err := b.Get([]byte(raw))
					if err != nil {
						t.Fatal(err)
					}
					if w, put := want[raw]; ok != put || ok && string(v) != w {
						t.Errorf("Get(%q) = %q, %v; want %q, %v", raw, v, ok, w, put)
					}
				}
				n, err := b.ApproximateCount()
				if err != nil {
					t.Fatal(err)
				}
				if n != int64(len(want)) {
					t.Errorf("ApproximateCount = %d, want %d", n, len(want))
				}
				// Deleting the user's empty key leaves the position alone.
				if err := b.Delete([]byte{}); err != nil {
					t.Fatal(err)
				}
				if err := b.Flush(); err != nil {
					t.Fatal(err)
				}
				pos, ok, err := b.readPosition()
				if err != nil || pos != 42 || !ok {
					t.Errorf("position read back after deleting the empty key = %d, %v, %v; want 42", pos, ok, err)
				}
			})
		}
	}
}

// TestStoreWithoutPosition checks that a store written before positions
// existed (plain Pebble keys, no range key) is read as it was and has no
// position: the runtime then restores it from the changelog.
func TestStoreWithoutPosition(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	db, err := pebble.Open(dir, &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"": "empty", "\x00": "zero", "k": "v"}
	for k, v := range want {
		if err := db.Set([]byte(k), []byte(v), pebble.Sync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	b := openT(t, dir, Options{CacheSize: 1 << 20}, vfs.Default)
	if got := position(t, b); got != -1 {
		t.Errorf("position %d, want none", got)
	}
	if diff := cmp.Diff(want, contents(t, b)); diff != "" {
		t.Errorf("contents (-want +got):\n%s", diff)
	}
}

func TestDeletedDirectoryHasNoPosition(t *testing.T) {
	for _, disableWAL := range []bool{false, true} {
		t.Run(fmt.Sprintf("disableWAL=%v", disableWAL), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store")
			opts := Options{CacheSize: 1 << 20, DisableWAL: disableWAL}
			b := openT(t, dir, opts, vfs.Default)
			ops := workload(3, 20)
			applyCommits(t, b, ops, 3, 20, true)
			closeT(t, b)
			b = openT(t, dir, opts, vfs.Default)
			if got, want := position(t, b), int64(len(ops)); got != want {
				t.Fatalf("before deleting: position %d, want %d", got, want)
			}
			closeT(t, b)
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			b = openT(t, dir, opts, vfs.Default)
			if got := position(t, b); got != -1 {
				t.Errorf("after deleting the directory: position %d, want none", got)
			}
			if got := contents(t, b); len(got) != 0 {
				t.Errorf("after deleting the directory: %d keys, want none", len(got))
			}
		})
	}
}

// op is one write of a test workload: its index is its changelog offset.
type op struct {
	key, value string
	del        bool
}

// workload returns commits*perCommit writes: puts of new keys, overwrites of
// a hot key, and deletes of keys of the previous commit.
func workload(commits, perCommit int) []op {
	var ops []op
	for c := range commits {
		for i := range perCommit {
			switch {
			case i%5 == 0:
				ops = append(ops, op{key: "hot", value: fmt.Sprintf("%d", len(ops))})
			case i%7 == 0 && c > 0:
				ops = append(ops, op{key: fmt.Sprintf("c%03d-%04d", c-1, i), del: true})
			default:
				ops = append(ops, op{key: fmt.Sprintf("c%03d-%04d", c, i), value: fmt.Sprintf("%d-%s", len(ops), strings.Repeat("v", 90))})
			}
		}
	}
	return ops
}

// applyCommits writes ops as commits of perCommit writes, each followed by
// SetPosition (the offset after its last write) and, if flush, Flush.
func applyCommits(t testing.TB, b state.Positioned, ops []op, commits, perCommit int, flush bool) {
	t.Helper()
	for c := range commits {
		for i := c * perCommit; i < (c+1)*perCommit; i++ {
			o := ops[i]
			var err error
			if o.del {
				err = b.Delete([]byte(o.key))
			} else {
				err = b.Put([]byte(o.key), []byte(o.value))
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := b.SetPosition(int64((c + 1) * perCommit)); err != nil {
			t.Fatal(err)
		}
		if flush {
			if err := b.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// consistent checks that b holds ops[:n] exactly, for some n at or after its
// position (none counts as 0): every write before the position is there,
// and nothing but a prefix of the writes. It returns n.
func consistent(t testing.TB, b state.Positioned, ops []op) (int, error) {
	t.Helper()
	pos := max(position(t, b), 0)
	got := contents(t, b)
	model := map[string]string{}
	for n := 0; n <= len(ops); n++ {
		if int64(n) >= pos && maps.Equal(model, got) {
			return n, nil
		}
		if n == len(ops) {
			break
		}
		if o := ops[n]; o.del {
			delete(model, o.key)
		} else {
			model[o.key] = o.value
		}
	}
	want := map[string]string{}
	for _, o := range ops[:min(pos, int64(len(ops)))] {
		if o.del {
			delete(want, o.key)
		} else {
			want[o.key] = o.value
		}
	}
	return 0, fmt.Errorf("store at position %d is no prefix of the writes that includes the first %d; against them (-want +got):\n%s",
		pos, pos, cmp.Diff(want, got))
}

// TestConsistentCatchesPositionAhead shows consistent can fail: a position
// recorded without the writes before it, and writes out of order.
func TestConsistentCatchesPositionAhead(t *testing.T) {
	ops := workload(2, 10)
	t.Run("position ahead", func(t *testing.T) {
		b := openT(t, filepath.Join(t.TempDir(), "store"), Options{CacheSize: 1 << 20}, vfs.Default)
		applyCommits(t, b, ops, 1, 10, false)
		if err := b.SetPosition(20); err != nil {
			t.Fatal(err)
		}
		if _, err := consistent(t, b, ops); err == nil {
			t.Error("consistent accepted a position ahead of the data")
		}
	})
	t.Run("not a prefix", func(t *testing.T) {
		b := openT(t, filepath.Join(t.TempDir(), "store"), Options{CacheSize: 1 << 20}, vfs.Default)
		if err := b.Put([]byte(ops[3].key), []byte(ops[3].value)); err != nil {
			t.Fatal(err)
		}
		if _, err := consistent(t, b, ops); err == nil {
			t.Error("consistent accepted a write without the writes before it")
		}
	})
}

// files returns the names of dir's files that start or end with affix,
// sorted.
func files(t testing.TB, dir, affix string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), affix) || strings.HasPrefix(e.Name(), affix) {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	return names
}

// copyDir copies the files of src into a new directory dst.
func copyDir(t testing.TB, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() == "LOCK" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTruncatedWAL cuts the newest WAL of a closed store at many lengths:
// the store must reopen with a prefix of its writes that includes every
// write before its position, or fail with ErrCorrupt; never with a position
// ahead of its data. Cut to nothing, it is the store of the report,
// which must come back without a position rather than empty and trusted.
func TestTruncatedWAL(t *testing.T) {
	const commits, perCommit = 8, 50
	src := filepath.Join(t.TempDir(), "store")
	opts := Options{CacheSize: 1 << 20}
	b := openT(t, src, opts, vfs.Default)
	ops := workload(commits, perCommit)
	applyCommits(t, b, ops, commits, perCommit, true)
	closeT(t, b)
	wals := files(t, src, ".log")
	if len(wals) == 0 {
		t.Fatal("no WAL file in a store written with the WAL on")
	}
	newest := wals[len(wals)-1]
	st, err := os.Stat(filepath.Join(src, newest))
	if err != nil {
		t.Fatal(err)
	}
	size := st.Size()
	lengths := []int64{0, 1, 7, 8, 100}
	for i := int64(1); i < 32; i++ {
		lengths = append(lengths, size*i/32)
	}
	lengths = append(lengths, size-1, size)
	seen := map[int64]bool{} // positions reopened with
	for _, n := range lengths {
		t.Run(fmt.Sprintf("length=%d", n), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store")
			copyDir(t, src, dir)
			if err := os.Truncate(filepath.Join(dir, newest), n); err != nil {
				t.Fatal(err)
			}
			b, err := openPebble(dir, opts, vfs.Default)
			if err != nil {
				if !errors.Is(err, state.ErrCorrupt) {
					t.Fatalf("Open = %v, want success or ErrCorrupt", err)
				}
				return
			}
			defer closeT(t, b)
			if _, err := consistent(t, b, ops); err != nil {
				t.Fatal(err)
			}
			p := position(t, b)
			seen[p] = true
			switch n {
			case 0:
				if p != -1 {
					t.Errorf("WAL cut to nothing: position %d, want none", p)
				}
			case size:
				if want := int64(len(ops)); p != want {
					t.Errorf("whole WAL: position %d, want %d", p, want)
				}
			}
		})
	}
	t.Logf("positions after the cuts: %v", slices.Sorted(maps.Keys(seen)))
	// The cuts must have left older positions too, or the test tested
	// nothing between none and all.
	if len(seen) < 4 {
		t.Errorf("cuts reopened with positions %v, want several", slices.Sorted(maps.Keys(seen)))
	}
}

// TestCrashKeepsPositionWithItsData simulates machine crashes after
// commits (writes, SetPosition, Flush) and after writes not yet flushed,
// keeping none, some or all of the unsynced data, with the WAL on and off,
// with memtables small enough to be flushed between commits and not: the
// reopened store must hold a prefix of the writes that includes every write
// before its position, and nothing flushed may be lost.
func TestCrashKeepsPositionWithItsData(t *testing.T) {
	const commits, perCommit = 6, 1000
	for _, disableWAL := range []bool{false, true} {
		for _, memTable := range []uint64{0, 64 << 10} {
			t.Run(fmt.Sprintf("disableWAL=%v/memTable=%d", disableWAL, memTable), func(t *testing.T) {
				fs := vfs.NewCrashableMem()
				opts := Options{CacheSize: 1 << 20, DisableWAL: disableWAL, MemTableSize: memTable}
				b := openT(t, "store", opts, fs)
				ops := workload(commits, perCommit)
				// Every commit but the last is flushed; the last one's writes
				// and position are not.
				applyCommits(t, b, ops, commits-1, perCommit, true)
				flushed := int64((commits - 1) * perCommit)
				applyCommits(t, tail{b, flushed}, ops[flushed:], 1, perCommit, false)
				rng := rand.New(rand.NewPCG(1, 2))
				for _, pct := range []int{0, 0, 10, 50, 90, 100} {
					for seed := range 3 {
						crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: pct, RNG: rng})
						t.Run(fmt.Sprintf("unsynced=%d%%/%d", pct, seed), func(t *testing.T) {
							rb, err := openPebble("store", opts, crashed)
							if err != nil {
								t.Fatalf("reopen after a crash: %v", err)
							}
							defer closeT(t, rb)
							n, err := consistent(t, rb, ops)
							if err != nil {
								t.Fatal(err)
							}
							if p := position(t, rb); p < flushed {
								t.Errorf("position %d, want at least %d (the last Flush)", p, flushed)
							}
							// Without background flushes and with nothing
							// unsynced kept, exactly the last Flush survives.
							if memTable == 0 && pct == 0 && int64(n) != flushed {
								t.Errorf("store holds the first %d writes, want exactly %d", n, flushed)
							}
						})
					}
				}
			})
		}
	}
}

// tail offsets the positions applyCommits sets, for a workload applied from
// its middle.
type tail struct {
	*pebbleStore
	base int64
}

func (s tail) SetPosition(offset int64) error { return s.pebbleStore.SetPosition(s.base + offset) }

// TestIngestedBatchesKeepPositionWithTheirData restores a workload in
// batches large enough to be ingested as tables (ingestMinBytes), each
// followed by SetPosition and no Flush, then crashes keeping none, some or
// all of the unsynced data: the reopened store must hold a prefix of the
// writes that includes every write before its position (the last change of
// each key of a batch wins, deletes included), and every ingested batch,
// which Pebble syncs, must survive. A disk reserve smaller than a batch
// splits it into several tables.
func TestIngestedBatchesKeepPositionWithTheirData(t *testing.T) {
	const commits, perCommit = 4, 12_000
	for _, tc := range []struct {
		disableWAL bool
		reserve    int64
		tables     int // per batch
	}{{false, 0, 1}, {true, 0, 1}, {false, 1 << 20, 2}} {
		t.Run(fmt.Sprintf("disableWAL=%v/reserve=%d", tc.disableWAL, tc.reserve), func(t *testing.T) {
			fs := vfs.NewCrashableMem()
			opts := Options{CacheSize: 1 << 20, DisableWAL: tc.disableWAL, DiskReserve: tc.reserve}
			b := openT(t, "store", opts, fs)
			ops := workload(commits, perCommit)
			for c := range commits {
				changes := make([]state.Change, 0, perCommit)
				for _, o := range ops[c*perCommit : (c+1)*perCommit] {
					ch := state.Change{Key: []byte(o.key), Timestamp: state.NoTimestamp}
					if !o.del {
						ch.Value = []byte(o.value)
					}
					changes = append(changes, ch)
				}
				if batchBytes(changes) < ingestMinBytes {
					t.Fatalf("a batch of %d bytes is not ingested", batchBytes(changes))
				}
				if err := b.ApplyBatch(changes); err != nil {
					t.Fatal(err)
				}
				if err := b.SetPosition(int64((c + 1) * perCommit)); err != nil {
					t.Fatal(err)
				}
			}
			if got, want := b.db.Metrics().Ingest.Count, uint64(commits*tc.tables); got != want {
				t.Fatalf("%d tables ingested, want %d", got, want)
			}
			if _, err := consistent(t, b, ops); err != nil {
				t.Fatalf("before the crash: %v", err)
			}
			rng := rand.New(rand.NewPCG(3, 4))
			for _, pct := range []int{0, 50, 100} {
				crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: pct, RNG: rng})
				t.Run(fmt.Sprintf("unsynced=%d%%", pct), func(t *testing.T) {
					rb, err := openPebble("store", opts, crashed)
					if err != nil {
						t.Fatalf("reopen after a crash: %v", err)
					}
					defer closeT(t, rb)
					n, err := consistent(t, rb, ops)
					if err != nil {
						t.Fatal(err)
					}
					if n != len(ops) {
						t.Errorf("store holds the first %d writes, want all %d (ingestions are synced)", n, len(ops))
					}
				})
			}
		})
	}
}
