// Package pebblestore is the on-disk state backend of kgen, over Pebble. It
// lives apart from runtime/state so that a program with only in-memory
// stores does not link Pebble (nor the Prometheus client Pebble imports).
//
// Give a store this backend with stream.StoreOptions{Persistent:
// pebblestore.Opener(pebblestore.Options{})}, or open one directly with Open.
package pebblestore

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/sstable/block"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/kgen-dev/kgen/runtime/state"
)

// DefaultCacheSize is the block cache of a store when Options.CacheSize is
// zero: 64 MiB.
const DefaultCacheSize = 64 << 20

// DefaultMemTableSize is a store's memtable when Options.MemTableSize is
// zero: 16 MiB, four times Pebble's own default. Each memtable rotation
// syncs the old log and each flush writes a table that compactions rewrite;
// restoring a 1,000,000-entry changelog with 4 MiB memtables spent about a
// third of its CPU on them (1.85 CPU-s per million entries, 1.28 with 16
// MiB). Pebble starts a store's first memtables small and grows them, so a
// small store does not pay the full size.
const DefaultMemTableSize = 16 << 20

// Options tunes a Pebble store. The zero value gives the store its own
// 64 MiB block cache (allocated as it fills); with many stores on a small
// machine, share one cache among them with Cache.
type Options struct {
	// CacheSize is the block cache size in bytes. Zero means
	// DefaultCacheSize. It is ignored when Cache is set.
	CacheSize int64
	// Cache, if not nil, is a block cache shared with other stores, which
	// bounds the cache memory of all of them together. Nil gives the store a
	// cache of its own, of CacheSize bytes.
	Cache *Cache
	// MemTableSize is the size in bytes of one memtable. Zero means
	// DefaultMemTableSize.
	MemTableSize uint64
	// DisableWAL turns Pebble's write-ahead log off. Writes are then cheaper,
	// but Flush writes the whole memtable to a table file instead of syncing
	// the log. Both are as safe: the position is kept with the data, so
	// whatever a crash leaves is restored from its own position. Measured
	// (BenchmarkCommit), the WAL off costs more per commit of 1,000 puts
	// (1.4 to 3.3 times the time) and of 10,000 puts under uniform keys, and
	// pays off only for hot keys in large commits (10,000 puts or more over
	// 1,000 keys: a fifth less CPU, a fifth to a twelfth of the bytes
	// written), so the default keeps the WAL on, with writes not synced.
	DisableWAL bool
	// DiskReserve is how many bytes of disk the store holds back, in a file
	// in its directory, for a full disk. Pebble cannot go on from a write
	// that fails with "no space left on device" (its write-ahead log and
	// MANIFEST treat it as fatal: the process dies inside Pebble), so the
	// first such write frees the reserve and is retried, and from then on
	// the store refuses writes with an error naming its directory and the
	// cause; the application stops with that error and the store closes
	// cleanly. Opening the store makes the reserve again, which fails,
	// naming the cause, while the disk is still full. Zero means the
	// memtable size plus 1 MiB (5 MiB with Pebble's default memtable): the
	// largest write in flight when the disk fills must fit in it. Negative
	// keeps no reserve, and a full disk then ends the process.
	DiskReserve int64
}

// Cache is a block cache that several Pebble stores share; see
// Options.Cache. It is safe for concurrent use.
type Cache struct {
	mu sync.Mutex
	c  *pebble.Cache // nil once closed
}

// NewCache returns a block cache of size bytes for Pebble stores to
// share; size <= 0 means DefaultCacheSize.
func NewCache(size int64) *Cache {
	if size <= 0 {
		size = DefaultCacheSize
	}
	return &Cache{c: pebble.NewCache(size)}
}

// Close releases the cache once every store opened with it is closed too.
// Stores still open keep using it; no new store may be opened with it.
// Closing it again does nothing.
func (c *Cache) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.c != nil {
		c.c.Unref()
		c.c = nil
	}
	return nil
}

