package state

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/kgen-dev/kgen/runtime/serde"
)

// Put's answers that are not a validTo time, as Kafka Streams'
// VersionedKeyValueStore.
const (
	// PutValidToUndefined is what Put returns for a record that became the
	// key's latest version: valid until further notice. A VersionedRecord's
	// ValidTo is the same for the latest version.
	PutValidToUndefined int64 = -1
	// PutNotPut is what Put returns for a record older than the store's
	// history retention: it was neither stored nor logged.
	PutNotPut int64 = math.MinInt64
)

// DefaultVersionedChangelogCompactionLag is how much longer than its history
// retention a versioned store's changelog keeps every record of a key
// before compaction may drop all but the last (Kafka Streams adds one day
// to a versioned changelog's min.compaction.lag.ms).
const DefaultVersionedChangelogCompactionLag = 24 * time.Hour

// VersionedRecord is one version of a key's value: the value, the time it
// became valid (Timestamp, the time of the record that put it) and the time
// it stopped being valid (ValidTo, exclusive: the next version's
// timestamp), PutValidToUndefined for the latest version.
type VersionedRecord[V any] struct {
	Value     V
	Timestamp int64
	ValidTo   int64
}

// VersionedKeyValueStore is a typed key-value store that keeps, besides
// each key's latest value, the values it had over the last history
// retention, as Kafka Streams' VersionedKeyValueStore (KIP-889). Time is
// the store's observed time: the largest timestamp it was given. A write
// older than the observed time minus the history retention is refused;
// a read as of such a time sees only the latest version, if it was
// already valid then. A key's latest version is kept forever.
type VersionedKeyValueStore[K, V any] interface {
	// Name is the store's name, as in the topology.
	Name() string
	// Put stores value as key's version from timestamp on, replacing a
	// version of the same timestamp. It returns PutValidToUndefined when
	// the record is now the latest version, the record's validTo (the next
	// version's timestamp) when it went into the history, and PutNotPut
	// when it is older than the history retention (nothing stored or
	// logged). A value that serializes to nil is a tombstone: from
	// timestamp on, the key has no value. A null key is an error.
	Put(key K, value V, timestamp int64) (int64, error)
	// Delete puts a tombstone at timestamp, and returns the version that
	// was valid at timestamp before (ok false: none, or too old: then
	// nothing is done).
	Delete(key K, timestamp int64) (VersionedRecord[V], bool, error)
	// Get returns key's latest version, unless it is a tombstone.
	Get(key K) (VersionedRecord[V], bool, error)
	// GetAsOf returns the version of key valid at asOf: the one of the
	// largest timestamp not after asOf, unless it is a tombstone. For asOf
	// older than the history retention, only the latest version can be
	// returned (if its timestamp is not after asOf).
	GetAsOf(key K, asOf int64) (VersionedRecord[V], bool, error)
	// HistoryRetention is how long the store keeps versions that are no
	// longer the latest, measured in observed time.
	HistoryRetention() time.Duration
	// ObservedTime is the largest timestamp the store accepted (by Put,
	// Delete or restoration), math.MinInt64 when none.
	ObservedTime() (int64, error)
}

// The backend of a versioned store holds one entry per version, keyed so
// that a key's versions are together and ordered by the time they stop
// being valid:
//
//	0x00 ‖ len(serialized key) (4 bytes) ‖ serialized key ‖ validTo (8 bytes)
//
// with the latest version's validTo the largest int64, and times stored
// with their sign bit flipped so that big-endian bytes order as the
// numbers do. The value is validFrom (8 bytes, likewise) ‖ 1 ‖ serialized
// value, or validFrom ‖ 0 for a tombstone (kept so that an older write
// that lands before it learns where it ends). The version valid at t is
// the first entry with validTo > t, if its validFrom <= t: one seek, so
// Get, GetAsOf and Put cost O(log n) in both backends, which iterate
// forward only. One more key, 0xff "vobserved", keeps the observed time.
//
// History expires by a sweep (one more key, 0xff "vsweep", its cursor):
// every few puts, it looks at the next versions of any key and deletes
// those that ended at or before observed time - history retention, and
// latest tombstones from then. Expired versions are never read anyway: a
// read of a time that old sees only the latest version, and a put that
// old is refused.

const (
	versionPrefix  = 0x00
	versionMeta    = 0xff
	versionSuffix  = 8
	versionTombVal = 0
	versionLiveVal = 1
)

var (
	versionedObservedKey = []byte{versionMeta, 'v', 'o', 'b', 's', 'e', 'r', 'v', 'e', 'd'}
	// versionedSweepKey holds the backend key the expiry sweep goes on
	// from.
	versionedSweepKey = []byte{versionMeta, 'v', 's', 'w', 'e', 'e', 'p'}
)

