package state

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// testTree is a memTree whose entries each get a slab of their own, and a
// model of what it holds.
type testTree struct {
	t     *memTree
	model map[string]string
}

func (tt *testTree) set(t *testing.T, k, v string) {
	t.Helper()
	tt.t.slabs = append(tt.t.slabs, []byte(k+v))
	it := memItem{slot: uint32(len(tt.t.slabs) - 1), klen: uint32(len(k)), vlen: uint32(len(v))}
	old, replaced := tt.t.set([]byte(k), it)
	prev, had := tt.model[k]
	if replaced != had || replaced && string(tt.t.value(old)) != prev {
		t.Fatalf("set %q: replaced %v (%q), the model had %v (%q)", k, replaced, tt.t.value(old), had, prev)
	}
	tt.model[k] = v
}

func (tt *testTree) delete(t *testing.T, k string) {
	t.Helper()
	old, found := tt.t.delete([]byte(k))
	prev, had := tt.model[k]
	if found != had || found && (string(tt.t.key(old)) != k || string(tt.t.value(old)) != prev) {
		t.Fatalf("delete %q: found %v (%q=%q), the model had %v (%q)", k, found, tt.t.key(old), tt.t.value(old), had, prev)
	}
	delete(tt.model, k)
}

// checkTree checks t's shape (every leaf at one depth, each node's items
// within its bounds and in order, arrays at their full capacity) and that
// it holds exactly model, read through get and through a cursor.
func checkTree(t *testing.T, tr *memTree, model map[string]string) {
	t.Helper()
	leafDepth, count := -1, 0
	var prev []byte
	var walk func(n *memNode, depth int, root bool)
	walk = func(n *memNode, depth int, root bool) {
		switch {
		case len(n.items) > tr.maxItems() || !root && len(n.items) < tr.minItems() || len(n.items) == 0:
			t.Fatalf("a node at depth %d holds %d items (degree %d)", depth, len(n.items), tr.degree)
		case cap(n.items) != tr.maxItems():
			t.Fatalf("a node's items have capacity %d", cap(n.items))
		case n.children != nil && (len(n.children) != len(n.items)+1 || cap(n.children) != tr.maxItems()+1):
			t.Fatalf("a node of %d items has %d children (capacity %d)", len(n.items), len(n.children), cap(n.children))
		}
		if n.children == nil {
			if leafDepth == -1 {
				leafDepth = depth
			} else if depth != leafDepth {
				t.Fatalf("leaves at depths %d and %d", leafDepth, depth)
			}
		}
		for i, it := range n.items {
			if n.children != nil {
				walk(n.children[i], depth+1, false)
			}
			k := tr.key(it)
			if prev != nil && bytes.Compare(prev, k) >= 0 {
				t.Fatalf("key %q after %q", k, prev)
			}
			prev = k
			count++
		}
		if n.children != nil {
			walk(n.children[len(n.items)], depth+1, false)
		}
	}
	if tr.root != nil {
		walk(tr.root, 0, true)
	}
	if count != len(model) || tr.length != len(model) {
		t.Fatalf("the tree holds %d items (length %d), the model %d", count, tr.length, len(model))
	}
	for k, v := range model {
		if it, ok := tr.get([]byte(k)); !ok || string(tr.value(it)) != v {
			t.Fatalf("get %q: %q, %v; want %q", k, tr.value(it), ok, v)
		}
	}
	want := slices.Sorted(maps.Keys(model))
	c := memCursor{t: tr}
	i := 0
	for c.seek(nil); c.valid(); c.next() {
		if i >= len(want) || string(tr.key(c.item())) != want[i] {
			t.Fatalf("the cursor's entry %d is %q", i, tr.key(c.item()))
		}
		i++
	}
	if i != len(want) {
		t.Fatalf("the cursor walked %d entries of %d", i, len(want))
	}
}

// TestMemTreeModel writes random keys and ascending runs to trees of
// several degrees, replacing and deleting many, against a map, checking the trees' shape
// and contents as they grow and shrink; clones taken along the way must
// keep what their tree held then, whatever it does afterwards.
func TestMemTreeModel(t *testing.T) {
	for _, degree := range []int{2, 3, 4, 16, 64} {
		for _, space := range []int{50, 5000} {
			t.Run(fmt.Sprintf("degree %d, %d keys", degree, space), func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(degree), uint64(space)))
				tt := &testTree{t: newMemTree(degree), model: map[string]string{}}
				type clone struct {
					t     memTree
					model map[string]string
				}
				var clones []clone
				ops := 40 * space
				run := 0 // half the keys continue an ascending run, as a partition's may
				for i := range ops {
					if r.IntN(2) == 0 {
						run = r.IntN(space)
					} else {
						run = (run + 1 + r.IntN(3)) % space
					}
					k := fmt.Sprintf("k%05d", run)
					// Grow for the first half, then shrink.
					switch p := r.IntN(100); {
					case i < ops/2 && p < 70, i >= ops/2 && p < 30:
						tt.set(t, k, fmt.Sprint(i))
					default:
						tt.delete(t, k)
					}
					if r.IntN(space) == 0 {
						clones = append(clones, clone{tt.t.clone(), maps.Clone(tt.model)})
					}
					if i%(ops/20) == 0 {
						checkTree(t, tt.t, tt.model)
					}
				}
				for len(tt.model) > 0 { // empty it
					for k := range tt.model {
						tt.delete(t, k)
						break
					}
				}
				checkTree(t, tt.t, tt.model)
				if tt.t.root != nil {
					t.Fatal("an empty tree has a root")
				}
				for _, c := range clones {
					checkTree(t, &c.t, c.model)
				}
				if len(clones) == 0 {
					t.Fatal("no clone was taken")
				}
			})
		}
	}
}

// TestMemTreeSeek checks a cursor's seek against the sorted keys: at a
// key, between keys, before the first and after the last.
func TestMemTreeSeek(t *testing.T) {
	for _, degree := range []int{2, 16} {
		tt := &testTree{t: newMemTree(degree), model: map[string]string{}}
		for i := range 3000 {
			tt.set(t, fmt.Sprintf("k%05d", 2*i), "v")
		}
		keys := slices.Sorted(maps.Keys(tt.model))
		c := memCursor{t: tt.t}
		for _, from := range []string{"", "a", "k", "k00000", "k00001", "k02999", "k03000", "k05997", "k05998", "k05999", "z"} {
			i, _ := slices.BinarySearch(keys, from)
			var got []string
			for c.seek([]byte(from)); c.valid() && len(got) < 300; c.next() {
				got = append(got, string(tt.t.key(c.item())))
			}
			if want := keys[i:min(i+300, len(keys))]; !slices.Equal(got, want) {
				t.Fatalf("degree %d, from %q: %d keys from %q, want %d from %q", degree, from, len(got), got, len(want), want)
			}
		}
	}
}