// pebbleStore is the Pebble state.Backend. Writes are not synced (the
// changelog is what survives a crash between commits); Flush syncs the WAL,
// or flushes the memtable when the WAL is disabled.
//
// The changelog position (state.Positioned) is a Pebble range key over
// [positionStart, positionEnd): range keys live beside the point keys, so
// Get, point iterators and the point-entry counts of table statistics never
// see it, and user keys are stored as given, with no prefix to add or strip.
// Being an ordinary write, it is ordered with the point writes around it in
// the WAL and the memtables: whatever a crash or a damaged log leaves of the
// store is a prefix of its writes, and a surviving position has every write
// made before it.
type pebbleStore struct {
	dir        string
	db         *pebble.DB
	disableWAL bool
	iters      map[*pebbleIter]struct{}
	// gen counts the writes begun; spare is a closed Range's Pebble
	// iterator, kept while no write came after it was opened (spareGen):
	// its view is still the store's, so the next Range reuses it with new
	// bounds instead of opening one (a window store ranges once per
	// fetch, a stream-stream join once per record). iterMu guards them and
	// iters: a query (a queryable store) opens and closes iterators from
	// its own goroutine while the unit writes and flushes.
	iterMu   sync.Mutex
	gen      uint64
	spare    *pebble.Iterator
	spareGen uint64

	// The disk reserve (Options.DiskReserve): fs is the file system
	// without the disk-full wrapper, which removes the reserve file. full
	// is set, from whichever Pebble goroutine met the full disk, once the
	// reserve is spent: writes are refused from then on. broken is set when
	// a write panicked inside Pebble, which may have left its commit
	// pipeline locked: Close then leaves the DB as it is.
	fs          vfs.FS
	wfs         vfs.FS // fs as Pebble writes to it (with the disk-full wrapper)
	opts        *pebble.Options
	reservePath string
	reserve     int64
	full        atomic.Pointer[diskFullError]
	broken      bool

	// position is the last position read at Open or set since; hasPosition
	// is false while there is none.
	position    int64
	hasPosition bool

	// unflushed estimates the keys added (puts minus deletes) that are still
	// in memtables: the table statistics behind ApproximateCount do not see
	// them. flushing is its value when the running memtable flush began.
	unflushed atomic.Int64
	flushing  atomic.Int64
}

var (
	_ state.Restorer         = (*pebbleStore)(nil) // restoration applies batches
	_ state.Positioned       = (*pebbleStore)(nil)
	_ state.RangeDeleter     = (*pebbleStore)(nil)
	_ state.ConcurrentGetter = (*pebbleStore)(nil) // shared caches read it unlocked
)

// The position's range key covers only the empty user key, [positionStart,
// positionEnd): a point key of the same bytes is a different key in Pebble,
// so users keep the whole key space. Its value is positionVersion followed
// by the offset, 8 bytes big-endian; a value of another length or version
// makes the store corrupt (one written by a later kgen is rebuilt from its
// changelog rather than guessed at).
var (
	positionStart = []byte{}
	positionEnd   = []byte{0}
)

const (
	positionVersion = 1
	positionLen     = 1 + 8
)

// Open opens, creating it if needed, the Pebble store in dir. Each store has
// its own directory; Pebble locks it (a file named LOCK) while open, so a
// store directory must not be the task directory locked by state.LockDir.
// The backend also implements state.Restorer and state.Positioned.
//
// An error wraps state.ErrCorrupt when the files in dir are damaged: Pebble
// reports corruption (a malformed MANIFEST or OPTIONS file, a table whose
// footer or properties fail their checks, a bad position record), or a file
// the store refers to is missing. Open reads every table's properties to
// find damaged tables before the store is used; damage inside a data block
// is found only when it is read, and then the read's error wraps
// state.ErrCorrupt too. Other failures (permissions, the LOCK held by
// another process, a full disk) do not wrap it: the runtime wipes a corrupt
// store's directory, which must never happen to a store that is merely busy.
//
// A store written before positions were kept has the same layout, so its
// data is read as it was, and it has no position.
func Open(dir string, opts Options) (state.Backend, error) {
	return openPebble(dir, opts, vfs.Default)
}

// Opener returns a state.Opener that opens Pebble stores with opts, for
// stream.StoreOptions.Persistent. Stores opened by one Opener share nothing
// but opts: set opts.Cache to bound their cache memory together.
func Opener(opts Options) state.Opener {
	return func(dir string) (state.Backend, error) { return Open(dir, opts) }
}