// The expiry sweep runs every sweepEvery puts and looks at sweepEvery *
// sweepPerPut stored versions: it passes over the whole store faster than
// puts can add expired versions (at most one per put), so those stay a
// bounded share of it, and a put pays for a range iterator (a snapshot,
// for the in-memory backend) only now and then.
const (
	sweepEvery  = 16
	sweepPerPut = 4
)

// VersionedKind returns the kind of versioned stores keeping history for
// historyRetention: a compacted changelog whose records are the puts, in
// order, each with its version's timestamp as the record's (so the topic
// keeps the producer's), with min.compaction.lag.ms of the history
// retention plus DefaultVersionedChangelogCompactionLag so compaction keeps
// the history, restored by replaying the puts. A versioned store logs its
// own writes (LogsItself): one put makes several backend writes.
func VersionedKind(historyRetention time.Duration) *StoreKind {
	r := historyRetention.Milliseconds()
	return &StoreKind{
		Name: "versioned-key-value",
		Changelog: func(time.Duration, time.Duration) ChangelogTopic {
			return ChangelogTopic{RecordTimes: true, MinCompactionLag: historyRetention + DefaultVersionedChangelogCompactionLag}
		},
		Restore: func(b Backend, changes []Change) error {
			v := versioned{b: b, retention: r}
			for _, c := range changes {
				if c.Key == nil {
					return fmt.Errorf("versioned changelog record with a null key: %w", ErrCorrupt)
				}
				if _, err := v.put(c.Key, c.Value, c.Timestamp); err != nil {
					return err
				}
			}
			return v.sweep(len(changes) * sweepPerPut)
		},
		ToChangelog: func(Change) (Change, bool) { return Change{}, false },
		LogsItself:  true,
	}
}

// versioned is a versioned store over bytes: the typed store's and
// restoration's common part.
type versioned struct {
	b         Backend
	retention int64 // milliseconds
}

// encTime encodes t so that the bytes order as the numbers.
func encTime(dst []byte, t int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(t)^(1<<63))
}

func decTime(b []byte) int64 { return int64(binary.BigEndian.Uint64(b) ^ (1 << 63)) }

func versionKeyPrefix(kb []byte) []byte {
	p := make([]byte, 0, 5+len(kb)+versionSuffix)
	p = append(p, versionPrefix)
	p = binary.BigEndian.AppendUint32(p, uint32(len(kb)))
	return append(p, kb...)
}

func versionKey(prefix []byte, validTo int64) []byte {
	return encTime(bytes.Clone(prefix), validTo)
}

// version is one stored version.
type version struct {
	key       []byte // backend key
	validFrom int64
	validTo   int64
	value     []byte // nil: tombstone
}

// minLive is the oldest time a write may have, and a read as of which
// still sees the history: observed - retention.
func (v *versioned) minLive(observed int64) int64 {
	if observed == math.MinInt64 {
		return math.MinInt64
	}
	if observed < math.MinInt64+v.retention {
		return math.MinInt64
	}
	return observed - v.retention
}

func (v *versioned) observed() (int64, error) {
	b, ok, err := v.b.Get(versionedObservedKey)
	if err != nil || !ok {
		return math.MinInt64, err
	}
	if len(b) != 8 {
		return 0, fmt.Errorf("observed time of %d bytes, want 8: %w", len(b), ErrCorrupt)
	}
	return decTime(b), nil
}

// first returns the first version of the key (prefix) whose validTo is
// after t: the one valid at t if any is.
func (v *versioned) first(prefix []byte, t int64) (version, bool, error) {
	from := versionKey(prefix, t)
	if t < math.MaxInt64 {
		from = versionKey(prefix, t+1)
	}
	it, err := v.b.Range(from, append(bytes.Clone(prefix), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff))
	if err != nil {
		return version{}, false, err
	}
	defer it.Close()
	if !it.Next() {
		return version{}, false, it.Err()
	}
	ver, err := decodeVersion(it.Key(), it.Value())
	return ver, err == nil, err
}

func decodeVersion(key, val []byte) (version, error) {
	if len(key) < versionSuffix || len(val) < 9 {
		return version{}, fmt.Errorf("versioned entry of %d/%d bytes: %w", len(key), len(val), ErrCorrupt)
	}
	ver := version{key: bytes.Clone(key), validTo: decTime(key[len(key)-versionSuffix:]), validFrom: decTime(val)}
	if val[8] == versionLiveVal {
		ver.value = bytes.Clone(val[9:])
	}
	return ver, nil
}

func encodeVersion(validFrom int64, value []byte) []byte {
	out := encTime(make([]byte, 0, 9+len(value)), validFrom)
	if value == nil {
		return append(out, versionTombVal)
	}
	out = append(out, versionLiveVal)
	return append(out, value...)
}

