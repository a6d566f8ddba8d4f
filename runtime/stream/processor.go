package stream

import (
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/kgen-dev/kgen/runtime/state"
)

// Processor handles the records of one input: KIn and VIn are what it
// receives, KOut and VOut what it forwards. A processor instance belongs to
// one task and is never called concurrently.
type Processor[KIn, VIn, KOut, VOut any] interface {
	Process(ctx *Context[KOut, VOut], rec Record[KIn, VIn]) error
}

// ProcessorFunc adapts a function to a Processor.
type ProcessorFunc[KIn, VIn, KOut, VOut any] func(ctx *Context[KOut, VOut], rec Record[KIn, VIn]) error

// Process calls f.
func (f ProcessorFunc[KIn, VIn, KOut, VOut]) Process(ctx *Context[KOut, VOut], rec Record[KIn, VIn]) error {
	return f(ctx, rec)
}

// Initializer is implemented by processors that set up state (stores,
// punctuations) before their first record. Init runs after the task's stores
// are restored.
type Initializer[KOut, VOut any] interface {
	Init(ctx *Context[KOut, VOut]) error
}

// Closer is implemented by processors that release resources when their task
// closes.
type Closer interface {
	Close() error
}

// Context is a processor's handle on its task: it forwards records to the
// processor's children and gives access to the current record's coordinates,
// stores, punctuation and commits. It is valid only on the task's goroutine.
type Context[K, V any] struct {
	nodeContext
	children []receiver[K, V]
}

// Forward sends rec to every child, depth first. If a child fails, the error
// is reported for the input record once the current Process returns, and the
// remaining children are skipped.
func (c *Context[K, V]) Forward(rec Record[K, V]) {
	for _, child := range c.children {
		if c.t.err != nil {
			return
		}
		child.receive(rec)
	}
}

// ForwardTo sends rec to the named child only.
func (c *Context[K, V]) ForwardTo(child string, rec Record[K, V]) {
	i := slices.Index(c.childNames, child)
	if i < 0 {
		c.t.fail(c.name, fmt.Errorf("forward to %q: not a child of %q (children: %v)", child, c.name, c.childNames))
		return
	}
	if c.t.err == nil {
		c.children[i].receive(rec)
	}
}

// nodeContext is the part of a Context that does not depend on types.
type nodeContext struct {
	t          *task
	name       string
	childNames []string
	// time and headers are the record context of the record this node is
	// processing: the one its parent forwarded (processorNode.receive),
	// or a punctuation's time and no headers while one of the node's
	// runs. Kept per node, so a child's call leaves its parent's intact.
	time    int64 // -1 before the first
	headers []Header
}

// Topic is the current record's topic; empty inside a punctuation.
func (c *nodeContext) Topic() string {
	if r := c.t.current; r != nil {
		return r.Topic
	}
	return ""
}

// Partition is the current record's partition; -1 inside a punctuation.
func (c *nodeContext) Partition() int32 {
	if r := c.t.current; r != nil {
		return r.Partition
	}
	return -1
}

// Offset is the current record's offset; -1 inside a punctuation.
func (c *nodeContext) Offset() int64 {
	if r := c.t.current; r != nil {
		return r.Offset
	}
	return -1
}

// Timestamp is the timestamp of the record this processor is processing:
// the one its parent forwarded (a source's is the input record's, as its
// timestamp extractor gave it; a join's is the later of the two joined),
// not necessarily the task's input record's. Inside a punctuation, the
// punctuation's time. As in Kafka Streams, a store write's changelog record
// gets this time.
func (c *nodeContext) Timestamp() time.Time { return fromMillis(c.time) }

// Headers are the headers of the record this processor is processing (the
// one its parent forwarded); nil inside a punctuation.
func (c *nodeContext) Headers() []Header { return c.headers }

// StreamTime is the task's stream time: the largest timestamp it has taken
// from any of its input partitions, whatever its processors did with the
// record; zero before the first. It resumes from the last commit after a
// restart or a rebalance. An operator that must see only the records that
// reach it keeps its own ObservedTime.
func (c *nodeContext) StreamTime() time.Time { return fromMillis(c.t.streamTime) }

// TaskID identifies the task running this processor instance.
func (c *nodeContext) TaskID() TaskID { return c.t.id }

