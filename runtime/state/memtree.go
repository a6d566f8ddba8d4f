package state

import "bytes"

// memItem locates one entry of a memory store: its key and then its value,
// klen and vlen bytes at off in the slab of slot. It holds no pointer, so
// the GC neither scans a node's items nor runs write barriers when an
// insert moves half a node of them: with a pointer per item, marking a
// large store and the barriers on those moves took about a fifth of a
// global table's load while the heap grew.
type memItem struct{ slot, off, klen, vlen uint32 }

// memNode is a node of a memTree: items in key order and, in an inner
// node, one more child than items. Its arrays are allocated at their
// largest, once. A node is written in place only while its gen is its
// tree's: a clone since shares it, and the tree copies it first.
type memNode struct {
	items    []memItem
	children []*memNode // nil in a leaf
	gen      uint64
}

// memTree is a copy-on-write B-tree of memItems ordered by their keys,
// which it reads in slabs. Written by one goroutine; readers may share it
// while it is not written. A clone shares every node and, while nothing
// frees a slot it reads, the slab table.
type memTree struct {
	root   *memNode
	length int
	degree int
	// gen is the generation of the nodes the tree may write in place;
	// each clone moves the tree to a new one. Generations only grow
	// along a tree's life (and its clones never write), so no node of
	// another tree can bear the tree's.
	gen uint64
	// slabs are the store's buffers by slot, as of this tree: the store
	// appends to them and fills slots, and empties a slot only when no
	// clone can read it.
	slabs [][]byte
	// last is the leaf the last insert from the root reached, and lo and
	// hi the keys bounding it (nil: none), until the tree's shape changes
	// (a split, a delete, a clone). Keys arriving in ascending runs, as a
	// partition's often do, mostly land in that leaf: two comparisons
	// then find it instead of a search down from the root.
	last   *memNode
	lo, hi []byte
}

func newMemTree(degree int) *memTree {
	return &memTree{degree: degree}
}

func (t *memTree) maxItems() int { return 2*t.degree - 1 }
func (t *memTree) minItems() int { return t.degree - 1 }

// key returns an item's key, cut to its length.
func (t *memTree) key(it memItem) []byte {
	end := it.off + it.klen
	return t.slabs[it.slot][it.off:end:end]
}

// value returns an item's value, cut to its length.
func (t *memTree) value(it memItem) []byte {
	from := it.off + it.klen
	end := from + it.vlen
	return t.slabs[it.slot][from:end:end]
}

func (t *memTree) newNode(leaf bool) *memNode {
	n := &memNode{items: make([]memItem, 0, t.maxItems()), gen: t.gen}
	if !leaf {
		n.children = make([]*memNode, 0, t.maxItems()+1)
	}
	return n
}

// mutable returns n, or a copy of it owned by t when a clone shares it.
func (t *memTree) mutable(n *memNode) *memNode {
	if n.gen == t.gen {
		return n
	}
	c := t.newNode(n.children == nil)
	c.items = append(c.items, n.items...)
	c.children = append(c.children, n.children...)
	return c
}

// mutableChild returns n's child i, owned by t (n must be).
func (t *memTree) mutableChild(n *memNode, i int) *memNode {
	c := n.children[i]
	if c.gen != t.gen {
		c = t.mutable(c)
		n.children[i] = c
	}
	return c
}

// find returns the index of key in n's items, or of the first item after
// it and false.
func (t *memTree) find(n *memNode, key []byte) (int, bool) {
	items, slabs := n.items, t.slabs
	lo, hi := 0, len(items)
	for lo < hi {
		h := int(uint(lo+hi) >> 1)
		it := items[h]
		end := it.off + it.klen
		switch c := bytes.Compare(slabs[it.slot][it.off:end], key); {
		case c < 0:
			lo = h + 1
		case c > 0:
			hi = h
		default:
			return h, true
		}
	}
	return lo, false
}

func (t *memTree) get(key []byte) (memItem, bool) {
	n := t.root
	for n != nil {
		i, found := t.find(n, key)
		if found {
			return n.items[i], true
		}
		if n.children == nil {
			break
		}
		n = n.children[i]
	}
	return memItem{}, false
}