// get is GetAsOf over bytes; latest asks for the latest version.
func (v *versioned) get(kb []byte, asOf int64, latest bool) (version, bool, error) {
	prefix := versionKeyPrefix(kb)
	if !latest {
		observed, err := v.observed()
		if err != nil {
			return version{}, false, err
		}
		if asOf < v.minLive(observed) {
			// Past the history: only the latest version, which never
			// expires, may answer.
			ver, ok, err := v.first(prefix, math.MaxInt64)
			if err != nil || !ok || ver.value == nil || ver.validFrom > asOf {
				return version{}, false, err
			}
			return ver, true, nil
		}
	} else {
		asOf = math.MaxInt64
	}
	ver, ok, err := v.first(prefix, asOf)
	if err != nil || !ok || ver.value == nil || ver.validFrom > asOf {
		return version{}, false, err
	}
	return ver, true, nil
}

// put stores value (nil: a tombstone) as kb's version from ts, and returns
// its validTo (PutValidToUndefined, PutNotPut).
func (v *versioned) put(kb, value []byte, ts int64) (int64, error) {
	observed, err := v.observed()
	if err != nil {
		return 0, err
	}
	// As Kafka Streams, the check comes before the time advances.
	if ts < v.minLive(observed) {
		return PutNotPut, nil
	}
	if ts > observed {
		observed = ts
		if err := v.b.Put(versionedObservedKey, encTime(nil, ts)); err != nil {
			return 0, err
		}
	}
	prefix := versionKeyPrefix(kb)
	e, ok, err := v.first(prefix, ts)
	if err != nil {
		return 0, err
	}
	validTo := int64(PutValidToUndefined)
	switch {
	case !ok: // the key has no version valid at or after ts: ts is the latest
		err = v.b.Put(versionKey(prefix, math.MaxInt64), encodeVersion(ts, value))
	case e.validFrom == ts: // replaces the version of ts
		validTo = e.validTo
		err = v.b.Put(e.key, encodeVersion(ts, value))
	case e.validFrom < ts: // splits e: e ends at ts, the new version takes its end
		validTo = e.validTo
		if err = v.b.Put(versionKey(prefix, ts), encodeVersion(e.validFrom, e.value)); err == nil {
			err = v.b.Put(e.key, encodeVersion(ts, value))
		}
	default: // before e, the key's oldest kept version: ends where e starts
		validTo = e.validFrom
		err = v.b.Put(versionKey(prefix, e.validFrom), encodeVersion(ts, value))
	}
	if err != nil {
		return 0, err
	}
	if validTo == math.MaxInt64 {
		validTo = PutValidToUndefined
	}
	return validTo, nil
}

// sweep looks at the next budget stored versions after the sweep's
// cursor, of any key, and deletes those that ended at or before the
// observed time minus the history retention, and latest tombstones from
// then: no read can see them. The cursor wraps around at the end of the
// versions.
func (v *versioned) sweep(budget int) error {
	observed, err := v.observed()
	if err != nil {
		return err
	}
	minLive := v.minLive(observed)
	if minLive == math.MinInt64 {
		return nil
	}
	from, _, err := v.b.Get(versionedSweepKey)
	if err != nil {
		return err
	}
	if len(from) == 0 {
		from = []byte{versionPrefix}
	}
	it, err := v.b.Range(from, []byte{versionPrefix + 1})
	if err != nil {
		return err
	}
	var dead [][]byte
	next := []byte{versionPrefix} // wraps around unless the budget ends first
	for n := 0; it.Next(); n++ {
		if n == budget {
			next = bytes.Clone(it.Key())
			break
		}
		ver, err := decodeVersion(it.Key(), it.Value())
		if err != nil {
			it.Close()
			return err
		}
		if ver.validTo <= minLive || (ver.validTo == math.MaxInt64 && ver.value == nil && ver.validFrom <= minLive) {
			dead = append(dead, ver.key)
		}
	}
	if err := errors.Join(it.Err(), it.Close()); err != nil {
		return err
	}
	for _, k := range dead {
		if err := v.b.Delete(k); err != nil {
			return err
		}
	}
	return v.b.Put(versionedSweepKey, next)
}

// NewVersionedKeyValueStore types a backend as a versioned key-value store
// keeping history for historyRetention (at least 1 ms); logger may be nil
// (not logged). Each accepted write is logged as Kafka Streams logs it: the
// serialized key, the serialized value (nil for a tombstone) and the
// version's timestamp as the record's. Its kind is
// VersionedKind(historyRetention).
func NewVersionedKeyValueStore[K, V any](name string, b Backend, ks serde.Serde[K], vs serde.Serde[V], historyRetention time.Duration, logger ChangeLogger) VersionedKeyValueStore[K, V] {
	return &versionedStore[K, V]{
		name: name, v: versioned{b: b, retention: max(historyRetention.Milliseconds(), 1)},
		hr: historyRetention, ks: ks, vs: vs, logger: logger,
	}
}

