package state

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/kgen-dev/kgen/runtime/serde"
)

// ErrExpired is returned, wrapped, by a Put into a window or session store
// whose window (session) is already past the store's retention: older than
// its observed time minus its retention. Nothing is written or logged. An
// operator counts it as a dropped record ("expired-window"), as Kafka
// Streams counts its expired-window-record-drop metric, rather than failing.
var ErrExpired = errors.New("window is past the store's retention")

// WindowStore is a typed store of values by (key, window start), the start
// in milliseconds since the epoch, as Kafka Streams' WindowStore. It keeps a
// window for its retention: once the store has seen a window start t (its
// observed time), windows starting at or before t - retention are gone,
// and fetches never return them.
type WindowStore[K, V any] interface {
	// Name is the store's name, as in the topology.
	Name() string
	// Put stores value under (key, windowStart). A value that serializes to
	// nil deletes the window, unless the store retains duplicates: then it
	// is ignored. With duplicates retained, every Put adds a value, even
	// one already stored. A window past retention is not stored: the error
	// wraps ErrExpired (a deletion of one is no error: it is gone).
	Put(key K, value V, windowStart int64) error
	// Fetch returns the value of (key, windowStart); with duplicates
	// retained, the first one put.
	Fetch(key K, windowStart int64) (V, bool, error)
	// FetchRange iterates the key's windows with a start in [from, to], by
	// ascending start (duplicates in the order they were put).
	FetchRange(key K, from, to int64) (WindowIterator[K, V], error)
	// BackwardFetchRange is FetchRange by descending start.
	BackwardFetchRange(key K, from, to int64) (WindowIterator[K, V], error)
	// FetchAll iterates every key's windows with a start in [from, to],
	// ordered as Kafka Streams' persistent window store orders them: by
	// segment (a span of starts, see WindowStoreOptions.SegmentInterval),
	// then by changelog key bytes (serialized key ‖ start ‖ sequence
	// number): by key, then start, unless one serialized key is a prefix
	// of another.
	FetchAll(from, to int64) (WindowIterator[K, V], error)
	// All is FetchAll over every window the store keeps.
	All() (WindowIterator[K, V], error)
	// ObservedTime is the largest window start the store was given (by Put
	// or by restoration), -1 when none: it drives expiry.
	ObservedTime() (int64, error)
}

// WindowIterator walks windows. Call Next before the first Key. Key, Start
// and Value are decoded at each step and are the caller's to keep. After
// Next returns false, Err tells whether decoding or the backend failed.
// Close must be called.
type WindowIterator[K, V any] interface {
	Next() bool
	Key() K
	Start() int64
	Value() V
	Err() error
	Close() error
}

// WindowStoreOptions configures a window store.
type WindowStoreOptions struct {
	// Retention is how long past its start a window is kept, measured in
	// observed time: an operator gives its windows' size plus grace, or
	// more when asked (Materialized.withRetention). Zero means WindowSize;
	// less than WindowSize is WindowSize.
	Retention time.Duration
	// WindowSize is the windows' size.
	WindowSize time.Duration
	// RetainDuplicates keeps every value put under one (key, start), each
	// with its own sequence number, as a stream-stream join's stores do.
	RetainDuplicates bool
	// SegmentInterval is the span of window starts whose windows expire
	// together. Zero is max(Retention/2, 60s), as Kafka Streams.
	SegmentInterval time.Duration
}

// NewWindowStore types a backend as a window store; logger may be nil (not
// logged). Each write is passed to logger in Kafka Streams' changelog
// format: key = serialized key ‖ window start (8 bytes, big-endian) ‖
// sequence number (4 bytes, big-endian: 0 unless duplicates are retained),
// value = serialized value, with the logger's RecordTime as its timestamp.
// Its kind is WindowKind(opt). See segments.go for the backend's layout.
func NewWindowStore[K, V any](name string, b Backend, ks serde.Serde[K], vs serde.Serde[V], opt WindowStoreOptions, logger ChangeLogger) WindowStore[K, V] {
	opt = opt.normalized()
	if c, ok := b.(*Cache); ok && opt.RetainDuplicates {
		// Every put is a new key, and reads are fetches (ranges): the
		// cache's map would only cost memory.
		c.OrderedOnly()
	}
	return &windowStore[K, V]{
		segmented: newSegmented(name, b, opt.Retention, opt.SegmentInterval),
		ks:        ks,
		vs:        vs,
		dups:      opt.RetainDuplicates,
		logger:    logger,
	}
}

