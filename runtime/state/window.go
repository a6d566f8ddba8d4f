package state

import (
	"errors"
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
	// wraps ErrExpired.
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
	// then by serialized key, then by start.
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
// value = serialized value. Its kind is WindowKind(opt).
func NewWindowStore[K, V any](name string, b Backend, ks serde.Serde[K], vs serde.Serde[V], opt WindowStoreOptions, logger ChangeLogger) WindowStore[K, V] {
	panic("not yet")
}

// WindowKind is the kind of window stores made with opt: a changelog kept
// compact,delete for the retention plus the margin, restored into the
// store's segments, dropping what is already past retention.
func WindowKind(opt WindowStoreOptions) *StoreKind {
	panic("not yet")
}
