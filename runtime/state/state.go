// Package state owns the local state of a kgen task: typed key-value stores
// over an ordered byte backend (in memory here; on disk through an Opener,
// such as the one of package runtime/state/pebblestore), the kinds of stores
// (StoreKind: what each kind's changelog topic needs and how it is
// restored), the logging of every write to a changelog with the time of the
// record that caused it, the bulk application of changelog records when a
// store is restored, and the task directory helpers (an exclusive lock and
// the checkpoint file of restored offsets).
//
// # Concurrency
//
// A store and its backend belong to one task, and a task is processed by one
// goroutine at a time: nothing in this package is safe for concurrent use
// unless its documentation says so. Moving a task from one goroutine to
// another with a happens-before edge (a channel send, a mutex) is fine.
//
// # Iterators
//
// An iterator sees the store as it was when the iterator was created: writes
// made while it is open are not seen by it, and are safe. Every iterator must
// be closed; a backend closed with iterators still open reports it.
//
// # Durability
//
// The changelog, not the backend, is what survives a crash between commits.
// Writes to a backend may therefore be buffered; Flush makes every write so
// far durable, and only after Flush may the runtime write a checkpoint that
// claims the store holds everything up to the checkpointed offsets.
package state

import (
	"bytes"
	"errors"
)

// ErrClosed is returned, wrapped, by any operation on a closed backend.
var ErrClosed = errors.New("store is closed")

// Backend is an ordered byte-level key-value store owned by one task.
//
// Keys are compared as byte strings. A Put copies key and value: the caller
// may reuse them once Put returns. Implementations: NewMemory, and
// pebblestore.Open in package runtime/state/pebblestore.
type Backend interface {
	// Get returns the value stored under key. The value is the caller's to
	// keep and to modify. A missing key is (nil, false, nil).
	Get(key []byte) (value []byte, ok bool, err error)
	// Put stores value under key, replacing any previous value. A nil value
	// is stored as an empty value; use Delete to remove a key.
	Put(key, value []byte) error
	// Delete removes key; deleting a missing key is not an error.
	Delete(key []byte) error
	// Range iterates keys in [from, to) in byte order; nil from/to = unbounded.
	// The iterator sees the backend as it was when Range was called.
	Range(from, to []byte) (Iterator, error)
	// ApproximateCount estimates the number of keys. The in-memory backend
	// counts exactly; a persistent one may estimate (Pebble does, from table
	// statistics).
	ApproximateCount() (int64, error)
	// Flush makes every write so far durable (no-op in memory).
	Flush() error
	// Close releases the backend. Iterators still open are closed and
	// reported as an error. Close does not Flush.
	Close() error
}

// Opener opens, creating it if needed, a persistent backend keeping its data
// in dir, a directory of its own (the runtime passes <task dir>/<store>; the
// task directory itself is locked by LockDir). What is in dir must survive
// Close: the runtime trusts a persistent store to hold every write made
// before its last Flush. Package runtime/state/pebblestore provides one.
// Keeping the disk backends out of this package keeps them, and what they
// import, out of programs that do not use them.
type Opener func(dir string) (Backend, error)

// Iterator walks a range of a Backend in key order. Call Next before the
// first Key. Key and Value are valid only until the next call to Next or
// Close and must not be modified; copy them to keep them. After Next returns
// false, Err tells whether the walk ended early because of an error.
type Iterator interface {
	Next() bool
	Key() []byte
	Value() []byte
	Err() error
	Close() error
}

// ChangeLogger receives every write of a logged store; value nil means delete.
// The runtime implements it by producing to the store's changelog topic.
//
// LogChange may keep key and value: the store does not modify them after the
// call.
type ChangeLogger interface {
	// LogChange logs one write. timestamp, in milliseconds since the epoch,
	// becomes the changelog record's timestamp: the time of the record that
	// caused the write (RecordTime, for stores whose operations take no
	// time, such as key-value stores), or the time a kind's write carries
	// (a versioned store's validity start). NoTimestamp leaves it to the
	// producer (the wall clock).
	LogChange(key, value []byte, timestamp int64)
	RecordClock
}

// RecordClock tells the time of the record being processed: the input
// record's timestamp, or the punctuation's time while a punctuation runs, as
// Kafka Streams' record context. It is NoTimestamp while nothing is being
// processed (a processor's Init).
type RecordClock interface {
	RecordTime() int64
}

// NoTimestamp is the timestamp of a write made while no record is being
// processed; its changelog record takes the producer's wall clock.
const NoTimestamp int64 = -1

// Restorer applies changelog records in bulk; the in-memory and Pebble
// backends implement it.
// The runtime calls it while restoring a store, and the writes are not logged.
type Restorer interface {
	// ApplyBatch applies changes in order, in as few writes as the backend
	// allows (one atomic write for memory; Pebble splits large batches so a
	// full disk is met between them, and ingests a batch of 1 MiB or more as
	// sorted tables). The runtime records a position after the batch, so a
	// crash that kept part of it is replayed from before it. It does not
	// keep the slices of changes.
	ApplyBatch(changes []Change) error
}

// Change is one changelog record: Value nil means delete. Timestamp is the
// record's timestamp (milliseconds since the epoch, NoTimestamp for none):
// what a write was logged with, and what restoration hands back, so that a
// kind that keeps times (a versioned store's validity) restores them. The
// changelog's format is otherwise a kind's own: a key-value store's record
// is its key and value, as in Kafka Streams.
type Change struct {
	Key, Value []byte
	Timestamp  int64
}

// RangeDeleter is a Backend that drops every key in [from, to) at once (nil
// from or to: unbounded), without reading them one by one: Pebble writes one
// range tombstone, the in-memory backend cuts them out of its tree. Both
// backends of the runtime implement it, and so does Cache, which holds the
// drop like its other writes until its owner takes it (Drops).
//
// A dropped range is never logged, key by key or otherwise: it is how a kind
// with a retention period (window and session stores, a segment at a time)
// forgets what expired, and its changelog, kept compact,delete for longer
// than the store's retention (StoreKind.Changelog), loses the same records by
// Kafka's own retention, as Kafka Streams' segmented stores rely on.
// Restoring such a changelog may bring expired records back for a while; the
// kind drops them again by its retention. Iterators opened before the drop
// do not see it.
type RangeDeleter interface {
	DeleteRange(from, to []byte) error
}

// KeyRange is the range of keys [From, To); nil From or To is unbounded.
type KeyRange struct {
	From, To []byte
}

// Contains says whether key is in r.
func (r KeyRange) Contains(key []byte) bool {
	return (r.From == nil || bytes.Compare(key, r.From) >= 0) && (r.To == nil || bytes.Compare(key, r.To) < 0)
}

// DeleteRanges drops every key of ranges from b: at once where b is a
// RangeDeleter, else by walking each range and deleting its keys.
func DeleteRanges(b Backend, ranges []KeyRange) error {
	for _, r := range ranges {
		if d, ok := b.(RangeDeleter); ok {
			if err := d.DeleteRange(r.From, r.To); err != nil {
				return err
			}
			continue
		}
		it, err := b.Range(r.From, r.To)
		if err != nil {
			return err
		}
		var keys [][]byte
		for it.Next() {
			keys = append(keys, bytes.Clone(it.Key()))
		}
		if err := errors.Join(it.Err(), it.Close()); err != nil {
			return err
		}
		for _, k := range keys {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
	}
	return nil
}