// normalized fills in the defaults of opt.
func (opt WindowStoreOptions) normalized() WindowStoreOptions {
	opt.Retention = max(opt.Retention, opt.WindowSize)
	if opt.SegmentInterval <= 0 {
		opt.SegmentInterval = defaultSegmentInterval(opt.Retention)
	}
	return opt
}

// WindowKind is the kind of window stores made with opt: a changelog kept
// compact,delete for the retention plus the margin, whose records are
// restored into the store's segments, except those already past retention.
func WindowKind(opt WindowStoreOptions) *StoreKind {
	opt = opt.normalized()
	seg := newSegmented("", nil, opt.Retention, opt.SegmentInterval)
	k := &StoreKind{
		Name:      "window",
		Changelog: RetainedChangelog,
		Restore: func(b Backend, changes []Change) error {
			return restoreSegmented(b, changes, seg.retention, seg.interval, windowStartOf, opt.RetainDuplicates)
		},
		ToChangelog: segmentedToChangelog,
	}
	if opt.RetainDuplicates {
		// A stream-stream join's store: every put is a new entry, dropped
		// with its segment a retention later. A write-behind cache that
		// holds the retention keeps them out of the disk store until the
		// commit: at 10,000 entries the larger partitions' stores wrote
		// everything back, then read it from table files and dropped it
		// there.
		k.WriteBehind = joinWriteBehind
	}
	return k
}

// joinWriteBehind is the write-behind cache of a join's window store (see
// StoreKind.WriteBehind): several minutes of the benchmark's largest
// partition; full, some 14 MiB with 100-byte values.
const joinWriteBehind = 50_000

// windowSuffixLen is the length of what follows the serialized key in a
// window store's changelog key: the start and the sequence number.
const windowSuffixLen = 8 + 4

// windowStartOf reads the window start of a changelog key.
func windowStartOf(key []byte) (int64, error) {
	if len(key) < windowSuffixLen {
		return 0, fmt.Errorf("window changelog key of %d bytes, want at least %d: not a window store's record", len(key), windowSuffixLen)
	}
	t := int64(binary.BigEndian.Uint64(key[len(key)-windowSuffixLen:]))
	if t < 0 {
		return 0, fmt.Errorf("window changelog key with start %d, before the epoch", t)
	}
	return t, nil
}

type windowStore[K, V any] struct {
	segmented
	ks     serde.Serde[K]
	vs     serde.Serde[V]
	dups   bool
	logger ChangeLogger
	// seq is the last sequence number given (duplicates retained), read
	// from the backend at the first put (seqRead). Only puts use it, on
	// the owner's goroutine; after an aborted commit it may be ahead of
	// the backend's, which only skips numbers.
	seq     uint32
	seqRead bool
	// spare is a closed one-key fetch, kept for the next: a join fetches
	// once per record. Atomic, since queries may fetch from their own
	// goroutines while the owner does.
	spare atomic.Pointer[keyFetch[K, V]]
}

func (s *windowStore[K, V]) Name() string { return s.name }

func (s *windowStore[K, V]) ObservedTime() (int64, error) { return s.observed() }

func (s *windowStore[K, V]) key(op string, key K) ([]byte, error) {
	kb, err := s.ks.Serialize(key)
	if err != nil {
		return nil, s.errorf(op, fmt.Errorf("serialize key: %w", err))
	}
	return kb, nil
}

// storeKey is the backend key of (kb, start, seq).
func (s *windowStore[K, V]) storeKey(kb []byte, start int64, seq uint32) []byte {
	return s.appendStoreKey(make([]byte, 0, segPrefixLen+len(kb)+windowSuffixLen), kb, start, seq)
}

// appendStoreKey appends the backend key of (kb, start, seq) to k.
func (s *windowStore[K, V]) appendStoreKey(k, kb []byte, start int64, seq uint32) []byte {
	k = appendSegment(k, s.segment(start))
	k = append(k, kb...)
	k = binary.BigEndian.AppendUint64(k, uint64(start))
	return binary.BigEndian.AppendUint32(k, seq)
}

