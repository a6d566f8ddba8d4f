package state

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/kgen-dev/kgen/runtime/serde"
)

// SessionStore is a typed store of values by (key, session start, session
// end), in milliseconds since the epoch, as Kafka Streams' SessionStore. It
// keeps a session for its retention: once the store has seen a session end
// t (its observed time), sessions ending at or before t - retention are
// gone, and lookups never return them.
type SessionStore[K, V any] interface {
	// Name is the store's name, as in the topology.
	Name() string
	// Put stores value under (key, start, end); a value that serializes to
	// nil removes the session. A session past retention is not stored: the
	// error wraps ErrExpired.
	Put(key K, start, end int64, value V) error
	// Remove deletes the session (key, start, end), as a merge does with
	// the sessions it replaces.
	Remove(key K, start, end int64) error
	// Fetch returns the value of the session (key, start, end).
	Fetch(key K, start, end int64) (V, bool, error)
	// FindSessions iterates the key's sessions with end >= earliestEnd and
	// start <= latestStart (those a record's session merges with), by
	// ascending end, then start.
	FindSessions(key K, earliestEnd, latestStart int64) (SessionIterator[K, V], error)
	// BackwardFindSessions is FindSessions by descending end, then start.
	BackwardFindSessions(key K, earliestEnd, latestStart int64) (SessionIterator[K, V], error)
	// FetchSessions iterates all of the key's sessions, as FindSessions.
	FetchSessions(key K) (SessionIterator[K, V], error)
	// FindSessionsByEnd iterates every key's sessions ending in
	// [earliestEnd, latestEnd] (as Kafka Streams' findSessions over all
	// keys, for emitting closed sessions), ordered as All; it reads only
	// the segments of those ends.
	FindSessionsByEnd(earliestEnd, latestEnd int64) (SessionIterator[K, V], error)
	// All iterates every session, by segment (a span of ends), then by
	// changelog key bytes (serialized key ‖ end ‖ start), as Kafka
	// Streams' persistent session store.
	All() (SessionIterator[K, V], error)
	// ObservedTime is the largest session end the store was given, -1 when
	// none: it drives expiry.
	ObservedTime() (int64, error)
}

// SessionIterator walks sessions. Call Next before the first Key. What it
// returns is the caller's to keep. After Next returns false, Err tells
// whether decoding or the backend failed. Close must be called.
type SessionIterator[K, V any] interface {
	Next() bool
	Key() K
	Start() int64
	End() int64
	Value() V
	Err() error
	Close() error
}

// NewSessionStore types a backend as a session store keeping sessions for
// retention (an operator gives its inactivity gap plus grace, or more);
// logger may be nil (not logged). Each write is passed to logger in Kafka
// Streams' changelog format: key = serialized key ‖ end (8 bytes,
// big-endian) ‖ start (8 bytes, big-endian), value = serialized value (nil
// for a removal), with the logger's RecordTime as its timestamp. Its kind
// is SessionKind(retention). Sessions are segmented by their end, as in
// Kafka Streams, with its segment interval: max(retention/2, 60s).
func NewSessionStore[K, V any](name string, b Backend, ks serde.Serde[K], vs serde.Serde[V], retention time.Duration, logger ChangeLogger) SessionStore[K, V] {
	return &sessionStore[K, V]{
		segmented: newSegmented(name, b, retention, 0),
		ks:        ks,
		vs:        vs,
		logger:    logger,
	}
}

// SessionKind is the kind of session stores keeping sessions for
// retention: a changelog kept compact,delete for the retention plus the
// margin, whose records are restored into the store's segments, except
// those already past retention.
func SessionKind(retention time.Duration) *StoreKind {
	seg := newSegmented("", nil, retention, 0)
	return &StoreKind{
		Name:      "session",
		Changelog: RetainedChangelog,
		Restore: func(b Backend, changes []Change) error {
			return restoreSegmented(b, changes, seg.retention, seg.interval, sessionEndOf, false)
		},
		ToChangelog: segmentedToChangelog,
	}
}

// sessionSuffixLen is the length of what follows the serialized key in a
// session store's changelog key: the end, then the start.
const sessionSuffixLen = 8 + 8

// sessionEndOf reads the session end of a changelog key.
func sessionEndOf(key []byte) (int64, error) {
	if len(key) < sessionSuffixLen {
		return 0, fmt.Errorf("session changelog key of %d bytes, want at least %d: not a session store's record", len(key), sessionSuffixLen)
	}
	t := int64(binary.BigEndian.Uint64(key[len(key)-sessionSuffixLen:]))
	if t < 0 {
		return 0, fmt.Errorf("session changelog key with end %d, before the epoch", t)
	}
	return t, nil
}