// openPebble opens a store on fs; tests pass a file system that can crash.
func openPebble(dir string, opts Options, fs vfs.FS) (*pebbleStore, error) {
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("open pebble store %s: %w", dir, err)
	}
	s := &pebbleStore{dir: dir, disableWAL: opts.DisableWAL, iters: make(map[*pebbleIter]struct{}), fs: fs}
	s.reserve = opts.DiskReserve
	if s.reserve == 0 {
		s.reserve = int64(cmp.Or(opts.MemTableSize, DefaultMemTableSize)) + 1<<20
	}
	if s.reserve > 0 {
		s.reservePath = fs.PathJoin(dir, reserveFile)
		if err := makeReserve(fs, s.reservePath, s.reserve); err != nil {
			return nil, fmt.Errorf("open pebble store %s: hold %d bytes of disk in reserve: %w", dir, s.reserve, err)
		}
		fs = vfs.OnDiskFull(fs, s.onDiskFull)
	}
	var cache *pebble.Cache
	if opts.Cache != nil {
		// Held until Open took its own reference, so Close cannot free the
		// cache in between.
		opts.Cache.mu.Lock()
		defer opts.Cache.mu.Unlock()
		if opts.Cache.c == nil {
			return nil, fmt.Errorf("open pebble store %s: the shared cache is closed", dir)
		}
		cache = opts.Cache.c
	} else {
		cacheSize := opts.CacheSize
		if cacheSize <= 0 {
			cacheSize = DefaultCacheSize
		}
		cache = pebble.NewCache(cacheSize)
		defer cache.Unref() // the DB holds its own reference
	}
	po := &pebble.Options{
		FS:           fs,
		Cache:        cache,
		MemTableSize: cmp.Or(opts.MemTableSize, DefaultMemTableSize),
		DisableWAL:   opts.DisableWAL,
		Logger:       pebbleLogger{dir: dir},
		EventListener: &pebble.EventListener{
			// Pebble's default calls Logger.Fatalf, which exits the process.
			// The read that found the damage returns an error marked as
			// corruption, which the store wraps in state.ErrCorrupt.
			DataCorruption: func(info pebble.DataCorruptionInfo) {
				slog.Error("pebble: on-disk corruption", "store", dir, "file", info.Path, "err", info.Details.Error())
			},
			FlushBegin: func(info pebble.FlushInfo) {
				if !info.Ingest {
					s.flushing.Store(s.unflushed.Load())
				}
			},
			FlushEnd: func(info pebble.FlushInfo) {
				if !info.Ingest && info.Err == nil {
					s.unflushed.Add(-s.flushing.Swap(0))
				}
			},
		},
	}
	db, err := pebble.Open(dir, po)
	if err != nil {
		return nil, openError(dir, err)
	}
	s.db = db
	s.wfs = fs
	s.opts = po.Clone()
	s.opts.EnsureDefaults() // the table writer's options come from it
	if err := s.check(); err != nil {
		_ = db.Close()
		return nil, openError(dir, err)
	}
	if full := s.full.Load(); full != nil {
		// Opening wrote to a disk with less room than the reserve.
		_ = db.Close()
		return nil, fmt.Errorf("open pebble store %s: %w", dir, full)
	}
	return s, nil
}

// reserveFile names the file holding a store's disk reserve. Pebble leaves
// files it does not know alone.
const reserveFile = "KGEN-DISK-RESERVE"

// makeReserve makes sure the reserve file at path holds size bytes of disk.
// It allocates them (fallocate on Linux, which costs no writes), or writes
// them as zeros where that is not available, and leaves a reserve that is
// already whole as it is. It is not synced: the space is taken when it is
// allocated, and a reserve lost in a crash is made again at the next open.
func makeReserve(fs vfs.FS, path string, size int64) error {
	if fi, err := fs.Stat(path); err == nil && fi.Size() >= size {
		return nil
	}
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	err = errors.ErrUnsupported
	if fd := f.Fd(); fd != vfs.InvalidFd {
		err = allocate(fd, size)
	}
	if errors.Is(err, errors.ErrUnsupported) || errors.Is(err, syscall.EOPNOTSUPP) {
		err = nil
		buf := make([]byte, min(size, 1<<20))
		for left := size; left > 0 && err == nil; {
			var n int
			n, err = f.Write(buf[:min(left, int64(len(buf)))])
			left -= int64(n)
		}
	}
	if err != nil {
		_ = f.Close()
		_ = fs.Remove(path) // what was written is no reserve, but it holds space
		return err
	}
	return f.Close()
}

// onDiskFull runs inside Pebble when a write meets a full disk, before the
// write is retried once: it frees the reserve, so the retried write and the
// few that may follow before the store refuses writes find room, and marks
// the store full. A second full disk finds no reserve, and Pebble gets the
// error.
func (s *pebbleStore) onDiskFull() {
	if s.full.Load() == nil {
		s.full.Store(&diskFullError{reserve: s.reserve})
		slog.Error("pebble store: the disk is full; the store freed its reserve and refuses writes from now on",
			"store", s.dir, "reserve_bytes", s.reserve)
	}
	_ = s.fs.Remove(s.reservePath)
}

// diskFullError is what the writes of a store on a full disk return. It
// wraps syscall.ENOSPC.
type diskFullError struct{ reserve int64 }

func (e *diskFullError) Error() string {
	return fmt.Sprintf("no space left on device (the store refuses writes; free disk space, then start again: opening the store needs its reserve of %d bytes)", e.reserve)
}

func (e *diskFullError) Unwrap() error { return syscall.ENOSPC }

// writable returns the error of a write to a closed store, or one on a
// full disk.
func (s *pebbleStore) writable(op string) error {
	// A spare iterator would no longer see the store as it is, and it
	// pins what it sees: closed at once.
	s.written()
	if s.db == nil {
		return s.errorf(op, state.ErrClosed)
	}
	if full := s.full.Load(); full != nil {
		return s.errorf(op, full)
	}
	if s.broken {
		return s.errorf(op, errors.New("an earlier write failed inside pebble"))
	}
	return nil
}

