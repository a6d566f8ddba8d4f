package schema

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// opKeys lists, per operator kind, the keys it takes besides op; required
// ones are marked with a trailing "!".
var opKeys = map[string][]string{
	OpFilter:        {"from", "to"},
	OpFilterNot:     {"from", "to"},
	OpMap:           {"from", "to", "key!", "value!"},
	OpMapValues:     {"from", "to", "value!"},
	OpFlatMap:       {"from", "to", "key!", "value!"},
	OpFlatMapValues: {"from", "to", "value!"},
	OpSelectKey:     {"from", "to", "key!"},
	OpPeek:          {"from", "to"},
	OpForeach:       {"from"},
	OpBranch:        {"from", "branches!", "default"},
	OpMerge:         {"from", "to"},
	OpGroupByKey:    {"from", "partitions"},
	OpGroupBy:       {"from", "key!", "value", "partitions"},
	OpCount:         {"from", "store!"},
	OpReduce:        {"from", "store!"},
	OpAggregate:     {"from", "store!", "value!"},
	OpTable:         {"topic!", "store!"},
	OpToStream:      {"from", "to"},
}

// opKeyHelp says what a key means, for the message about a missing one.
var opKeyHelp = map[string]string{
	"from":     "its inputs: from: [TOPIC, PROCESSOR or OPERATOR]",
	"key":      "the key type it outputs: key: TYPE",
	"value":    "the value type it outputs: value: TYPE",
	"store":    "the store holding its rows: store: NAME",
	"topic":    "the topic it reads: topic: NAME",
	"branches": "the names of its arms: branches: [NAME, ...]",
}

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
	}
	// Keys planned for windows, joins and queries: say so rather than
	// "unknown key".
	for _, k := range PlannedOperatorKeys {
		fields = append(fields, field{k, func(k, _ *yaml.Node) {
			d.errs.add(d.pos(k), "%s: %s is planned (windowed aggregations, joins, versioned tables and queries come next) but not supported by this kgen yet", what, k.Value)
		}})
	}
	if !d.mapping(n, what, fields) {
		return o
	}
	if o.Op.Pos.Line == 0 {
		d.errs.add(d.pos(n), "%s: missing op: the operator kind (%s)", what, strings.Join(Ops, ", "))
		return o
	}
	if o.Op.Value == "" {
		return o // reported
	}
	keys, ok := opKeys[o.Op.Value]
	if !ok {
		if slices.Contains(PlannedOps, o.Op.Value) {
			d.errs.add(o.Op.Pos, "%s: op %s is planned (joins, global tables and cogroup come next) but not supported by this kgen yet", what, o.Op.Value)
			return o
		}
		d.errs.add(o.Op.Pos, "%s: unknown op %q (want one of %s)%s", what, o.Op.Value, strings.Join(Ops, ", "), Suggest(o.Op.Value, Ops))
		return o
	}
	allowed := map[string]bool{"op": true}
	for _, k := range keys {
		name, required := strings.CutSuffix(k, "!")
		allowed[name] = true
		if _, given := o.Keys[name]; required && !given {
			d.errs.add(o.Name.Pos, "%s: %s needs %s", what, o.Op.Value, opKeyHelp[name])
		}
	}
	var given []string
	for k := range o.Keys {
		given = append(given, k)
	}
	slices.Sort(given)
	for _, k := range given {
		if allowed[k] || slices.Contains(PlannedOperatorKeys, k) {
			continue
		}
		var hint string
		switch {
		case k == "to" && (o.Op.Value == OpCount || o.Op.Value == OpReduce || o.Op.Value == OpAggregate || o.Op.Value == OpTable):
			hint = fmt.Sprintf(": %s makes a table; write its updates to a topic with an operator {op: toStream, from: [%s], to: [TOPIC]}", o.Op.Value, name.Value)
		case k == "to" && (o.Op.Value == OpGroupBy || o.Op.Value == OpGroupByKey):
			hint = ": a grouping feeds an aggregation (count, reduce or aggregate), not a topic"
		case k == "to" && o.Op.Value == OpBranch:
			hint = fmt.Sprintf(": each arm is a node of its own, named %s-ARM; name it in the from of what reads it", name.Value)
		case k == "from" && o.Op.Value == OpTable:
			hint = ": a table reads one topic: topic: NAME"
		case k == "to" && o.Op.Value == OpForeach:
			hint = ": foreach is terminal; use peek to pass records on"
		default:
			var ks []string
			for a := range allowed {
				ks = append(ks, a)
			}
			slices.Sort(ks)
			hint = " (it takes " + strings.Join(ks, ", ") + ")"
		}
		d.errs.add(o.Keys[k], "%s: %s takes no %s%s", what, o.Op.Value, k, hint)
		o.clear(k) // so that resolving it adds no errors of its own
	}
	return o
}

// OpKeysOf lists the keys an operator kind takes besides op (required ones
// end in "!"), and whether the kind exists.
func OpKeysOf(kind string) ([]string, bool) {
	k, ok := opKeys[kind]
	return k, ok
}

// clear forgets the value of key k.
func (o *Operator) clear(k string) {
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
	}
}
