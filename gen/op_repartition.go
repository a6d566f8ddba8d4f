package gen

import (
	"github.com/dave/jennifer/jen"

	"github.com/kgen-dev/kgen/schema"
)

// repartition writes a stream through its repartition topic
// <app>-<name>-repartition and reads it back, so that the records of one key
// meet in one task (Kafka Streams' KStream.repartition): after it a
// grouping reads in place, and partitions: sets the topic's partition count.
func init() {
	register(&opKind{
		Name:        "repartition",
		Keys:        keys("from", "to", "partitions"),
		KeyedOutput: true,
		Type: func(r *resolver, o *OpNode, in Node) {
			if !r.streamOnly(o, in) || !r.notWindowed(o, in) {
				return
			}
			o.Out, o.HasOut = o.In, true
			o.KeyFormat = r.format(schema.Str{}, schema.Str{}, o.Out.Key, true)
			o.ValueFormat = r.format(schema.Str{}, schema.Str{}, o.Out.Value.plain(), false)
		},
		Nodes: func(o *OpNode) []runtimeNode {
			return []runtimeNode{{Suffix: "-repartition-sink", Role: "repartition sink node"}, {Role: "node", Source: true}}
		},
		Internal: func(o *OpNode) []internalRole {
			if !o.HasOut {
				return nil
			}
			return []internalRole{{Role: "repartition", Topic: true, What: "repartition topic",
				KV: KV{o.Out.Key, o.Out.Value.plain()}, KeyFormat: o.KeyFormat, ValueFormat: o.ValueFormat}}
		},
		Emit: func(e *emitter, o *OpNode) []jen.Code {
			c := e.op(o)
			rt := o.internal("repartition")
			var vs jen.Code = jen.Id("s").Dot(rt.ValueSerde)
			if o.Out.Value.is(PointerTo) {
				vs = c.dsl("Nullable").Call(vs) // toStream's deletions stay tombstones
			}
			return []jen.Code{jen.Commentf("repartition %s writes its records through %s, read back by key.", o.Name.Value, rt.Name),
				c.repartition(rt, vs, c.parents...)}
		},
		Against: func(c *againstCtx, old, new *schema.Operator) {
			if new != nil && new.Op.Value == old.Op.Value {
				return
			}
			pos := c.AppPos
			if new != nil {
				pos = new.Op.Pos
			}
			c.Breaking(pos, "repartition %q is gone: records not yet read from its topic %s-%s-repartition are lost", old.Name.Value, c.App, old.Name.Value)
		},
	})
}
