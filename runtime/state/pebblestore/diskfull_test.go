package pebblestore

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/kgen-dev/kgen/runtime/state"
)

// A store on a disk that fills up returns an error naming its directory and
// "no space left on device", refuses writes from then on and closes; it
// cannot open again while the disk has no room for its reserve (fill takes
// what the freed reserve left), and opens with every write up to its last
// flushed position once there is room (free).
// Without the reserve, Pebble panics inside the write (or the process dies
// with "sync: unlock of unlocked mutex" when the log's rotation fails).
func fillAndRecover(t *testing.T, dir string, fs vfs.FS, fill, free func()) {
	t.Helper()
	fillAndRecoverBatches(t, dir, fs, 50, fill, free)
}

// fillAndRecoverBatches is fillAndRecover with batches of perBatch
// changes of 1,000 bytes: from about 1,000 on, ApplyBatch ingests them as
// tables.
func fillAndRecoverBatches(t *testing.T, dir string, fs vfs.FS, perBatch int, fill, free func()) {
	t.Helper()
	opts := Options{CacheSize: 1 << 20, MemTableSize: 256 << 10}
	s, err := openPebble(dir, opts, fs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if s.db != nil && !s.broken {
			_ = s.Close()
		}
	})
	value := make([]byte, 1000)
	for i := range value {
		value[i] = byte(i * 7919 >> 3) // not compressed away in a table
	}
	durable := -1 // the last batch flushed with its position
	for i := 0; ; i++ {
		if i == 100_000 {
			t.Fatal("the disk never filled")
		}
		changes := make([]state.Change, perBatch)
		for j := range changes {
			changes[j] = state.Change{Key: fmt.Appendf(nil, "k%06d-%04d", i, j), Value: value}
		}
		err = s.ApplyBatch(changes)
		if err == nil {
			err = s.SetPosition(int64(i + 1))
		}
		if err == nil {
			err = s.Flush()
		}
		if err != nil {
			break
		}
		durable = i
	}
	if durable < 0 {
		t.Fatalf("the first write failed: %v", err)
	}
	if ingested := s.db.Metrics().Ingest.Count > 0; ingested != (perBatch*1000 >= ingestMinBytes) {
		t.Fatalf("batches of %d changes: ingested %v", perBatch, ingested)
	}
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "no space left on device") || !strings.Contains(err.Error(), dir) ||
		strings.Contains(err.Error(), "\n") {
		t.Fatalf("error on a full disk: %q; want one line naming %s and \"no space left on device\", wrapping ENOSPC", err, dir)
	}
	if err := s.Put([]byte("more"), value); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("a write after the disk filled: %v, want ENOSPC", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close after the disk filled: %v", err)
	}
	fill()
	if _, err := openPebble(dir, opts, fs); !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("open on a full disk: %v, want ENOSPC naming %s", err, dir)
	}

	free()
	s, err = openPebble(dir, opts, fs)
	if err != nil {
		t.Fatalf("open once the disk has room: %v", err)
	}
	pos, ok, err := s.Position()
	if err != nil || !ok || pos < int64(durable+1) {
		t.Fatalf("position after the restart: %d, %v, %v; want at least %d", pos, ok, err, durable+1)
	}
	for i := 0; i < int(pos); i++ {
		for _, j := range []int{0, perBatch - 1} {
			if _, found, err := s.Get(fmt.Appendf(nil, "k%06d-%04d", i, j)); err != nil || !found {
				t.Fatalf("key of batch %d (position %d): found %v, %v", i, pos, found, err)
			}
		}
	}
	if err := s.Put([]byte("more"), value); err != nil {
		t.Fatalf("a write after the restart: %v", err)
	}
}