type sessionStore[K, V any] struct {
	segmented
	ks     serde.Serde[K]
	vs     serde.Serde[V]
	logger ChangeLogger
}

func (s *sessionStore[K, V]) Name() string { return s.name }

func (s *sessionStore[K, V]) ObservedTime() (int64, error) { return s.observed() }

func (s *sessionStore[K, V]) key(op string, key K) ([]byte, error) {
	kb, err := s.ks.Serialize(key)
	if err != nil {
		return nil, s.errorf(op, fmt.Errorf("serialize key: %w", err))
	}
	return kb, nil
}

// storeKey is the backend key of the session (kb, start, end).
func (s *sessionStore[K, V]) storeKey(kb []byte, start, end int64) []byte {
	k := make([]byte, 0, segPrefixLen+len(kb)+sessionSuffixLen)
	k = appendSegment(k, s.segment(end))
	k = append(k, kb...)
	k = binary.BigEndian.AppendUint64(k, uint64(end))
	return binary.BigEndian.AppendUint64(k, uint64(start))
}

func checkSession(start, end int64) error {
	if start < 0 {
		return fmt.Errorf("session start %d: %w", start, errNegativeTime)
	}
	if end < start {
		return fmt.Errorf("session ends (%d) before it starts (%d)", end, start)
	}
	return nil
}

func (s *sessionStore[K, V]) Put(key K, start, end int64, value V) error {
	if err := checkSession(start, end); err != nil {
		return s.errorf("put", err)
	}
	kb, err := s.key("put", key)
	if err != nil {
		return err
	}
	vb, err := s.vs.Serialize(value)
	if err != nil {
		return s.errorf("put", fmt.Errorf("serialize value: %w", err))
	}
	return s.write("put", kb, start, end, vb)
}

func (s *sessionStore[K, V]) Remove(key K, start, end int64) error {
	if err := checkSession(start, end); err != nil {
		return s.errorf("remove", err)
	}
	kb, err := s.key("remove", key)
	if err != nil {
		return err
	}
	return s.write("remove", kb, start, end, nil)
}

// write stores vb (nil: removes) under the session, and logs it.
func (s *sessionStore[K, V]) write(op string, kb []byte, start, end int64, vb []byte) error {
	observed, err := s.advance(end)
	if err != nil {
		return err
	}
	if end < s.minLive(observed) {
		if vb == nil {
			return nil // already gone
		}
		return s.errorf(op, fmt.Errorf("session end %d, observed time %d, retention %dms: %w", end, observed, s.retention, ErrExpired))
	}
	sk := s.storeKey(kb, start, end)
	if vb == nil {
		err = s.b.Delete(sk)
	} else {
		err = s.b.Put(sk, vb)
	}
	if err != nil {
		return s.errorf(op, err)
	}
	if s.logger != nil {
		s.logger.LogChange(sk[segPrefixLen:], vb, s.logger.RecordTime())
	}
	return nil
}

