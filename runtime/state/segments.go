package state

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Window and session stores keep their records in time segments, as Kafka
// Streams' segmented stores do, so that retention drops a whole segment at
// once (a range tombstone in Pebble) instead of deleting records one by
// one. A segment is a span of SegmentInterval milliseconds of window starts
// (session ends); every backend key of the store is
//
//	segment id (8 bytes, big-endian) ‖ changelog key
//
// where the changelog key is Kafka Streams' (serialized key ‖ times), so
// that within a segment a key's records are together, ordered by time: a
// single key's fetch reads one short range per segment. The times are
// never negative (Kafka Streams' windows start at 0 or later), so the
// big-endian bytes order as the numbers do.
//
// One more key, observedKey, keeps the store's observed time (the largest
// window start or session end it was given). It sorts after every segment,
// is written through the same backend as the records (so the record cache
// holds it until a commit, and an exactly-once abort discards it with
// them), is never logged, and is rebuilt from the records by restoration.

// metaPrefix starts the keys a segmented store keeps about itself, never
// logged: segment ids are never negative, so no record key starts with it.
const metaPrefix = 0xff

var (
	// observedKey holds a segmented store's observed time.
	observedKey = []byte{metaPrefix, 'o', 'b', 's', 'e', 'r', 'v', 'e', 'd'}
	// seqKey holds the last sequence number a window store retaining
	// duplicates gave, so that after a restart it goes on from there
	// instead of giving a window's sequence numbers again, which would
	// replace the values under them.
	seqKey = []byte{metaPrefix, 's', 'e', 'q'}
)

// segPrefixLen is the length of a segment id in a backend key.
const segPrefixLen = 8

// segmented is what window and session stores share: their backend, their
// retention and segment interval (milliseconds), and the time that expires
// their records.
type segmented struct {
	name      string
	b         Backend
	retention int64
	interval  int64
}

// defaultSegmentInterval is Kafka Streams' segment interval for a store
// keeping data for retention: max(retention/2, 60s).
func defaultSegmentInterval(retention time.Duration) time.Duration {
	return max(retention/2, time.Minute)
}

func newSegmented(name string, b Backend, retention, interval time.Duration) segmented {
	r := max(retention.Milliseconds(), 1)
	i := interval.Milliseconds()
	if i <= 0 {
		i = defaultSegmentInterval(retention).Milliseconds()
	}
	return segmented{name: name, b: b, retention: r, interval: i}
}

func (s *segmented) errorf(op string, err error) error {
	return fmt.Errorf("store %q: %s: %w", s.name, op, err)
}

// segment is the id of the segment of time t (t >= 0).
func (s *segmented) segment(t int64) int64 { return t / s.interval }

// minLive is the smallest time a record may have and be kept, given the
// observed time: a record at or before observed - retention is expired.
func (s *segmented) minLive(observed int64) int64 {
	if observed < 0 {
		return 0
	}
	return max(observed-s.retention+1, 0)
}

// appendSegment appends segment id seg to dst.
func appendSegment(dst []byte, seg int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(seg))
}

// readObserved reads the observed time kept in b, -1 when none.
func readObserved(b Backend) (int64, error) {
	v, ok, err := readMeta(b, observedKey, 8)
	if err != nil || !ok {
		return -1, err
	}
	return int64(binary.BigEndian.Uint64(v)), nil
}

// readMeta reads the value of one of the store's own keys, of n bytes.
func readMeta(b Backend, key []byte, n int) ([]byte, bool, error) {
	var v []byte
	var ok bool
	var err error
	if vw, can := b.(viewer); can {
		v, ok, err = vw.view(key)
	} else {
		v, ok, err = b.Get(key)
	}
	if err != nil || !ok {
		return nil, false, err
	}
	if len(v) != n {
		return nil, false, fmt.Errorf("%q: %d bytes, want %d: %w", key[1:], len(v), n, ErrCorrupt)
	}
	return v, true, nil
}

// observed is the store's observed time, -1 when none.
func (s *segmented) observed() (int64, error) {
	t, err := readObserved(s.b)
	if err != nil {
		return -1, s.errorf("read observed time", err)
	}
	return t, nil
}

// advance makes t part of the observed time, and drops the segments that
// leaves wholly expired. It returns the new observed time.
func (s *segmented) advance(t int64) (int64, error) {
	old, err := s.observed()
	if err != nil {
		return -1, err
	}
	if t <= old {
		return old, nil
	}
	if err := advanceObserved(s.b, old, t, s.retention, s.interval); err != nil {
		return -1, s.errorf("expire", err)
	}
	return t, nil
}

// advanceObserved records t as b's observed time, old before, and drops
// the segments whose every time is expired at t but was not at old. Those
// keep no record a fetch may return, so dropping them unlogged loses
// nothing (see RangeDeleter).
func advanceObserved(b Backend, old, t, retention, interval int64) error {
	if err := b.Put(observedKey, binary.BigEndian.AppendUint64(nil, uint64(t))); err != nil {
		return err
	}
	s := segmented{retention: retention, interval: interval}
	// Segments before the one of the smallest live time hold only
	// expired records.
	from, to := int64(0), s.segment(s.minLive(t))
	if old >= 0 {
		from = s.segment(s.minLive(old))
	}
	if to <= from {
		return nil
	}
	return DeleteRanges(b, []KeyRange{{From: appendSegment(nil, 0), To: appendSegment(nil, to)}})
}

