package dsl

import "github.com/kgen-dev/kgen/runtime/stream"

// Stateless operators: each is one processor node whose output records keep
// the input's timestamp and headers.

// add adds a processor node that calls fn for every record.
func add[K, V, KR, VR any](t *stream.Topology, name string, fn func(*stream.Context[KR, VR], stream.Record[K, V]), parents []string) {
	p := stream.ProcessorFunc[K, V, KR, VR](func(ctx *stream.Context[KR, VR], r stream.Record[K, V]) error {
		fn(ctx, r)
		return nil
	})
	stream.AddProcessor(t, name, func() stream.Processor[K, V, KR, VR] { return p }, parents...)
}

// Filter forwards the records for which pred holds.
func Filter[K, V any](t *stream.Topology, name string, pred func(K, V) bool, parents ...string) {
	add(t, name, func(ctx *stream.Context[K, V], r stream.Record[K, V]) {
		if pred(r.Key, r.Value) {
			ctx.Forward(r)
		}
	}, parents)
}

// FilterNot forwards the records for which pred does not hold.
func FilterNot[K, V any](t *stream.Topology, name string, pred func(K, V) bool, parents ...string) {
	add(t, name, func(ctx *stream.Context[K, V], r stream.Record[K, V]) {
		if !pred(r.Key, r.Value) {
			ctx.Forward(r)
		}
	}, parents)
}

// Map replaces each record's key and value. The key may change: group the
// result through a repartition step.
func Map[K, V, KR, VR any](t *stream.Topology, name string, fn func(K, V) (KR, VR), parents ...string) {
	add(t, name, func(ctx *stream.Context[KR, VR], r stream.Record[K, V]) {
		k, v := fn(r.Key, r.Value)
		ctx.Forward(stream.Record[KR, VR]{Key: k, Value: v, Timestamp: r.Timestamp, Headers: r.Headers})
	}, parents)
}

// MapValues replaces each record's value; the key stays.
func MapValues[K, V, VR any](t *stream.Topology, name string, fn func(K, V) VR, parents ...string) {
	add(t, name, func(ctx *stream.Context[K, VR], r stream.Record[K, V]) {
		ctx.Forward(stream.Record[K, VR]{Key: r.Key, Value: fn(r.Key, r.Value), Timestamp: r.Timestamp, Headers: r.Headers})
	}, parents)
}

// FlatMap replaces each record by zero or more records with new keys.
func FlatMap[K, V, KR, VR any](t *stream.Topology, name string, fn func(K, V) []KeyValue[KR, VR], parents ...string) {
	add(t, name, func(ctx *stream.Context[KR, VR], r stream.Record[K, V]) {
		for _, kv := range fn(r.Key, r.Value) {
			ctx.Forward(stream.Record[KR, VR]{Key: kv.Key, Value: kv.Value, Timestamp: r.Timestamp, Headers: r.Headers})
		}
	}, parents)
}

// FlatMapValues replaces each record by zero or more records with its key.
func FlatMapValues[K, V, VR any](t *stream.Topology, name string, fn func(K, V) []VR, parents ...string) {
	add(t, name, func(ctx *stream.Context[K, VR], r stream.Record[K, V]) {
		for _, v := range fn(r.Key, r.Value) {
			ctx.Forward(stream.Record[K, VR]{Key: r.Key, Value: v, Timestamp: r.Timestamp, Headers: r.Headers})
		}
	}, parents)
}

// SelectKey gives each record a new key computed from it; the value stays.
func SelectKey[K, V, KR any](t *stream.Topology, name string, fn func(K, V) KR, parents ...string) {
	add(t, name, func(ctx *stream.Context[KR, V], r stream.Record[K, V]) {
		ctx.Forward(stream.Record[KR, V]{Key: fn(r.Key, r.Value), Value: r.Value, Timestamp: r.Timestamp, Headers: r.Headers})
	}, parents)
}

// Peek calls fn for every record and forwards it unchanged.
func Peek[K, V any](t *stream.Topology, name string, fn func(K, V), parents ...string) {
	add(t, name, func(ctx *stream.Context[K, V], r stream.Record[K, V]) {
		fn(r.Key, r.Value)
		ctx.Forward(r)
	}, parents)
}

// Nothing is the output type of a terminal operator: no node can read it.
type Nothing struct{ _ [0]func() }

// Foreach calls fn for every record. It is a terminal node: a node that
// reads from it fails the topology's validation.
func Foreach[K, V any](t *stream.Topology, name string, fn func(K, V), parents ...string) {
	add(t, name, func(_ *stream.Context[Nothing, Nothing], r stream.Record[K, V]) { fn(r.Key, r.Value) }, parents)
}

// Merge forwards what every parent forwards, in the order they arrive.
func Merge[K, V any](t *stream.Topology, name string, parents ...string) {
	add(t, name, func(ctx *stream.Context[K, V], r stream.Record[K, V]) { ctx.Forward(r) }, parents)
}

// BranchDef is one branch of a Branch: its name and the predicate that
// takes a record into it.
type BranchDef[K, V any] struct {
	Name string
	Pred func(K, V) bool
}

// BranchNode is the node name of branch branch of the Branch split.
func BranchNode(split, branch string) string { return split + "-" + branch }

// Branch is Kafka Streams' split(): each record goes to the first branch
// whose predicate holds, else to the default branch when defaultBranch is
// not empty, else nowhere. Each branch, the default too, is a node named
// BranchNode(name, branch) that later nodes read from.
func Branch[K, V any](t *stream.Topology, name string, branches []BranchDef[K, V], defaultBranch string, parents ...string) {
	targets := make([]string, len(branches))
	for i, b := range branches {
		targets[i] = BranchNode(name, b.Name)
	}
	var fallback string
	if defaultBranch != "" {
		fallback = BranchNode(name, defaultBranch)
	}
	add(t, name, func(ctx *stream.Context[K, V], r stream.Record[K, V]) {
		for i, b := range branches {
			if b.Pred(r.Key, r.Value) {
				ctx.ForwardTo(targets[i], r)
				return
			}
		}
		if fallback != "" {
			ctx.ForwardTo(fallback, r)
		}
	}, parents)
	for _, target := range targets {
		Merge[K, V](t, target, name)
	}
	if fallback != "" {
		Merge[K, V](t, fallback, name)
	}
}