// set stores it, whose key is key, and returns the item it replaced.
func (t *memTree) set(key []byte, it memItem) (old memItem, replaced bool) {
	if t.root == nil {
		t.root = t.newNode(true)
		t.root.items = append(t.root.items, it)
		t.length++
		return memItem{}, false
	}
	if n := t.last; n != nil && len(n.items) < t.maxItems() &&
		(t.lo == nil || bytes.Compare(key, t.lo) > 0) && (t.hi == nil || bytes.Compare(key, t.hi) < 0) {
		i, found := t.find(n, key)
		if found {
			old, n.items[i] = n.items[i], it
			return old, true
		}
		n.items = insertItem(n.items, i, it)
		t.length++
		return memItem{}, false
	}
	t.root = t.mutable(t.root)
	if len(t.root.items) == t.maxItems() {
		top := t.newNode(false)
		top.children = append(top.children, t.root)
		t.splitChild(top, 0, t.root)
		t.root = top
	}
	// Down from the root, splitting each full child before entering it,
	// so that a split always has room for the median in its parent.
	var lo, hi []byte
	n := t.root
	for {
		i, found := t.find(n, key)
		if found {
			old, n.items[i] = n.items[i], it
			return old, true
		}
		if n.children == nil {
			n.items = insertItem(n.items, i, it)
			t.length++
			t.last, t.lo, t.hi = n, lo, hi
			return memItem{}, false
		}
		child := t.mutableChild(n, i)
		if len(child.items) == t.maxItems() {
			t.splitChild(n, i, child)
			switch c := bytes.Compare(key, t.key(n.items[i])); {
			case c == 0:
				old, n.items[i] = n.items[i], it
				return old, true
			case c > 0:
				i++
			}
			child = n.children[i]
		}
		if i > 0 {
			lo = t.key(n.items[i-1])
		}
		if i < len(n.items) {
			hi = t.key(n.items[i])
		}
		n = child
	}
}

// splitChild moves the upper half of n's full child i, which t owns, to a
// new child after it, and its median up into n.
func (t *memTree) splitChild(n *memNode, i int, child *memNode) {
	t.last = nil
	mid := t.degree - 1
	right := t.newNode(child.children == nil)
	right.items = append(right.items, child.items[mid+1:]...)
	median := child.items[mid]
	child.items = child.items[:mid]
	if child.children != nil {
		right.children = append(right.children, child.children[mid+1:]...)
		clear(child.children[mid+1:])
		child.children = child.children[:mid+1]
	}
	n.items = insertItem(n.items, i, median)
	n.children = insertChild(n.children, i+1, right)
}

// delete removes key and returns its item.
func (t *memTree) delete(key []byte) (old memItem, found bool) {
	if t.root == nil {
		return memItem{}, false
	}
	t.last = nil
	t.root = t.mutable(t.root)
	old, found = t.remove(t.root, key)
	if len(t.root.items) == 0 {
		if t.root.children == nil {
			t.root = nil
		} else {
			t.root = t.root.children[0]
		}
	}
	if found {
		t.length--
	}
	return old, found
}

// remove removes key below n, which t owns. Down from n, a child with the
// fewest items a node may hold first takes one from a sibling or merges
// with one, so that it can lose one.
func (t *memTree) remove(n *memNode, key []byte) (memItem, bool) {
	for {
		i, found := t.find(n, key)
		if n.children == nil {
			if !found {
				return memItem{}, false
			}
			old := n.items[i]
			n.items = removeItem(n.items, i)
			return old, true
		}
		if len(n.children[i].items) <= t.minItems() {
			t.grow(n, i)
			continue // items moved: look again
		}
		child := t.mutableChild(n, i)
		if found {
			old := n.items[i]
			n.items[i] = t.removeMax(child)
			return old, true
		}
		n = child
	}
}

// removeMax removes and returns the last item below n, which t owns.
func (t *memTree) removeMax(n *memNode) memItem {
	for {
		if n.children == nil {
			last := n.items[len(n.items)-1]
			n.items = n.items[:len(n.items)-1]
			return last
		}
		i := len(n.items)
		if len(n.children[i].items) <= t.minItems() {
			t.grow(n, i)
			continue
		}
		n = t.mutableChild(n, i)
	}
}

