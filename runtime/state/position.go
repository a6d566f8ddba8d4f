package state

import "errors"

// ErrCorrupt is returned, wrapped, by an Opener whose store's files are
// damaged or unreadable. The runtime then logs a warning, removes the store's
// directory and rebuilds the store from its changelog: a logged store loses
// nothing that way, since the changelog holds every committed write.
//
// Damage that opening a store does not read (the middle of a large file) is
// found by the read that meets it: a backend that can tell wraps ErrCorrupt
// in that read's error too (Get, Range, an Iterator's Err). Errors that say
// nothing about the files, such as a permission denied or a lock held by
// another process, never wrap it: wiping such a store could destroy a live
// one.
var ErrCorrupt = errors.New("store is corrupt")

// Positioned is a persistent Backend that keeps its changelog position (the
// next changelog offset to restore from) inside itself, written atomically
// with the data it covers, as Kafka Streams does since KIP-1035. A store
// that lost data (its directory deleted, its log truncated) has then lost
// its position with it, and is restored from the changelog instead of being
// trusted because a separate file says it is complete.
//
// The position is not one of the store's keys: Range, Get and
// ApproximateCount never see it.
//
// What survives a crash is, for the position and the data together, the
// state after some prefix of the writes that includes every write before
// the surviving position: never a position ahead of its data. A store
// without a position (new, its files lost, or written before positions were
// kept) is restored from the changelog's start, after removing what it
// holds.
type Positioned interface {
	Backend
	// Position returns the position recorded by the last SetPosition that
	// survived. ok is false for a new store, or one that lost its position.
	Position() (offset int64, ok bool, err error)
	// SetPosition records offset as the position of every write made before
	// it. It is durable, together with those writes, after the next Flush:
	// a crash before that keeps an older position with the data it covered
	// (or newer data with an older position, which replaying the changelog
	// from that position makes right again).
	SetPosition(offset int64) error
}