func (s *sessionStore[K, V]) Fetch(key K, start, end int64) (V, bool, error) {
	var zero V
	if start < 0 || end < start {
		return zero, false, nil
	}
	kb, err := s.key("fetch", key)
	if err != nil {
		return zero, false, err
	}
	observed, err := s.observed()
	if err != nil {
		return zero, false, err
	}
	if _, _, ok := s.timeRange(end, end, observed); !ok {
		return zero, false, nil
	}
	vb, ok, err := s.b.Get(s.storeKey(kb, start, end))
	if err != nil || !ok {
		return zero, false, err
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

func (s *sessionStore[K, V]) FindSessions(key K, earliestEnd, latestStart int64) (SessionIterator[K, V], error) {
	return s.find(key, earliestEnd, latestStart, false)
}

func (s *sessionStore[K, V]) BackwardFindSessions(key K, earliestEnd, latestStart int64) (SessionIterator[K, V], error) {
	return s.find(key, earliestEnd, latestStart, true)
}

func (s *sessionStore[K, V]) FetchSessions(key K) (SessionIterator[K, V], error) {
	return s.find(key, 0, 1<<63-1, false)
}

// find iterates the key's sessions ending at earliestEnd or later and
// starting at latestStart or earlier: one range per segment, from the
// key's first session ending in time to its last.
func (s *sessionStore[K, V]) find(key K, earliestEnd, latestStart int64, backward bool) (SessionIterator[K, V], error) {
	kb, err := s.key("find sessions", key)
	if err != nil {
		return nil, err
	}
	observed, err := s.observed()
	if err != nil {
		return nil, err
	}
	// A session's end is at most the observed time.
	lo, hi, ok := s.timeRange(earliestEnd, 1<<63-2, observed)
	var ranges []KeyRange
	if ok && latestStart >= 0 {
		for seg := s.segment(lo); seg <= s.segment(hi); seg++ {
			f := s.storeKey(kb, 0, lo)
			t := s.storeKey(kb, 0, hi+1)
			binary.BigEndian.PutUint64(f, uint64(seg))
			binary.BigEndian.PutUint64(t, uint64(seg))
			ranges = append(ranges, KeyRange{From: f, To: t})
		}
	}
	keep := func(k []byte) bool {
		return len(k) == segPrefixLen+len(kb)+sessionSuffixLen &&
			bytes.Equal(k[segPrefixLen:segPrefixLen+len(kb)], kb) &&
			int64(binary.BigEndian.Uint64(k[len(k)-8:])) <= latestStart
	}
	return s.iter(ranges, keep, backward)
}

func (s *sessionStore[K, V]) All() (SessionIterator[K, V], error) {
	return s.FindSessionsByEnd(0, 1<<63-2)
}

func (s *sessionStore[K, V]) FindSessionsByEnd(earliestEnd, latestEnd int64) (SessionIterator[K, V], error) {
	observed, err := s.observed()
	if err != nil {
		return nil, err
	}
	lo, hi, ok := s.timeRange(earliestEnd, latestEnd, observed)
	var ranges []KeyRange
	if ok {
		for seg := s.segment(lo); seg <= s.segment(hi); seg++ {
			ranges = append(ranges, KeyRange{From: appendSegment(nil, seg), To: appendSegment(nil, seg+1)})
		}
	}
	keep := func(k []byte) bool {
		if len(k) < segPrefixLen+sessionSuffixLen {
			return false
		}
		end := int64(binary.BigEndian.Uint64(k[len(k)-sessionSuffixLen:]))
		return end >= lo && end <= hi
	}
	return s.iter(ranges, keep, false)
}

func (s *sessionStore[K, V]) iter(ranges []KeyRange, keep func([]byte) bool, backward bool) (SessionIterator[K, V], error) {
	it := &sessionIter[K, V]{s: s, it: &segIter{b: s.b, ranges: ranges, keep: keep}}
	if backward {
		return it.reversed()
	}
	return it, nil
}

type sessionEntry[K, V any] struct {
	k          K
	start, end int64
	v          V
}

// sessionIter decodes a segIter's entries; with rev set, it hands out the
// entries read forward beforehand (the backends iterate forward only).
type sessionIter[K, V any] struct {
	s   *sessionStore[K, V]
	it  Iterator
	cur sessionEntry[K, V]
	rev []sessionEntry[K, V]
	err error
}

// reversed reads it to its end and returns an iterator over what it read,
// backward.
func (it *sessionIter[K, V]) reversed() (SessionIterator[K, V], error) {
	var all []sessionEntry[K, V]
	for it.Next() {
		all = append(all, it.cur)
	}
	if err := errors.Join(it.Err(), it.Close()); err != nil {
		return nil, err
	}
	slices.Reverse(all)
	return &sessionIter[K, V]{s: it.s, rev: all}, nil
}

func (it *sessionIter[K, V]) Next() bool {
	it.cur = sessionEntry[K, V]{}
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
	key, err := it.s.ks.Deserialize(bytes.Clone(k[segPrefixLen : len(k)-sessionSuffixLen]))
	if err != nil {
		it.err = it.s.errorf("iterate", fmt.Errorf("deserialize key: %w", err))
		return false
	}
	// A stored value is never a null, even an empty one that an
	// iterator hands over as nil.
	v, err := it.s.vs.Deserialize(append([]byte{}, vb...))
	if err != nil {
		it.err = it.s.errorf("iterate", fmt.Errorf("deserialize value: %w", err))
		return false
	}
	it.cur = sessionEntry[K, V]{
		k:     key,
		end:   int64(binary.BigEndian.Uint64(k[len(k)-sessionSuffixLen:])),
		start: int64(binary.BigEndian.Uint64(k[len(k)-8:])),
		v:     v,
	}
	return true
}

func (it *sessionIter[K, V]) Key() K       { return it.cur.k }
func (it *sessionIter[K, V]) Start() int64 { return it.cur.start }
func (it *sessionIter[K, V]) End() int64   { return it.cur.end }
func (it *sessionIter[K, V]) Value() V     { return it.cur.v }

func (it *sessionIter[K, V]) Err() error {
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

func (it *sessionIter[K, V]) Close() error {
	it.rev = nil
	if it.it != nil {
		if err := it.it.Close(); err != nil {
			return it.s.errorf("close iterator", err)
		}
	}
	return nil
}
