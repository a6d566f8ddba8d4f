package stream

import "github.com/kgen-dev/kgen/runtime/state"

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
		b.blocks = append(b.blocks, make([]byte, 0, max(n, min(fetched, restoreBlockBytes))))
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
func (b *restoreBuf) changes() []state.Change {
	out := make([]state.Change, len(b.recs))
	for i, r := range b.recs {
		blk, off := b.blocks[r.block], int(r.off)
		c := &out[i]
		c.Timestamp = r.ts
		if r.klen >= 0 {
			end := off + int(r.klen)
			c.Key = blk[off:end:end]
			off = end
		}
		if r.vlen >= 0 {
			end := off + int(r.vlen)
			c.Value = blk[off:end:end]
		}
	}
	return out
}