// recoverWrite turns a panic inside a Pebble write (its answer to a failed
// write-ahead log write) into the error of the operation, and marks the
// store broken. Pebble's commit pipeline may still be locked, so the store
// is not used again, not even to close it.
func (s *pebbleStore) recoverWrite(op string, err *error) {
	r := recover()
	if r == nil {
		return
	}
	s.broken = true
	cause, ok := r.(error)
	if !ok {
		cause = fmt.Errorf("%v", r)
	}
	if full := s.full.Load(); full != nil {
		cause = fmt.Errorf("%w: %w", full, cause)
	}
	*err = s.errorf(op, fmt.Errorf("pebble failed: %w", cause))
}

// check reads what Open does not: the properties of every table (their
// footers, index and properties blocks are checksummed) and the position.
func (s *pebbleStore) check() error {
	if _, err := s.db.SSTables(pebble.WithProperties()); err != nil {
		return err
	}
	pos, ok, err := s.readPosition()
	if err != nil {
		return err
	}
	s.position, s.hasPosition = pos, ok
	return nil
}

// openError wraps an error of Open, with state.ErrCorrupt if the store's
// files are damaged. The directory exists when Pebble opens it (Open creates
// it), so a missing file is one the store refers to, such as the MANIFEST
// named by its marker or a table named by the MANIFEST.
func openError(dir string, err error) error {
	if !errors.Is(err, state.ErrCorrupt) && isDamage(err) {
		err = fmt.Errorf("%w: %w", state.ErrCorrupt, err)
	}
	return fmt.Errorf("open pebble store %s: %w", dir, err)
}

func isDamage(err error) bool {
	return pebble.IsCorruptionError(err) || errors.Is(err, fs.ErrNotExist) ||
		// Pebble's check that every table has the size its MANIFEST records
		// (a truncated table) returns an error without the corruption mark;
		// TestOpenDamagedStore fails if the message changes.
		strings.Contains(err.Error(), "object size mismatch")
}

// errorf wraps the error of an operation; corruption Pebble found while
// reading wraps state.ErrCorrupt too, so the runtime can rebuild the store.
func (s *pebbleStore) errorf(op string, err error) error {
	if pebble.IsCorruptionError(err) && !errors.Is(err, state.ErrCorrupt) {
		return fmt.Errorf("pebble store %s: %s: %w: %w", s.dir, op, state.ErrCorrupt, err)
	}
	return fmt.Errorf("pebble store %s: %s: %w", s.dir, op, err)
}

// Position implements state.Positioned. It returns the position read at Open
// or recorded since by SetPosition.
func (s *pebbleStore) Position() (int64, bool, error) {
	if s.db == nil {
		return 0, false, s.errorf("position", state.ErrClosed)
	}
	return s.position, s.hasPosition, nil
}

// SetPosition implements state.Positioned with an unsynced write of the
// position's range key, ordered after every write before it; Flush makes it
// durable with them.
func (s *pebbleStore) SetPosition(offset int64) (err error) {
	if err := s.writable("set position"); err != nil {
		return err
	}
	defer s.recoverWrite("set position", &err)
	var v [positionLen]byte
	v[0] = positionVersion
	binary.BigEndian.PutUint64(v[1:], uint64(offset))
	if err := s.db.RangeKeySet(positionStart, positionEnd, nil, v[:], pebble.NoSync); err != nil {
		return s.errorf("set position", err)
	}
	s.position, s.hasPosition = offset, true
	return nil
}

// readPosition reads the position's range key from the store.
func (s *pebbleStore) readPosition() (int64, bool, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{
		KeyTypes:   pebble.IterKeyTypeRangesOnly,
		UpperBound: positionEnd,
	})
	if err != nil {
		return 0, false, err
	}
	var (
		pos   int64
		found bool
	)
	if it.First() {
		for _, rk := range it.RangeKeys() {
			if len(rk.Suffix) != 0 {
				continue
			}
			if len(rk.Value) != positionLen || rk.Value[0] != positionVersion {
				_ = it.Close()
				return 0, false, fmt.Errorf("%w: position record %x is not version %d", state.ErrCorrupt, rk.Value, positionVersion)
			}
			pos, found = int64(binary.BigEndian.Uint64(rk.Value[1:])), true
		}
	}
	if err := it.Close(); err != nil {
		return 0, false, err
	}
	return pos, found, nil
}

func (s *pebbleStore) Get(key []byte) ([]byte, bool, error) {
	if s.db == nil {
		return nil, false, s.errorf("get", state.ErrClosed)
	}
	v, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, s.errorf("get", err)
	}
	out := append(make([]byte, 0, len(v)), v...) // v is only valid until closer.Close
	if err := closer.Close(); err != nil {
		return nil, false, s.errorf("get", err)
	}
	return out, true, nil
}

// ConcurrentGet implements state.ConcurrentGetter: Pebble's reads are safe
// during its writes, and the store's fields a Get reads change only when it
// closes.
func (s *pebbleStore) ConcurrentGet(key []byte) ([]byte, bool, error) { return s.Get(key) }

