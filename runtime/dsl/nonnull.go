package dsl

import "github.com/kgen-dev/kgen/runtime/stream"

// DropNulls is the step in front of a key-based stateful operator that
// reads a stream whose key or value may be null: it drops a record whose key
// or value is null, counted as stream.DropNullKey or stream.DropNullValue,
// as Kafka Streams' aggregations drop them, and forwards the others with
// the nullable sides made plain, so the aggregation's functions take values
// that cannot be null. key and value say, per side, whether a value is
// present and what it is: Deref for a nullable (pointer) side, Present for
// a side that is never null.
func DropNulls[KIn, VIn, K, V any](t *stream.Topology, name string, key func(KIn) (K, bool), value func(VIn) (V, bool), parents ...string) {
	stream.AddProcessor(t, name, func() stream.Processor[KIn, VIn, K, V] {
		return stream.ProcessorFunc[KIn, VIn, K, V](func(ctx *stream.Context[K, V], r stream.Record[KIn, VIn]) error {
			k, ok := key(r.Key)
			if !ok {
				ctx.RecordDropped(stream.DropNullKey)
				return nil
			}
			v, ok := value(r.Value)
			if !ok {
				ctx.RecordDropped(stream.DropNullValue)
				return nil
			}
			ctx.Forward(stream.Record[K, V]{Key: k, Value: v, Timestamp: r.Timestamp, Headers: r.Headers})
			return nil
		})
	}, parents...)
}

// Deref is the value p points to; false for nil (a null).
func Deref[T any](p *T) (T, bool) {
	if p == nil {
		var zero T
		return zero, false
	}
	return *p, true
}

// Present is v itself, always present: the side of DropNulls that is never
// null.
func Present[T any](v T) (T, bool) { return v, true }
