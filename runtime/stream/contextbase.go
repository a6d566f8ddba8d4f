package stream

import "time"

// ContextBase is what every generated processor context has in common,
// written once here rather than in each generated type: the current
// record's coordinates, the task's clock, Commit, and the runtime context
// itself. Generated contexts embed it and add the typed parts (Forward,
// ForwardTo<Child>, store accessors). Make one with Context.Base.
type ContextBase[K, V any] struct {
	rt *Context[K, V]
}

// Base returns the ContextBase of c, for a generated context to embed.
func (c *Context[K, V]) Base() ContextBase[K, V] { return ContextBase[K, V]{rt: c} }

// Timestamp is the current record's timestamp (its event time); inside a
// punctuation, the punctuation's time.
func (b ContextBase[K, V]) Timestamp() time.Time { return b.rt.Timestamp() }

// Headers are the current record's headers.
func (b ContextBase[K, V]) Headers() []Header { return b.rt.Headers() }

// Topic is the current record's topic; empty inside a punctuation.
func (b ContextBase[K, V]) Topic() string { return b.rt.Topic() }

// Partition is the current record's partition; -1 inside a punctuation.
func (b ContextBase[K, V]) Partition() int32 { return b.rt.Partition() }

// Offset is the current record's offset; -1 inside a punctuation.
func (b ContextBase[K, V]) Offset() int64 { return b.rt.Offset() }

// StreamTime is the task's stream time: the largest timestamp processed,
// resumed from the last commit after a restart.
func (b ContextBase[K, V]) StreamTime() time.Time { return b.rt.StreamTime() }

// ObservedTime is this processor's own observed time called name, restored
// from the last commit; see Context.ObservedTime. Call it in Init.
func (b ContextBase[K, V]) ObservedTime(name string) *ObservedTime { return b.rt.ObservedTime(name) }

// TaskID names the task running this processor.
func (b ContextBase[K, V]) TaskID() TaskID { return b.rt.TaskID() }

// RecordDropped counts the current record as dropped for reason, and logs
// it at debug level with its coordinates (see Context.RecordDropped).
func (b ContextBase[K, V]) RecordDropped(reason DropReason) { b.rt.RecordDropped(reason) }

// Commit asks for a commit at the next opportunity.
func (b ContextBase[K, V]) Commit() { b.rt.Commit() }

// Runtime is the runtime's own context, for what a generated context does
// not wrap (Schedule, Store, ForwardTo by node name).
func (b ContextBase[K, V]) Runtime() *Context[K, V] { return b.rt }