func (s *pebbleStore) Put(key, value []byte) (err error) {
	if err := s.writable("put"); err != nil {
		return err
	}
	defer s.recoverWrite("put", &err)
	if err := s.db.Set(key, value, pebble.NoSync); err != nil {
		return s.errorf("put", err)
	}
	s.unflushed.Add(1)
	return nil
}

func (s *pebbleStore) Delete(key []byte) (err error) {
	if err := s.writable("delete"); err != nil {
		return err
	}
	defer s.recoverWrite("delete", &err)
	if err := s.db.Delete(key, pebble.NoSync); err != nil {
		return s.errorf("delete", err)
	}
	s.unflushed.Add(-1)
	return nil
}

// ApplyBatch implements state.Restorer: changes of ingestMinBytes or more
// as tables Pebble ingests (ingest), fewer as unsynced Pebble batches of at
// most maxBatchBytes each. A store with a reserve applies them one by one,
// so what is still to be written when the disk fills is at most one of
// them, which the reserve holds, and the rest is refused. Without one
// atomic write, a crash can leave part of the changes; their position is
// written after them, so the changelog replays the rest.
func (s *pebbleStore) ApplyBatch(changes []state.Change) (err error) {
	if err := s.writable("apply batch"); err != nil {
		return err
	}
	defer s.recoverWrite("apply batch", &err)
	if batchBytes(changes) >= ingestMinBytes {
		return s.ingest(changes)
	}
	limit := 0 // one batch
	if s.reserve > 0 {
		limit = maxBatchBytes
	}
	return s.inChunks(changes, limit, s.applyBatch)
}

// inChunks hands changes to apply in order, in chunks of about limit bytes
// (all at once when limit is 0), checking between chunks that the store is
// still writable.
func (s *pebbleStore) inChunks(changes []state.Change, limit int, apply func([]state.Change) error) error {
	for len(changes) > 0 {
		n, size := 0, 0
		for n < len(changes) && (n == 0 || limit <= 0 || size < limit) {
			size += len(changes[n].Key) + len(changes[n].Value) + 16
			n++
		}
		if err := apply(changes[:n]); err != nil {
			return err
		}
		changes = changes[n:]
		if len(changes) > 0 {
			if err := s.writable("apply batch"); err != nil {
				return err
			}
		}
	}
	return nil
}

// maxBatchBytes bounds the batches of a store with a disk reserve.
const maxBatchBytes = 256 << 10

// ingestMinBytes is the size from which ApplyBatch writes its changes as
// table files that Pebble ingests, rather than through the log and the
// memtables: a restore then writes each entry once, sorted, instead of to
// the log, into a memtable and again into the table the memtable flushes
// to (with the log's rotations and syncs). The runtime's restore hands
// over changes in chunks of several MiB (stream's restoreChunkBytes).
const ingestMinBytes = 1 << 20

// ingestMaxBytes bounds one ingested table of a store with a disk reserve,
// which holds the largest write in flight when the disk fills (the default
// reserve is the memtable size plus 1 MiB: 17 MiB); a reserve smaller than
// it bounds the tables instead.
const ingestMaxBytes = 16 << 20

// ingestFile names the table a store writes before Pebble ingests it (Pebble
// links it into the store under a name of its own and leaves files it does
// not know alone).
const ingestFile = "KGEN-INGEST.sst"

// sortKey is a change's key to sort by: p0, p1 and p2 are its first 24
// bytes, big-endian, zero-padded (a window store's segment, key and window
// start fit, mostly), and i is its position among the changes. It holds
// no pointer, so the sort moves it without write barriers.
type sortKey struct {
	p0, p1, p2 uint64
	i          int32
}

// sortPrefix is how many bytes of a key a sortKey holds.
const sortPrefix = 24

func newSortKey(key []byte, i int) sortKey {
	if len(key) >= sortPrefix {
		return sortKey{
			p0: binary.BigEndian.Uint64(key), p1: binary.BigEndian.Uint64(key[8:]), p2: binary.BigEndian.Uint64(key[16:]),
			i: int32(i),
		}
	}
	var p [sortPrefix]byte
	copy(p[:], key)
	return sortKey{
		p0: binary.BigEndian.Uint64(p[:8]), p1: binary.BigEndian.Uint64(p[8:16]), p2: binary.BigEndian.Uint64(p[16:]),
		i: int32(i),
	}
}

// compareSortKeys orders by key, then by position. Zero padding makes keys
// such as "a" and "a\x00" equal in the prefix: a key shorter than it is
// compared whole.
func compareSortKeys(changes []state.Change, a, b sortKey) int {
	if a.p0 != b.p0 {
		return cmp.Compare(a.p0, b.p0)
	}
	if a.p1 != b.p1 {
		return cmp.Compare(a.p1, b.p1)
	}
	if a.p2 != b.p2 {
		return cmp.Compare(a.p2, b.p2)
	}
	ka, kb := changes[a.i].Key, changes[b.i].Key
	var c int
	if len(ka) >= sortPrefix && len(kb) >= sortPrefix {
		c = bytes.Compare(ka[sortPrefix:], kb[sortPrefix:])
	} else {
		c = bytes.Compare(ka, kb)
	}
	if c != 0 {
		return c
	}
	return cmp.Compare(a.i, b.i)
}