// timeRange clamps [from, to] to the times a store may still hold given
// its observed time: ok false when nothing in it can be.
func (s *segmented) timeRange(from, to, observed int64) (lo, hi int64, ok bool) {
	if observed < 0 {
		return 0, 0, false
	}
	lo, hi = max(from, s.minLive(observed)), min(to, observed)
	return lo, hi, lo <= hi
}

// restoreSegmented is the Restore of a segmented kind: each changelog
// record goes to its segment, found from its time (timeOf), unless it is
// already expired at the observed time so far; then the segments the
// batch expired are dropped, and the observed time kept.
func restoreSegmented(b Backend, changes []Change, retention, interval int64, timeOf func(key []byte) (int64, error), seqs bool) error {
	old, err := readObserved(b)
	if err != nil {
		return err
	}
	s := segmented{retention: retention, interval: interval}
	observed := old
	var seq, oldSeq uint32
	if seqs {
		if oldSeq, err = readSeq(b); err != nil {
			return err
		}
		seq = oldSeq
	}
	// Rewritten in place (Restore owns the slice): the i-th change read is
	// never behind the one written.
	out := changes[:0]
	// The segmented keys share one buffer: one allocation per batch, not
	// one per record (ApplyChanges keeps none of them).
	size := 0
	for _, c := range changes {
		size += segPrefixLen + len(c.Key)
	}
	keys := takeSegKeys(size)
	defer releaseSegKeys(keys)
	for _, c := range changes {
		t, err := timeOf(c.Key)
		if err != nil {
			return err
		}
		if seqs {
			seq = max(seq, binary.BigEndian.Uint32(c.Key[len(c.Key)-4:]))
		}
		observed = max(observed, t)
		if t < s.minLive(observed) {
			continue // expired: Kafka Streams skips it too
		}
		start := len(keys)
		keys = append(appendSegment(keys, s.segment(t)), c.Key...)
		out = append(out, Change{Key: keys[start:len(keys):len(keys)], Value: c.Value, Timestamp: c.Timestamp})
	}
	if seq > oldSeq {
		out = append(out, Change{Key: seqKey, Value: binary.BigEndian.AppendUint32(nil, seq)})
	}
	if err := ApplyChanges(b, out); err != nil {
		return err
	}
	if observed > old {
		return advanceObserved(b, old, observed, retention, interval)
	}
	return nil
}

// segmentedToChangelog is the ToChangelog of segmented kinds: a record
// loses its segment id; the observed time is not logged.
func segmentedToChangelog(c Change) (Change, bool) {
	if len(c.Key) < segPrefixLen || c.Key[0] == metaPrefix {
		return Change{}, false
	}
	c.Key = c.Key[segPrefixLen:]
	return c, true
}

// errNegativeTime is returned, wrapped, for a window or session time
// before the epoch, which Kafka Streams' windows never have.
var errNegativeTime = errors.New("negative time")

// segIter walks ranges of a backend one after the other, opening each only
// when the one before is done, and yields the entries keep accepts.
type segIter struct {
	b      Backend
	ranges []KeyRange
	keep   func(key []byte) bool
	// With byKey, keep is not called: only the windows of key are kept
	// (a window store's backend key of exactly key).
	key    []byte
	byKey  bool
	cur    Iterator
	err    error
	closed bool
}

func (it *segIter) Next() bool {
	for !it.closed && it.err == nil {
		if it.cur == nil {
			if len(it.ranges) == 0 {
				return false
			}
			r := it.ranges[0]
			it.ranges = it.ranges[1:]
			it.cur, it.err = it.b.Range(r.From, r.To)
			if it.err != nil {
				it.cur = nil
				return false
			}
		}
		for it.cur.Next() {
			if it.byKey {
				k := it.cur.Key()
				if len(k) == segPrefixLen+len(it.key)+windowSuffixLen && bytes.Equal(k[segPrefixLen:segPrefixLen+len(it.key)], it.key) {
					return true
				}
				continue
			}
			if it.keep(it.cur.Key()) {
				return true
			}
		}
		it.err = errors.Join(it.cur.Err(), it.cur.Close())
		it.cur = nil
	}
	return false
}

func (it *segIter) Key() []byte   { return it.cur.Key() }
func (it *segIter) Value() []byte { return it.cur.Value() }
func (it *segIter) Err() error    { return it.err }

func (it *segIter) Close() error {
	if it.closed {
		return nil
	}
	it.closed = true
	if it.cur != nil {
		err := it.cur.Close()
		it.cur = nil
		return err
	}
	return nil
}

// readSeq reads the last sequence number a window store gave, 0 when none.
func readSeq(b Backend) (uint32, error) {
	v, ok, err := readMeta(b, seqKey, 4)
	if err != nil || !ok {
		return 0, err
	}
	return binary.BigEndian.Uint32(v), nil
}

// segKeysPool holds the buffers of restored segmented keys (a window
// restore's third largest allocation, garbage once the chunk is applied),
// for the next chunk's.
var segKeysPool sync.Pool // *[]byte

// takeSegKeys returns an empty buffer of capacity n or more.
func takeSegKeys(n int) []byte {
	if p, ok := segKeysPool.Get().(*[]byte); ok && cap(*p) >= n {
		return (*p)[:0]
	}
	return make([]byte, 0, n)
}

// releaseSegKeys gives b back; nothing may read it any more.
func releaseSegKeys(b []byte) {
	b = b[:0]
	segKeysPool.Put(&b)
}
