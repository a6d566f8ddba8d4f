package state

import (
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
	// All iterates every session, by segment (a span of ends), then
	// serialized key, then end, then start.
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
// for a removal). Its kind is SessionKind(retention).
func NewSessionStore[K, V any](name string, b Backend, ks serde.Serde[K], vs serde.Serde[V], retention time.Duration, logger ChangeLogger) SessionStore[K, V] {
	panic("not yet")
}

// SessionKind is the kind of session stores keeping sessions for
// retention: a changelog kept compact,delete for the retention plus the
// margin, restored into the store's segments.
func SessionKind(retention time.Duration) *StoreKind {
	panic("not yet")
}