type versionedStore[K, V any] struct {
	name   string
	v      versioned
	hr     time.Duration
	ks     serde.Serde[K]
	vs     serde.Serde[V]
	logger ChangeLogger
	puts   int // since the last sweep
}

func (s *versionedStore[K, V]) Name() string                    { return s.name }
func (s *versionedStore[K, V]) HistoryRetention() time.Duration { return s.hr }

func (s *versionedStore[K, V]) errorf(op string, err error) error {
	return fmt.Errorf("store %q: %s: %w", s.name, op, err)
}

// errNullKey is returned, wrapped, for a key that serializes to nil.
var errNullKey = errors.New("null key")

func (s *versionedStore[K, V]) key(op string, key K) ([]byte, error) {
	kb, err := s.ks.Serialize(key)
	if err != nil {
		return nil, s.errorf(op, fmt.Errorf("serialize key: %w", err))
	}
	if kb == nil {
		return nil, s.errorf(op, errNullKey)
	}
	return kb, nil
}

func (s *versionedStore[K, V]) ObservedTime() (int64, error) {
	t, err := s.v.observed()
	if err != nil {
		return 0, s.errorf("observed time", err)
	}
	return t, nil
}

func (s *versionedStore[K, V]) Put(key K, value V, timestamp int64) (int64, error) {
	kb, err := s.key("put", key)
	if err != nil {
		return 0, err
	}
	vb, err := s.vs.Serialize(value)
	if err != nil {
		return 0, s.errorf("put", fmt.Errorf("serialize value: %w", err))
	}
	return s.put(kb, vb, timestamp)
}

func (s *versionedStore[K, V]) put(kb, vb []byte, timestamp int64) (int64, error) {
	validTo, err := s.v.put(kb, vb, timestamp)
	if err != nil {
		return 0, s.errorf("put", err)
	}
	if s.puts++; s.puts == sweepEvery {
		s.puts = 0
		if err := s.v.sweep(sweepEvery * sweepPerPut); err != nil {
			return 0, s.errorf("expire", err)
		}
	}
	if validTo != PutNotPut && s.logger != nil {
		s.logger.LogChange(kb, vb, timestamp)
	}
	return validTo, nil
}

func (s *versionedStore[K, V]) Delete(key K, timestamp int64) (VersionedRecord[V], bool, error) {
	kb, err := s.key("delete", key)
	if err != nil {
		return VersionedRecord[V]{}, false, err
	}
	observed, err := s.v.observed()
	if err != nil {
		return VersionedRecord[V]{}, false, s.errorf("delete", err)
	}
	if timestamp < s.v.minLive(observed) {
		return VersionedRecord[V]{}, false, nil // too old: nothing done, as Kafka Streams
	}
	old, ok, err := s.getAsOf("delete", kb, timestamp, false)
	if err != nil {
		return VersionedRecord[V]{}, false, err
	}
	if _, err := s.put(kb, nil, timestamp); err != nil {
		return VersionedRecord[V]{}, false, err
	}
	return old, ok, nil
}

func (s *versionedStore[K, V]) Get(key K) (VersionedRecord[V], bool, error) {
	kb, err := s.key("get", key)
	if err != nil {
		return VersionedRecord[V]{}, false, err
	}
	return s.getAsOf("get", kb, 0, true)
}

func (s *versionedStore[K, V]) GetAsOf(key K, asOf int64) (VersionedRecord[V], bool, error) {
	kb, err := s.key("get as of", key)
	if err != nil {
		return VersionedRecord[V]{}, false, err
	}
	return s.getAsOf("get as of", kb, asOf, false)
}

func (s *versionedStore[K, V]) getAsOf(op string, kb []byte, asOf int64, latest bool) (VersionedRecord[V], bool, error) {
	ver, ok, err := s.v.get(kb, asOf, latest)
	if err != nil {
		return VersionedRecord[V]{}, false, s.errorf(op, err)
	}
	if !ok {
		return VersionedRecord[V]{}, false, nil
	}
	val, err := s.vs.Deserialize(ver.value)
	if err != nil {
		return VersionedRecord[V]{}, false, s.errorf(op, fmt.Errorf("deserialize value: %w", err))
	}
	r := VersionedRecord[V]{Value: val, Timestamp: ver.validFrom, ValidTo: ver.validTo}
	if r.ValidTo == math.MaxInt64 {
		r.ValidTo = PutValidToUndefined
	}
	return r, true, nil
}
