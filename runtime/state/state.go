// Package state owns the local state of a kgen task: typed key-value stores
// over an ordered byte backend (in memory here; on disk through an Opener,
// such as the one of package runtime/state/pebblestore), the logging of
// every write to a changelog, the bulk application of changelog records when
// a store is restored, and the task directory helpers (an exclusive lock and
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

import "errors"

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
	LogChange(key, value []byte)
}

// Restorer applies changelog records in bulk; the in-memory and Pebble
// backends implement it.
// The runtime calls it while restoring a store, and the writes are not logged.
type Restorer interface {
	// ApplyBatch applies changes in order, in as few writes as the backend
	// allows (one atomic write for memory; Pebble splits large batches so a
	// full disk is met between them). The runtime records a position after
	// the batch, so a crash that kept part of it is replayed from before
	// it. It does not keep the slices of changes.
	ApplyBatch(changes []Change) error
}

// Change is one changelog record: Value nil means delete.
type Change struct {
	Key, Value []byte
}