// grow gives n's child i, which holds the fewest items a node may, one
// more: from its left or right sibling when that has one to spare, else
// by merging it with a sibling and the item between them.
func (t *memTree) grow(n *memNode, i int) {
	switch {
	case i > 0 && len(n.children[i-1].items) > t.minItems():
		child, left := t.mutableChild(n, i), t.mutableChild(n, i-1)
		last := len(left.items) - 1
		child.items = insertItem(child.items, 0, n.items[i-1])
		n.items[i-1] = left.items[last]
		left.items = left.items[:last]
		if left.children != nil {
			lc := len(left.children) - 1
			child.children = insertChild(child.children, 0, left.children[lc])
			left.children[lc] = nil
			left.children = left.children[:lc]
		}
	case i < len(n.items) && len(n.children[i+1].items) > t.minItems():
		child, right := t.mutableChild(n, i), t.mutableChild(n, i+1)
		child.items = append(child.items, n.items[i])
		n.items[i] = right.items[0]
		right.items = removeItem(right.items, 0)
		if right.children != nil {
			child.children = append(child.children, right.children[0])
			right.children = removeChild(right.children, 0)
		}
	default:
		if i == len(n.items) {
			i--
		}
		child := t.mutableChild(n, i)
		right := n.children[i+1] // only read: it leaves the tree
		child.items = append(child.items, n.items[i])
		child.items = append(child.items, right.items...)
		child.children = append(child.children, right.children...)
		n.items = removeItem(n.items, i)
		n.children = removeChild(n.children, i+1)
	}
}

// clone returns a tree sharing t's nodes and slabs, for reading only: t
// moves to a new generation, so it copies a shared node before writing it.
func (t *memTree) clone() memTree {
	t.last = nil
	c := *t
	t.gen++
	return c
}

// Within the arrays' capacity, which the nodes allocate at their largest.
func insertItem(s []memItem, i int, it memItem) []memItem {
	s = s[:len(s)+1]
	copy(s[i+1:], s[i:])
	s[i] = it
	return s
}

func removeItem(s []memItem, i int) []memItem {
	copy(s[i:], s[i+1:])
	return s[:len(s)-1]
}

func insertChild(s []*memNode, i int, c *memNode) []*memNode {
	s = s[:len(s)+1]
	copy(s[i+1:], s[i:])
	s[i] = c
	return s
}

// removeChild also clears the freed place, so that it holds no node.
func removeChild(s []*memNode, i int) []*memNode {
	copy(s[i:], s[i+1:])
	s[len(s)-1] = nil
	return s[:len(s)-1]
}

// memCursor walks a tree in key order: the path from the root to the
// current item, each frame a node and an index in it. The top frame's item
// is the current one; in a frame below, the walk is inside child i and
// item i comes after it.
type memCursor struct {
	t     *memTree
	stack []memFrame
}

type memFrame struct {
	n *memNode
	i int
}

// seek moves to the first item at or after from (nil: the first one).
func (c *memCursor) seek(from []byte) {
	c.stack = c.stack[:0]
	for n := c.t.root; n != nil; {
		i, found := 0, false
		if from != nil {
			i, found = c.t.find(n, from)
		}
		c.stack = append(c.stack, memFrame{n, i})
		if found || n.children == nil {
			break
		}
		n = n.children[i]
	}
	c.settle()
}

// next moves past the current item.
func (c *memCursor) next() {
	top := &c.stack[len(c.stack)-1]
	top.i++
	for n := top.n; n.children != nil; {
		n = n.children[c.stack[len(c.stack)-1].i]
		c.stack = append(c.stack, memFrame{n, 0})
	}
	c.settle()
}

// settle climbs out of the nodes the walk has finished.
func (c *memCursor) settle() {
	for len(c.stack) > 0 {
		if top := c.stack[len(c.stack)-1]; top.i < len(top.n.items) {
			return
		}
		c.stack = c.stack[:len(c.stack)-1]
	}
}

func (c *memCursor) valid() bool { return len(c.stack) > 0 }

func (c *memCursor) item() memItem {
	top := c.stack[len(c.stack)-1]
	return top.n.items[top.i]
}
