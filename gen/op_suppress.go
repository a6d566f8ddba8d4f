package gen

import (
	"github.com/dave/jennifer/jen"

	"github.com/kgen-dev/kgen/schema"
)

// suppress holds a table's updates back (Kafka Streams' KTable.suppress):
// until: window-closes forwards each window's final result once it closes
// by the node's own stream time, until: {time-limit: D} a key's latest
// update once D of stream time passed since its first one held. What it
// holds is kept in its store x-buffer (changelogged), bounded by buffer:
// {max-records, max-bytes, when-full}.
func init() {
	register(&opKind{
		Name: "suppress",
		Keys: keys("from", "until!", "buffer", "idle-close"),
		Hint: tableHint,
		Type: func(r *resolver, o *OpNode, in Node) {
			if !o.InTable {
				r.errs.add(r.opFromPos(o, 0), "%s reads %q, which is not a table (%s): suppress holds back a table's updates (a windowed aggregation's, for window-closes)", o.what(), in.Name(), o.In)
				return
			}
			s := o.Suppress
			if s == nil || s.Until.Value == "" {
				return // reported
			}
			windowed := o.In.Key.is(WindowedOf)
			if windowed {
				if o.Windows = windowsAbove(in); o.Windows == nil {
					r.errs.add(r.opFromPos(o, 0), "%s: the windows of %q are not known: suppress reads a windowed aggregation's table (or an operator after it)", o.what(), in.Name())
					return
				}
			}
			if s.Until.Value == schema.UntilWindowCloses {
				if !windowed {
					r.errs.add(s.Until.Pos, "%s reads %q, whose keys are not windowed (%s): until: window-closes waits for a windowed aggregation's windows; for any table use until: {time-limit: DURATION}", o.what(), in.Name(), o.In.Key.Name)
					return
				}
				if s.WhenFull.Value == schema.WhenFullEmitEarly {
					r.errs.add(s.WhenFull.Pos, "%s: until: window-closes emits final results only, so its buffer cannot emit early: use when-full: shut-down (the default), or until: {time-limit: DURATION}", o.what())
				}
			}
			o.Out, o.HasOut, o.Table = o.In, true, true
			o.KeyFormat = r.format(schema.Str{}, schema.Str{}, o.In.Key.plain(), true)
			o.ValueFormat = r.format(schema.Str{}, schema.Str{}, o.In.Value.plain(), false)
		},
		Internal: func(o *OpNode) []internalRole {
			if !o.HasOut {
				return nil
			}
			return []internalRole{{Role: "buffer", What: "suppression buffer", KV: KV{o.In.Key.plain(), o.In.Value.plain()}, KeyFormat: o.KeyFormat, ValueFormat: o.ValueFormat}}
		},
		Emit: func(e *emitter, o *OpNode) []jen.Code {
			c := e.op(o)
			s, buf := o.Suppress, o.internal("buffer")
			var ks jen.Code = jen.Id("s").Dot(buf.KeySerde)
			if o.Windows != nil {
				ks = windowedKeySerde(ks, o.Windows)
			}
			opts := jen.Dict{jen.Id("Store"): jen.Qual(pkgStream, "StoreOptions").Values(jen.Dict{jen.Id("Changelog"): jen.True()})}
			if s.MaxRecords > 0 {
				opts[jen.Id("MaxRecords")] = jen.Lit(int(s.MaxRecords))
			}
			if s.MaxBytes > 0 {
				opts[jen.Id("MaxBytes")] = jen.Lit(s.MaxBytes)
			}
			if s.WhenFull.Value == schema.WhenFullEmitEarly {
				opts[jen.Id("WhenFull")] = jen.Qual(pkgDSL, "EmitEarlyWhenFull")
			}
			if o.IdleClose.Set() {
				opts[jen.Id("IdleClose")] = durationCode(o.IdleClose.Value)
			}
			v := typeOf(o.In.Value.unwrapped())
			if s.Until.Value == schema.UntilWindowCloses {
				return []jen.Code{c.dsl("SuppressUntilWindowCloses").Types(typeOf(o.In.Key.unwrapped()), v).Call(
					c.args(jen.Lit(buf.Name), windowsCode(o.Windows), ks, jen.Id("s").Dot(buf.ValueSerde), jen.Qual(pkgDSL, "SuppressOptions").Values(opts))...)}
			}
			return []jen.Code{c.dsl("SuppressUntilTimeLimit").Types(typeOf(o.In.Key), v).Call(
				c.args(jen.Lit(buf.Name), durationCode(s.Limit.Value), ks, jen.Id("s").Dot(buf.ValueSerde), jen.Qual(pkgDSL, "SuppressOptions").Values(opts))...)}
		},
		Against: func(c *againstCtx, old, new *schema.Operator) {
			if new != nil && new.Op.Value == old.Op.Value {
				suppressAgainst(c, old, new)
				return
			}
			pos := c.AppPos
			if new != nil {
				pos = new.Op.Pos
			}
			c.Breaking(pos, "suppress %q is gone: the updates its buffer %s-buffer holds back are lost (%s-%s-buffer-changelog is left behind)", old.Name.Value, old.Name.Value, c.App, old.Name.Value)
		},
	})
}

// suppressAgainst: each update held in the buffer keeps the time it is due
// by, counted the way its until: counted it (a window's end, or the time
// of the key's first update held), so another until: would release what
// is held by the wrong time; another limit or other bounds apply to it as
// they are.
func suppressAgainst(c *againstCtx, old, new *schema.Operator) {
	if old.Suppress == nil || new.Suppress == nil {
		return
	}
	o, n := old.Suppress, new.Suppress
	switch {
	case o.Until.Value != n.Until.Value:
		c.Breaking(n.Until.Pos, "suppress %q waits until %s, was %s: the updates its buffer %s-buffer holds were timed for the old rule and would be released by the new one at the wrong time (use a new name)", new.Name.Value, n.Until.Value, o.Until.Value, new.Name.Value)
	case o.Limit.Value != n.Limit.Value:
		c.Safe(n.Limit.Pos, "suppress %q: time limit changed from %s to %s: the updates held are released by the new limit", new.Name.Value, durationText(o.Limit.Value), durationText(n.Limit.Value))
	}
	if o.MaxRecords != n.MaxRecords || o.MaxBytes != n.MaxBytes || o.WhenFull.Value != n.WhenFull.Value {
		c.Safe(posOr(n.BufferPos, new.Name.Pos), "suppress %q: buffer bounds changed: they apply to what is held from the next update on", new.Name.Value)
	}
}
