package stream

import (
	"sync"

	"github.com/kgen-dev/kgen/runtime/state"
)

// restoreBuf holds a store's changelog records read but not applied yet:
// their keys and values copied out of the fetches into blocks of bytes,
// each record an offset into them. Nothing in it holds a pointer the
// garbage collector has to follow; a chunk kept as changes pointing into
// the fetched records had every collection trace two pointers per record
// read so far (a collection runs each time the heap doubles, and a
// restore's heap grows by the chunks it holds), and it kept the fetches
// whole (each record's header and offsets too) until applied.
type restoreBuf struct {
	recs   []bufRec
	blocks [][]byte // the last one is being filled
}

// bufRec is one record of a restoreBuf: its key, then its value, at off
// in a block; a length of -1 is a nil key or value (a tombstone).
type bufRec struct {
	block, off int32
	klen, vlen int32
	ts         int64
}

// restoreBlockBytes is the largest block a restoreBuf allocates for
// records smaller than it; a store that reads a little at a time (a
// standby caught up) gets blocks the size of its fetches.
const restoreBlockBytes = 1 << 20

// add copies one record in; fetched is the bytes of the fetch it comes
// from, which sizes a new block.
func (b *restoreBuf) add(key, value []byte, ts int64, fetched int) {
	n := len(key) + len(value)
	last := len(b.blocks) - 1
	if last < 0 || cap(b.blocks[last])-len(b.blocks[last]) < n {
		b.blocks = append(b.blocks, newBlock(max(n, min(fetched, restoreBlockBytes))))
		last++
	}
	blk := b.blocks[last]
	r := bufRec{block: int32(last), off: int32(len(blk)), klen: int32(len(key)), vlen: int32(len(value)), ts: ts}
	if key == nil {
		r.klen = -1
	}
	if value == nil {
		r.vlen = -1
	}
	blk = append(blk, key...)
	b.blocks[last] = append(blk, value...)
	b.recs = append(b.recs, r)
}

// changes returns the records as changes whose keys and values point into
// the blocks (capped: appending to one cannot reach the next).
// Give them back with releaseChanges once applied.
func (b *restoreBuf) changes() []state.Change {
	out := takeChanges(len(b.recs))
	for i, r := range b.recs {
		blk, off := b.blocks[r.block], int(r.off)
		// Every field written: a nil key or value must be nil whatever
		// the (pooled) slice held.
		var key, value []byte
		if r.klen >= 0 {
			end := off + int(r.klen)
			key = blk[off:end:end]
			off = end
		}
		if r.vlen >= 0 {
			end := off + int(r.vlen)
			value = blk[off:end:end]
		}
		out[i] = state.Change{Key: key, Value: value, Timestamp: r.ts}
	}
	return out
}

// A restore's chunks are its biggest allocations after franz-go's records
// (per window entry, 28 bytes of blocks, 24 of records and 56 of changes),
// and garbage once applied: allocated afresh, they made the collector run
// a third more often during a restore, and each collection scans the
// fetched records held (pointers). Applied chunks give them back here for
// the next ones. A pool empties itself after two collections unused.
var (
	blockPool   sync.Pool // *[]byte of capacity restoreBlockBytes
	recsPool    sync.Pool // *[]bufRec
	changesPool sync.Pool // *[]state.Change, cleared
)

// newBlock returns an empty block of capacity size, a pooled one when size
// is restoreBlockBytes.
func newBlock(size int) []byte {
	if size == restoreBlockBytes {
		if p, ok := blockPool.Get().(*[]byte); ok {
			return (*p)[:0]
		}
	}
	return make([]byte, 0, size)
}

// takeRecs returns an empty slice of records of capacity n or more, a
// pooled one when one is large enough.
func takeRecs(n int) []bufRec {
	if p, ok := recsPool.Get().(*[]bufRec); ok && cap(*p) >= n {
		return (*p)[:0]
	}
	return make([]bufRec, 0, n)
}

// takeChanges returns n zero changes.
func takeChanges(n int) []state.Change {
	if p, ok := changesPool.Get().(*[]state.Change); ok && cap(*p) >= n {
		return (*p)[:n]
	}
	return make([]state.Change, n)
}

// releaseChanges gives changes back, cleared to their capacity so that the
// pool keeps nothing alive: a kind's Restore may append to them in place
// (a window store's sequence number).
func releaseChanges(c []state.Change) {
	c = c[:0]
	clear(c[:cap(c)])
	changesPool.Put(&c)
}

// releaseBlocks gives b's full-sized blocks back; b's changes must be
// applied, and nothing may read its records' bytes any more.
func (b *restoreBuf) releaseBlocks() {
	for i, blk := range b.blocks {
		if cap(blk) == restoreBlockBytes {
			blk = blk[:0]
			blockPool.Put(&blk)
		}
		b.blocks[i] = nil
	}
	b.blocks = nil
}

// releaseRecs gives b's records back.
func (b *restoreBuf) releaseRecs() {
	if r := b.recs[:0]; cap(r) > 0 {
		recsPool.Put(&r)
	}
	b.recs = nil
}