func (s *windowStore[K, V]) Put(key K, value V, windowStart int64) error {
	if windowStart < 0 {
		return s.errorf("put", fmt.Errorf("window start %d: %w", windowStart, errNegativeTime))
	}
	kb, err := s.key("put", key)
	if err != nil {
		return err
	}
	vb, err := s.vs.Serialize(value)
	if err != nil {
		return s.errorf("put", fmt.Errorf("serialize value: %w", err))
	}
	if vb == nil && s.dups {
		return nil // a join's store keeps values, and has nothing to delete
	}
	// As Kafka Streams, time advances before the window is checked: a
	// window is never too late for the time it brings.
	observed, err := s.advance(windowStart)
	if err != nil {
		return err
	}
	if windowStart < s.minLive(observed) {
		if vb == nil {
			return nil // nothing to delete: the window is gone
		}
		return s.errorf("put", fmt.Errorf("window start %d, observed time %d, retention %dms: %w", windowStart, observed, s.retention, ErrExpired))
	}
	var seq uint32
	if s.dups {
		// As Kafka Streams: 1, 2, … 2^31-1, 0, 1, …
		if !s.seqRead {
			if s.seq, err = readSeq(s.b); err != nil {
				return s.errorf("put", err)
			}
			s.seqRead = true
		}
		seq = (s.seq + 1) & 0x7fffffff
		s.seq = seq
		if err := s.b.Put(seqKey, binary.BigEndian.AppendUint32(nil, seq)); err != nil {
			return s.errorf("put", err)
		}
	}
	var sk []byte
	if c, ok := s.b.(*Cache); ok && vb != nil {
		// The key and a copy of the value in one allocation, which the
		// cache keeps and the changelog record reads: a join puts every
		// record, and the cache holds them for the retention.
		n := segPrefixLen + len(kb) + windowSuffixLen
		buf := s.appendStoreKey(make([]byte, 0, n+len(vb)), kb, windowStart, seq)
		buf = append(buf, vb...)
		sk, vb = buf[:n:n], buf[n:]
		err = c.putOwnedKV(sk, vb)
	} else {
		sk = s.storeKey(kb, windowStart, seq)
		if vb == nil {
			err = s.b.Delete(sk)
		} else {
			err = s.b.Put(sk, vb)
		}
	}
	if err != nil {
		return s.errorf("put", err)
	}
	if s.logger != nil {
		s.logger.LogChange(sk[segPrefixLen:], vb, s.logger.RecordTime())
	}
	return nil
}

func (s *windowStore[K, V]) Fetch(key K, windowStart int64) (V, bool, error) {
	var zero V
	kb, err := s.key("fetch", key)
	if err != nil {
		return zero, false, err
	}
	observed, err := s.observed()
	if err != nil {
		return zero, false, err
	}
	if _, _, ok := s.timeRange(windowStart, windowStart, observed); !ok {
		return zero, false, nil
	}
	var vb []byte
	var found bool
	if !s.dups {
		vb, found, err = s.b.Get(s.storeKey(kb, windowStart, 0))
		if err != nil {
			return zero, false, s.errorf("fetch", err)
		}
	} else {
		// The first of the window's values: the lowest sequence number.
		from := s.storeKey(kb, windowStart, 0)
		to := s.storeKey(kb, windowStart+1, 0)
		copy(to, from[:segPrefixLen]) // windowStart's segment, even if windowStart+1 is in the next
		it, err := s.b.Range(from, to)
		if err != nil {
			return zero, false, s.errorf("fetch", err)
		}
		for it.Next() {
			if k := it.Key(); len(k) == len(from) && bytes.Equal(k[:len(k)-4], from[:len(from)-4]) {
				vb, found = append([]byte{}, it.Value()...), true
				break
			}
		}
		if err := errors.Join(it.Err(), it.Close()); err != nil {
			return zero, false, s.errorf("fetch", err)
		}
	}
	if !found {
		return zero, false, nil
	}
	if vb == nil {
		vb = []byte{} // a stored value is never a null
	}
	v, err := s.vs.Deserialize(vb)
	if err != nil {
		return zero, false, s.errorf("fetch", fmt.Errorf("deserialize value: %w", err))
	}
	return v, true, nil
}

func (s *windowStore[K, V]) FetchRange(key K, from, to int64) (WindowIterator[K, V], error) {
	return s.fetchKey(key, from, to, false)
}

func (s *windowStore[K, V]) BackwardFetchRange(key K, from, to int64) (WindowIterator[K, V], error) {
	return s.fetchKey(key, from, to, true)
}