// The same on a small tmpfs, as on a real full disk (root only).
func TestFullDiskTmpfs(t *testing.T) {
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs (%v: %s); TestFullDiskInjected covers the path through an injected ENOSPC", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", mnt, err, out)
		}
	})
	// The filler leaves 3 MiB: the reserve (1.25 MiB) and a little data.
	filler := filepath.Join(mnt, "filler")
	if err := os.WriteFile(filler, make([]byte, 5<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	more := filepath.Join(mnt, "more")
	fillAndRecover(t, filepath.Join(mnt, "store"), vfs.Default, func() {
		f, err := os.Create(more)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for buf := make([]byte, 64<<10); ; {
			if _, err := f.Write(buf); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatal(err)
				}
				return
			}
		}
	}, func() {
		for _, f := range []string{filler, more} {
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// The same on a simulated disk whose writes fail with ENOSPC past its
// capacity, so the path is tested without root.
func TestFullDiskInjected(t *testing.T) {
	disk := &smallDisk{FS: vfs.NewMem(), capacity: 3 << 20, sizes: map[string]int64{}}
	fillAndRecover(t, "/store", disk, func() {
		disk.mu.Lock()
		disk.capacity = disk.used
		disk.mu.Unlock()
	}, func() {
		disk.mu.Lock()
		disk.capacity = 1 << 30
		disk.mu.Unlock()
	})
}

// The same with batches ingested as tables.
func TestFullDiskInjectedIngest(t *testing.T) {
	disk := &smallDisk{FS: vfs.NewMem(), capacity: 6 << 20, sizes: map[string]int64{}}
	fillAndRecoverBatches(t, "/store", disk, 1200, func() {
		disk.mu.Lock()
		disk.capacity = disk.used
		disk.mu.Unlock()
	}, func() {
		disk.mu.Lock()
		disk.capacity = 1 << 30
		disk.mu.Unlock()
	})
}

// smallDisk is a file system of a few megabytes: writes past its capacity
// fail with ENOSPC, as on a full disk, and removing a file frees its bytes.
type smallDisk struct {
	vfs.FS
	mu       sync.Mutex
	capacity int64
	used     int64
	sizes    map[string]int64
}

func (d *smallDisk) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := d.FS.Create(name, c)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.used -= d.sizes[name]
	d.sizes[name] = 0
	d.mu.Unlock()
	return &smallDiskFile{File: f, d: d, name: name}, nil
}

func (d *smallDisk) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := d.FS.ReuseForWrite(oldname, newname, c)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.sizes[newname] = d.sizes[oldname]
	delete(d.sizes, oldname)
	d.mu.Unlock()
	return &smallDiskFile{File: f, d: d, name: newname}, nil
}

func (d *smallDisk) Rename(oldname, newname string) error {
	if err := d.FS.Rename(oldname, newname); err != nil {
		return err
	}
	d.mu.Lock()
	d.used -= d.sizes[newname]
	d.sizes[newname] = d.sizes[oldname]
	delete(d.sizes, oldname)
	d.mu.Unlock()
	return nil
}

// Link gives the file a second name, as Pebble's ingestion does: the bytes
// stay taken until both names are removed, which this counts as twice the
// bytes until one is.
func (d *smallDisk) Link(oldname, newname string) error {
	if err := d.FS.Link(oldname, newname); err != nil {
		return err
	}
	d.mu.Lock()
	d.sizes[newname] = d.sizes[oldname]
	d.used += d.sizes[oldname]
	d.mu.Unlock()
	return nil
}

func (d *smallDisk) Remove(name string) error {
	if err := d.FS.Remove(name); err != nil {
		return err
	}
	d.mu.Lock()
	d.used -= d.sizes[name]
	delete(d.sizes, name)
	d.mu.Unlock()
	return nil
}

type smallDiskFile struct {
	vfs.File
	d    *smallDisk
	name string
}

func (f *smallDiskFile) Write(p []byte) (int, error) {
	f.d.mu.Lock()
	room := f.d.capacity - f.d.used
	n := int(min(int64(len(p)), max(room, 0)))
	f.d.used += int64(n)
	f.d.sizes[f.name] += int64(n)
	f.d.mu.Unlock()
	n, err := f.File.Write(p[:n])
	if err == nil && n < len(p) {
		err = &os.PathError{Op: "write", Path: f.name, Err: syscall.ENOSPC}
	}
	return n, err
}

func (f *smallDiskFile) WriteAt(p []byte, off int64) (int, error) {
	f.d.mu.Lock()
	if f.d.capacity-f.d.used < int64(len(p)) {
		f.d.mu.Unlock()
		return 0, &os.PathError{Op: "write", Path: f.name, Err: syscall.ENOSPC}
	}
	f.d.used += int64(len(p))
	f.d.sizes[f.name] += int64(len(p))
	f.d.mu.Unlock()
	return f.File.WriteAt(p, off)
}