// batchBytes estimates what changes weigh in a batch or a table.
func batchBytes(changes []state.Change) int {
	n := 0
	for _, c := range changes {
		n += len(c.Key) + len(c.Value) + 16
	}
	return n
}

// ingest applies changes as table files, in order: each holds the last
// change of each of its keys, and an ingested table is newer than every
// write before it, so the store ends as if the changes were written one by
// one. An ingestion is atomic and durable (Pebble syncs the table and its
// MANIFEST), so the position written after it never covers lost data.
func (s *pebbleStore) ingest(changes []state.Change) error {
	// Tables of even sizes, no tiny last one.
	limit := batchBytes(changes)
	if s.reserve > 0 {
		maxTable := min(ingestMaxBytes, int(s.reserve))
		tables := (limit + maxTable - 1) / maxTable
		limit = (limit + tables - 1) / tables
	}
	return s.inChunks(changes, limit, s.ingestTable)
}

// ingestCompression is Pebble's default (Snappy) for an ingested table's
// data blocks while they shrink, and none once a sample of them shows
// they do not (one block in ten tried both ways): Snappy gives up on
// incompressible values (random bytes, encrypted or already compressed
// ones) only after trying every block, which was a sixth of a key-value
// store's restore CPU with 100 random bytes a value. Other blocks (index,
// properties) stay uncompressed; they are a small part of a table.
var ingestCompression = &block.CompressionProfile{
	Name:                           "kgen-ingest",
	DataBlocks:                     block.SnappyCompression.DataBlocks,
	ValueBlocks:                    block.SnappyCompression.ValueBlocks,
	OtherBlocks:                    block.NoCompression.OtherBlocks,
	MinReductionPercent:            block.SnappyCompression.MinReductionPercent,
	AdaptiveReductionCutoffPercent: block.SnappyCompression.MinReductionPercent,
}

// ingestWritable is Pebble's file writable (objstorageprovider's) with a
// larger buffer: Pebble's 4 KiB made a write call per data block, some
// 2,000 for a restore's chunk of 8 MiB.
type ingestWritable struct {
	f  vfs.File
	bw *bufio.Writer
}

const ingestBufferBytes = 256 << 10

func (w *ingestWritable) Write(p []byte) error {
	_, err := w.bw.Write(p)
	return err
}