// fetchKey iterates the windows of one key: one range per segment, each
// from the key's first window in [from, to] to its last. The iterator, its
// ranges and their keys are one allocation when the range spans at most two
// segments (a join's lookups do).
func (s *windowStore[K, V]) fetchKey(key K, from, to int64, backward bool) (WindowIterator[K, V], error) {
	f := s.spare.Swap(nil)
	if f == nil {
		f = &keyFetch[K, V]{}
	}
	var err error
	if a, ok := s.ks.(serde.Appender[K]); ok {
		f.kb, err = a.AppendSerialize(f.buf[:0], key)
	} else {
		f.kb, err = s.ks.Serialize(key)
	}
	if err != nil {
		s.spare.Store(f)
		return nil, s.errorf("fetch", fmt.Errorf("serialize key: %w", err))
	}
	kb := f.kb
	observed, err := s.observed()
	if err != nil {
		s.spare.Store(f)
		return nil, err
	}
	lo, hi, ok := s.timeRange(from, to, observed)
	ranges := f.ranges[:0]
	if ok {
		n := int(s.segment(hi)-s.segment(lo)) + 1
		// Every range's bounds in one buffer, kept with the fetch: each is
		// the segment, the key and a time and sequence number. Backends
		// keep no bound past their iterator's Close.
		size := segPrefixLen + len(kb) + windowSuffixLen
		keys := f.keys[:0]
		if cap(keys) < 2*n*size {
			keys = make([]byte, 0, 2*n*size)
		}
		for seg := s.segment(lo); seg <= s.segment(hi); seg++ {
			start := len(keys)
			keys = appendSegment(keys, seg)
			keys = append(keys, kb...)
			keys = binary.BigEndian.AppendUint64(keys, uint64(lo))
			keys = binary.BigEndian.AppendUint32(keys, 0)
			mid := len(keys)
			keys = appendSegment(keys, seg)
			keys = append(keys, kb...)
			keys = binary.BigEndian.AppendUint64(keys, uint64(hi+1))
			keys = binary.BigEndian.AppendUint32(keys, 0)
			ranges = append(ranges, KeyRange{From: keys[start:mid:mid], To: keys[mid:len(keys):len(keys)]})
		}
		f.keys = keys
	}
	// A longer key that starts with kb may fall in the ranges: only kb's
	// own windows are kept (segIter.key).
	f.seg = segIter{b: s.b, ranges: ranges, key: kb, byKey: true}
	f.win = windowIter[K, V]{s: s, it: &f.seg, kraw: f.win.kraw[:0], fetch: f}
	if backward {
		// reversed reads f to its end and closes it: f goes back to spare.
		return f.win.reversed()
	}
	return &keyFetchIter[K, V]{f}, nil
}

// keyFetch is a one-key fetch's iterator with what it walks; the store
// keeps it once closed (spare), with its buffers.
type keyFetch[K, V any] struct {
	win    windowIter[K, V]
	seg    segIter
	ranges [2]KeyRange
	kb     []byte
	keys   []byte
	buf    [32]byte
}

// keyFetchIter is what a one-key fetch returns: the keyFetch it lends,
// until Close gives it back (so a second Close cannot close the fetch that
// reuses it).
type keyFetchIter[K, V any] struct{ f *keyFetch[K, V] }

func (it *keyFetchIter[K, V]) Next() bool {
	return it.f != nil && it.f.win.Next()
}
func (it *keyFetchIter[K, V]) Key() K       { return it.f.win.Key() }
func (it *keyFetchIter[K, V]) Start() int64 { return it.f.win.Start() }
func (it *keyFetchIter[K, V]) Value() V     { return it.f.win.Value() }

func (it *keyFetchIter[K, V]) Err() error {
	if it.f == nil {
		return nil
	}
	return it.f.win.Err()
}

func (it *keyFetchIter[K, V]) Close() error {
	if it.f == nil {
		return nil
	}
	f := it.f
	it.f = nil
	return f.win.Close()
}

func (s *windowStore[K, V]) FetchAll(from, to int64) (WindowIterator[K, V], error) {
	observed, err := s.observed()
	if err != nil {
		return nil, err
	}
	lo, hi, ok := s.timeRange(from, to, observed)
	var ranges []KeyRange
	if ok {
		for seg := s.segment(lo); seg <= s.segment(hi); seg++ {
			ranges = append(ranges, KeyRange{From: appendSegment(nil, seg), To: appendSegment(nil, seg+1)})
		}
	}
	keep := func(k []byte) bool {
		if len(k) < segPrefixLen+windowSuffixLen {
			return false
		}
		t := int64(binary.BigEndian.Uint64(k[len(k)-windowSuffixLen:]))
		return t >= lo && t <= hi
	}
	return s.iter(ranges, keep, false)
}

