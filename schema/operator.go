package schema

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// The operator kinds, which keys each takes and which it requires, are the
// generator's: each kind is one descriptor in package gen, which checks an
// operator's keys against it. The loader reads every key any kind may take,
// with its position, so that a new kind using known keys changes nothing
// here; a key of its own is a change to the file format, made here.

// PlannedOps are operator kinds the spec format reserves for what comes next
// (cogroup): a spec naming one is told so.
var PlannedOps = []string{"cogroup"}

// PlannedOperatorKeys are operator keys reserved for what comes next.
var PlannedOperatorKeys = []string{"query"}

func (d *decoder) operator(name Str, n *yaml.Node) *Operator {
	o := &Operator{Name: name, Keys: map[string]Pos{}}
	what := fmt.Sprintf("operator %q", name.Value)
	at := func(k *yaml.Node) { o.Keys[k.Value] = d.pos(k) }
	fields := []field{
		{"op", func(k, v *yaml.Node) { at(k); o.Op = d.str(v, what+": op") }},
		{"from", func(k, v *yaml.Node) { at(k); o.From = d.strList(v, what+": from") }},
		{"to", func(k, v *yaml.Node) { at(k); o.To = d.strList(v, what+": to") }},
		{"key", func(k, v *yaml.Node) { at(k); o.Key = d.str(v, what+": key") }},
		{"value", func(k, v *yaml.Node) { at(k); o.Value = d.str(v, what+": value") }},
		{"store", func(k, v *yaml.Node) { at(k); o.Store = d.str(v, what+": store") }},
		{"topic", func(k, v *yaml.Node) { at(k); o.Topic = d.str(v, what+": topic") }},
		{"branches", func(k, v *yaml.Node) { at(k); o.Branches = d.strList(v, what+": branches") }},
		{"default", func(k, v *yaml.Node) { at(k); o.Default = d.str(v, what+": default") }},
		{"partitions", func(k, v *yaml.Node) {
			at(k)
			o.Partitions, o.PartitionsPos = d.integer(v, what+": partitions"), d.pos(v)
		}},
		{"window", func(k, v *yaml.Node) { at(k); o.Window = d.window(v, what) }},
		{"emit", func(k, v *yaml.Node) {
			at(k)
			o.Emit = d.str(v, what+": emit")
			switch o.Emit.Value {
			case "", EmitUpdates, EmitFinal:
			default:
				d.errs.add(o.Emit.Pos, "%s: emit: want updates (every update, the default) or final (one result per window once it closes), got %q%s", what, o.Emit.Value, Suggest(o.Emit.Value, []string{EmitUpdates, EmitFinal}))
				o.Emit.Value = ""
			}
		}},
		{"idle-close", func(k, v *yaml.Node) { at(k); o.IdleClose = d.duration(v, what+": idle-close", false) }},
		{"grace", func(k, v *yaml.Node) { at(k); o.Grace = d.duration(v, what+": grace", true) }},
		{"until", func(k, v *yaml.Node) { at(k); d.until(v, what, o.suppress()) }},
		{"buffer", func(k, v *yaml.Node) { at(k); d.buffer(v, what, o.suppress()) }},
		{"versioned", func(k, v *yaml.Node) { at(k); o.Versioned = d.versioned(v, what) }},
		{"foreign-key", func(k, v *yaml.Node) {
			at(k)
			o.ForeignKey, o.ForeignKeyPos = d.boolean(v, what+": foreign-key"), d.pos(v)
		}},
	}
	// Keys planned for queryable operators: say so rather than "unknown key".
	for _, k := range PlannedOperatorKeys {
		fields = append(fields, field{k, func(k, _ *yaml.Node) {
			d.errs.add(d.pos(k), "%s: %s is planned (queryable operators come next) but not supported by this kgen yet", what, k.Value)
		}})
	}
	if !d.mapping(n, what, fields) {
		return o
	}
	o.Pos = d.pos(n)
	return o
}

// Clear forgets the value of key k, as if it had not been written (its
// position stays in Keys): for a key the operator's kind does not take, so
// that resolving the operator adds no errors of its own about it.
func (o *Operator) Clear(k string) {
	switch k {
	case "from":
		o.From = nil
	case "to":
		o.To = nil
	case "key":
		o.Key = Str{}
	case "value":
		o.Value = Str{}
	case "store":
		o.Store = Str{}
	case "topic":
		o.Topic = Str{}
	case "branches":
		o.Branches = nil
	case "default":
		o.Default = Str{}
	case "partitions":
		o.Partitions = 0
	case "window":
		o.Window = nil
	case "emit":
		o.Emit = Str{}
	case "idle-close":
		o.IdleClose = Dur{}
	case "grace":
		o.Grace = Dur{}
	case "until", "buffer":
		o.Suppress = nil
	case "versioned":
		o.Versioned = nil
	case "foreign-key":
		o.ForeignKey = false
	}
}

// suppress is o's Suppress, made on first use.
func (o *Operator) suppress() *Suppress {
	if o.Suppress == nil {
		o.Suppress = &Suppress{}
	}
	return o.Suppress
}

// versioned reads a table's versioned: {history: DURATION}.
func (d *decoder) versioned(n *yaml.Node, what string) *Versioned {
	v := &Versioned{Pos: d.pos(n)}
	what += ": versioned"
	if !d.mapping(n, what, []field{
		{"history", func(_, h *yaml.Node) { v.History = d.duration(h, what+": history", false) }},
	}) {
		return v
	}
	if !v.History.Set() && !d.present(n, "history") {
		d.errs.add(v.Pos, "%s: needs history: how long the store keeps a key's older values (history: 1h)", what)
	}
	return v
}