// Finish flushes, syncs and closes the file.
func (w *ingestWritable) Finish() error {
	err := w.bw.Flush()
	if err == nil {
		err = w.f.Sync()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (w *ingestWritable) Abort() { _ = w.f.Close() }

// ingestTable writes changes, sorted by key, to one table and ingests it.
func (s *pebbleStore) ingestTable(changes []state.Change) error {
	path := s.wfs.PathJoin(s.dir, ingestFile)
	f, err := s.wfs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return s.errorf("apply batch", err)
	}
	wo := s.opts.MakeWriterOptions(0, s.db.TableFormat())
	if wo.Compression == block.SnappyCompression {
		wo.Compression = ingestCompression
	}
	w := sstable.NewWriter(&ingestWritable{f: f, bw: bufio.NewWriterSize(f, ingestBufferBytes)}, wo)
	write := func(i int32) error {
		if c := changes[i]; c.Value != nil {
			return w.Set(c.Key, c.Value)
		}
		return w.Delete(changes[i].Key)
	}
	// In key order, then by position (orderChanges): each key is written
	// once it is known that no later change of it follows, held the last
	// one seen, not written yet.
	held := int32(-1)
	err = orderChanges(changes, func(i int32, samePrefix bool) error {
		// Keys of different prefixes differ: only equal prefixes need
		// the keys' bytes.
		if held >= 0 && !(samePrefix && bytes.Equal(changes[held].Key, changes[i].Key)) {
			if err := write(held); err != nil {
				return err
			}
		}
		held = i
		return nil
	})
	if err == nil && held >= 0 {
		err = write(held)
	}
	// Close syncs and closes the file, also after a failed write.
	err = errors.Join(err, w.Close())
	if err == nil {
		err = s.db.Ingest(context.Background(), []string{path})
	}
	// Ingest linked the table into the store (or copied it).
	if rerr := s.wfs.Remove(path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		err = errors.Join(err, rerr)
	}
	if err != nil {
		return s.errorf("apply batch", err)
	}
	// ApproximateCount reads the table's entries from its properties.
	return nil
}

func (s *pebbleStore) applyBatch(changes []state.Change) error {
	b := s.db.NewBatch()
	var added int64
	for _, c := range changes {
		var err error
		if c.Value == nil {
			err = b.Delete(c.Key, nil)
			added--
		} else {
			err = b.Set(c.Key, c.Value, nil)
			added++
		}
		if err != nil {
			_ = b.Close()
			return s.errorf("apply batch", err)
		}
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		_ = b.Close()
		return s.errorf("apply batch", err)
	}
	s.unflushed.Add(added)
	if err := b.Close(); err != nil {
		return s.errorf("apply batch", err)
	}
	return nil
}

// DeleteRange implements state.RangeDeleter with one unsynced Pebble range
// tombstone, which drops the point keys of [from, to) without reading them;
// the position, a range key, is not a point key and stays. With no upper
// bound, the tombstone ends at the last key, which is deleted with it in one
// batch. ApproximateCount keeps counting dropped keys that reached a table
// until a compaction removes them.
func (s *pebbleStore) DeleteRange(from, to []byte) error {
	s.written()
	if s.db == nil {
		return s.errorf("delete range", state.ErrClosed)
	}
	b := s.db.NewBatch()
	defer b.Close()
	if len(from) == 0 {
		// A range tombstone must not start at the empty key: Pebble's
		// invariant checks (race builds) find such a span invalid. The
		// empty key, the smallest, is deleted as a point, the tombstone
		// starts at the next key.
		if to == nil || len(to) > 0 {
			if err := b.Delete([]byte{}, nil); err != nil {
				return s.errorf("delete range", err)
			}
		}
		from = []byte{0}
	}
	if to == nil {
		it, err := s.db.NewIter(nil)
		if err != nil {
			return s.errorf("delete range", err)
		}
		if it.Last() && bytes.Compare(it.Key(), from) >= 0 {
			last := bytes.Clone(it.Key())
			if bytes.Compare(from, last) < 0 {
				// Never an empty span [last, last): Pebble's invariant
				// checks (race builds) reject it as invalid.
				err = b.DeleteRange(from, last, nil)
			}
			err = errors.Join(err, b.Delete(last, nil))
		}
		if err = errors.Join(err, it.Close()); err != nil {
			return s.errorf("delete range", err)
		}
	} else if bytes.Compare(from, to) < 0 {
		if err := b.DeleteRange(from, to, nil); err != nil {
			return s.errorf("delete range", err)
		}
	}
	if b.Empty() {
		return nil
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return s.errorf("delete range", err)
	}
	return nil
}

func (s *pebbleStore) Range(from, to []byte) (state.Iterator, error) {
	if s.db == nil {
		return nil, s.errorf("range", state.ErrClosed)
	}
	if to != nil && (len(to) == 0 || from != nil && bytes.Compare(from, to) >= 0) {
		return emptyIter{}, nil // nothing sorts before the empty key
	}
	// An empty lower bound is no bound; Pebble's race-enabled builds also
	// index into a non-nil lower bound, so it must not be empty.
	if len(from) == 0 {
		from = nil
	}
	s.iterMu.Lock()
	if pi := s.spare; pi != nil && s.spareGen == s.gen {
		s.spare = nil
		it := &pebbleIter{s: s, it: pi, gen: s.gen}
		s.iters[it] = struct{}{}
		s.iterMu.Unlock()
		pi.SetBounds(from, to) // copied: SetBounds keeps neither
		return it, nil
	}
	// NewIter keeps the bounds for the iterator's life: give it copies.
	o := &pebble.IterOptions{}
	if from != nil {
		o.LowerBound = append(make([]byte, 0, len(from)), from...)
	}
	if to != nil {
		o.UpperBound = append(make([]byte, 0, len(to)), to...)
	}
	// A write between here and NewIter makes the iterator newer than
	// gen says: it is then closed rather than kept, which is safe.
	gen := s.gen
	s.iterMu.Unlock()
	pi, err := s.db.NewIter(o)
	if err != nil {
		return nil, s.errorf("range", err)
	}
	it := &pebbleIter{s: s, it: pi, gen: gen}
	s.iterMu.Lock()
	s.iters[it] = struct{}{}
	s.iterMu.Unlock()
	return it, nil
}

// ApproximateCount sums, over the table files, entries minus twice the
// deletions (a deletion also hides one older entry), and adds the puts minus
// deletes not yet flushed to a table. Overwrites count more than once until
// compaction merges them.
func (s *pebbleStore) ApproximateCount() (int64, error) {
	if s.db == nil {
		return 0, s.errorf("count", state.ErrClosed)
	}
	levels, err := s.db.SSTables(pebble.WithProperties())
	if err != nil {
		return 0, s.errorf("count", err)
	}
	n := s.unflushed.Load()
	for _, level := range levels {
		for _, t := range level {
			if t.Properties == nil {
				continue
			}
			n += int64(t.Properties.NumEntries) - 2*int64(t.Properties.NumDeletions)
		}
	}
	return max(n, 0), nil
}

func (s *pebbleStore) Flush() (err error) {
	if err := s.writable("flush"); err != nil {
		return err
	}
	defer s.recoverWrite("flush", &err)
	if s.disableWAL {
		err = s.db.Flush()
	} else {
		// A synced write waits for the WAL, with every write before it, to
		// reach the disk.
		err = s.db.LogData(nil, pebble.Sync)
	}
	if err != nil {
		return s.errorf("flush", err)
	}
	return nil
}

func (s *pebbleStore) Close() error {
	if s.db == nil {
		return s.errorf("close", state.ErrClosed)
	}
	var errs []error
	s.iterMu.Lock()
	s.dropSpare()
	open := make([]*pebbleIter, 0, len(s.iters))
	for it := range s.iters {
		open = append(open, it)
	}
	s.iterMu.Unlock()
	if n := len(open); n > 0 {
		for _, it := range open {
			_ = it.Close()
		}
		errs = append(errs, fmt.Errorf("%d iterators were left open", n))
	}
	if s.broken {
		// Closing could wait forever on the pipeline the panic left
		// locked; the process's end releases the files.
		errs = append(errs, errors.New("left open after a write failed inside pebble"))
	} else if err := s.db.Close(); err != nil {
		errs = append(errs, err)
	}
	s.db = nil
	if err := errors.Join(errs...); err != nil {
		return s.errorf("close", err)
	}
	return nil
}

// written marks a write begun: a spare iterator would no longer see the
// store as it is, and it pins what it sees, so it is closed at once.
func (s *pebbleStore) written() {
	s.iterMu.Lock()
	s.gen++
	s.dropSpare()
	s.iterMu.Unlock()
}

// dropSpare closes the spare iterator, if any. Call it holding iterMu.
func (s *pebbleStore) dropSpare() {
	if s.spare != nil {
		_ = s.spare.Close()
		s.spare = nil
	}
}

// pebbleIter adapts a Pebble iterator. Key and Value point into Pebble's
// buffers and are valid only until the next Next or Close.
type pebbleIter struct {
	s       *pebbleStore
	it      *pebble.Iterator // nil once closed
	gen     uint64           // the store's write count when it was opened
	started bool
	valid   bool // positioned on an entry
	value   []byte
	err     error
}

func (it *pebbleIter) Next() bool {
	if it.it == nil || it.err != nil {
		return false
	}
	var ok bool
	if !it.started {
		it.started = true
		ok = it.it.First()
	} else {
		ok = it.it.Next()
	}
	it.valid, it.value = false, nil
	if !ok {
		return false
	}
	v, err := it.it.ValueAndErr()
	if err != nil {
		it.err = err
		return false
	}
	if v == nil {
		v = []byte{} // a present empty value, as Get returns it
	}
	it.valid, it.value = true, v
	return true
}

func (it *pebbleIter) Key() []byte {
	if !it.valid {
		return nil
	}
	return it.it.Key()
}

func (it *pebbleIter) Value() []byte { return it.value }

func (it *pebbleIter) Err() error {
	if it.err != nil {
		return it.s.errorf("iterate", it.err)
	}
	if it.it != nil {
		if err := it.it.Error(); err != nil {
			return it.s.errorf("iterate", err)
		}
	}
	return nil
}

func (it *pebbleIter) Close() error {
	if it.it == nil {
		return nil
	}
	var err error
	s := it.s
	s.iterMu.Lock()
	keep := it.gen == s.gen && it.err == nil && it.it.Error() == nil && s.db != nil
	if keep {
		// Unchanged since it was opened: kept for the next Range.
		s.dropSpare()
		s.spare, s.spareGen = it.it, it.gen
	}
	delete(s.iters, it)
	s.iterMu.Unlock()
	if !keep {
		err = it.it.Close()
	}
	it.it, it.valid, it.value = nil, false, nil
	if err != nil && it.err == nil {
		return it.s.errorf("close iterator", err)
	}
	return nil
}

// pebbleLogger sends Pebble's messages to slog: routine ones at debug level.
// Fatalf keeps Pebble's contract that it does not return.
type pebbleLogger struct{ dir string }

func (l pebbleLogger) Infof(format string, args ...any) {
	if !slog.Default().Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	slog.Debug("pebble: "+fmt.Sprintf(format, args...), "store", l.dir)
}

func (l pebbleLogger) Errorf(format string, args ...any) {
	slog.Error("pebble: "+fmt.Sprintf(format, args...), "store", l.dir)
}

func (l pebbleLogger) Fatalf(format string, args ...any) {
	slog.Error("pebble: fatal: "+fmt.Sprintf(format, args...), "store", l.dir)
	os.Exit(1)
}

// emptyIter is the iterator of an empty range.
type emptyIter struct{}

func (emptyIter) Next() bool    { return false }
func (emptyIter) Key() []byte   { return nil }
func (emptyIter) Value() []byte { return nil }
func (emptyIter) Err() error    { return nil }
func (emptyIter) Close() error  { return nil }