func (s *windowStore[K, V]) All() (WindowIterator[K, V], error) {
	return s.FetchAll(0, 1<<63-1)
}

func (s *windowStore[K, V]) iter(ranges []KeyRange, keep func([]byte) bool, backward bool) (WindowIterator[K, V], error) {
	it := &windowIter[K, V]{s: s, it: &segIter{b: s.b, ranges: ranges, keep: keep}, decodeKeys: true}
	if backward {
		return it.reversed()
	}
	return it, nil
}

type windowEntry[K, V any] struct {
	k     K
	start int64
	v     V
}

// windowIter decodes a segIter's entries; with rev set, it hands out the
// entries read forward beforehand (the backends iterate forward only).
type windowIter[K, V any] struct {
	s   *windowStore[K, V]
	it  Iterator
	cur windowEntry[K, V]
	rev []windowEntry[K, V]
	err error
	// kraw is the current entry's serialized key, decoded into cur.k by
	// Key (keyDone once done), or by Next when decodeKeys is set.
	kraw       []byte
	keyDone    bool
	decodeKeys bool
	// fetch is the one-key fetch this iterator is part of, given back to
	// its store by Close; nil for other iterators.
	fetch *keyFetch[K, V]
}

// reversed reads it to its end and returns an iterator over what it read,
// backward.
func (it *windowIter[K, V]) reversed() (WindowIterator[K, V], error) {
	it.decodeKeys = true
	var all []windowEntry[K, V]
	for it.Next() {
		all = append(all, it.cur)
	}
	err := errors.Join(it.Err(), it.Close())
	if err != nil {
		return nil, err
	}
	slices.Reverse(all)
	return &windowIter[K, V]{s: it.s, rev: all}, nil
}

func (it *windowIter[K, V]) Next() bool {
	it.cur = windowEntry[K, V]{}
	if it.err != nil {
		return false
	}
	if it.it == nil {
		if len(it.rev) == 0 {
			return false
		}
		it.cur, it.rev = it.rev[0], it.rev[1:]
		return true
	}
	if !it.it.Next() {
		return false
	}
	k, vb := it.it.Key(), it.it.Value()
	// A one-key fetch's keys are all the key asked for, decoded only when
	// asked for (a join never asks): their bytes are kept until then.
	it.kraw = append(it.kraw[:0], k[segPrefixLen:len(k)-windowSuffixLen]...)
	it.keyDone = false
	// A stored value is never a null, even an empty one that an
	// iterator hands over as nil.
	v, err := it.s.vs.Deserialize(append([]byte{}, vb...))
	if err != nil {
		it.err = it.s.errorf("iterate", fmt.Errorf("deserialize value: %w", err))
		return false
	}
	it.cur = windowEntry[K, V]{start: int64(binary.BigEndian.Uint64(k[len(k)-windowSuffixLen:])), v: v}
	if it.rev != nil || it.decodeKeys {
		return it.decodeKey()
	}
	return true
}

// decodeKey decodes the current entry's key from kraw.
func (it *windowIter[K, V]) decodeKey() bool {
	if it.keyDone {
		return it.err == nil
	}
	it.keyDone = true
	key, err := it.s.ks.Deserialize(bytes.Clone(it.kraw))
	if err != nil {
		it.err = it.s.errorf("iterate", fmt.Errorf("deserialize key: %w", err))
		return false
	}
	it.cur.k = key
	return true
}

func (it *windowIter[K, V]) Key() K {
	if it.it != nil {
		it.decodeKey()
	}
	return it.cur.k
}
func (it *windowIter[K, V]) Start() int64 { return it.cur.start }
func (it *windowIter[K, V]) Value() V     { return it.cur.v }

func (it *windowIter[K, V]) Err() error {
	if it.err != nil {
		return it.err
	}
	if it.it != nil {
		if err := it.it.Err(); err != nil {
			return it.s.errorf("iterate", err)
		}
	}
	return nil
}

func (it *windowIter[K, V]) Close() error {
	it.rev = nil
	var err error
	if it.it != nil {
		err = it.it.Close()
	}
	if f := it.fetch; f != nil {
		// Keep no value or backend alive while spare.
		it.fetch, it.it, it.cur = nil, nil, windowEntry[K, V]{}
		f.seg = segIter{}
		f.ranges = [2]KeyRange{}
		it.s.spare.Store(f)
	}
	if err != nil {
		return it.s.errorf("close iterator", err)
	}
	return nil
}