// NodeName is the processor's name in the topology.
func (c *nodeContext) NodeName() string { return c.name }

// Schedule calls fn every interval of the given clock, on the task's
// goroutine, never concurrently with Process. A stream-time punctuation
// fires once when stream time passes its next time, even if several
// intervals were skipped; its first time is one interval after the stream
// time at scheduling (or after the first record, if none was seen yet).
func (c *nodeContext) Schedule(interval time.Duration, typ PunctuationType, fn func(now time.Time) error) Cancellable {
	return Cancellable{c.t.schedule(c, interval, typ, fn)}
}

// Commit asks for a commit as soon as the current record is done.
func (c *nodeContext) Commit() { c.t.commitRequested = true }

// Store returns the store named name, if it is attached to this processor,
// or the global table named name (readable by every processor), or nil. Use GetKeyValueStore for a typed handle.
func (c *nodeContext) Store(name string) any {
	if g := c.t.env.global(name); g != nil {
		return g.reader
	}
	if !slices.Contains(c.t.topo.nodes[c.name].stores, name) {
		return nil
	}
	if s := c.t.sm.stores[name]; s != nil {
		return s.typed
	}
	return nil
}

// StoreGetter is what GetKeyValueStore needs: any processor Context.
type StoreGetter interface {
	Store(name string) any
	NodeName() string
}

// GetKeyValueStore returns the typed key-value store named name. Call it in
// Init and keep the result: it checks the attachment and the types once.
func GetKeyValueStore[K, V any](ctx StoreGetter, name string) (state.KeyValueStore[K, V], error) {
	s := ctx.Store(name)
	if s == nil {
		return nil, fmt.Errorf("processor %q: store %q is not attached to it", ctx.NodeName(), name)
	}
	kv, ok := s.(state.KeyValueStore[K, V])
	if !ok {
		return nil, fmt.Errorf("processor %q: store %q is %T, not a KeyValueStore of the requested types", ctx.NodeName(), name, s)
	}
	return kv, nil
}

// receiver is a node that takes typed records from its parents.
type receiver[K, V any] interface {
	receive(rec Record[K, V])
}

type processorNode[KIn, VIn, KOut, VOut any] struct {
	name string
	proc Processor[KIn, VIn, KOut, VOut]
	ctx  *Context[KOut, VOut]
	// processed counts records Process returned nil for; read by metrics.
	processed atomic.Uint64
}

func (n *processorNode[KIn, VIn, KOut, VOut]) receive(rec Record[KIn, VIn]) {
	t := n.ctx.t
	if t.err != nil {
		return
	}
	// The context follows the record: Process, what it writes to stores
	// and what it forwards without a time see rec's time and headers. They
	// are the node's own, so only which node runs (for store writes and
	// panics) is restored after.
	c := &n.ctx.nodeContext
	parent := t.running
	if rec.Timestamp.IsZero() {
		// A record forwarded without a time has its parent's.
		c.time = t.recordTime()
	} else {
		c.time = rec.Timestamp.UnixMilli()
	}
	c.headers = rec.Headers
	t.running = c
	err := n.proc.Process(n.ctx, rec)
	t.running = parent
	if err != nil {
		t.fail(n.name, err)
		return
	}
	n.processed.Add(1)
}

func (n *processorNode[KIn, VIn, KOut, VOut]) init() error {
	if i, ok := n.proc.(Initializer[KOut, VOut]); ok {
		return i.Init(n.ctx)
	}
	return nil
}

func (n *processorNode[KIn, VIn, KOut, VOut]) close() error {
	if c, ok := n.proc.(Closer); ok {
		return c.Close()
	}
	return nil
}

// lifecycle is implemented by processor nodes.
type lifecycle interface {
	nodeName() string
	context() *nodeContext
	init() error
	close() error
	processedCount() uint64
}

func (n *processorNode[KIn, VIn, KOut, VOut]) nodeName() string       { return n.name }
func (n *processorNode[KIn, VIn, KOut, VOut]) context() *nodeContext  { return &n.ctx.nodeContext }
func (n *processorNode[KIn, VIn, KOut, VOut]) processedCount() uint64 { return n.processed.Load() }
