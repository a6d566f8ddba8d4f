package schema

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Parse parses a spec from data; file names it in error messages. The
// returned Spec holds everything that could be read even when the error is
// not nil, so callers can go on and report further problems.
func Parse(file string, data []byte) (spec *Spec, err error) {
	d := &decoder{file: file}
	spec = &Spec{File: file}
	defer func() {
		// yaml.v3 has panicked on hostile input before; a spec loader must
		// not take the process down with it.
		if r := recover(); r != nil {
			spec = &Spec{File: file}
			err = Errors{{Pos: Pos{File: file, Line: 1, Col: 1}, Msg: fmt.Sprintf("cannot parse spec: %v", r)}}
		}
	}()
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return spec, Errors{yamlError(file, data, err)}
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		d.errs.add(Pos{File: file, Line: 1, Col: 1}, "empty spec: want at least version and app")
		return spec, d.errs.errs.Err()
	}
	d.spec(doc.Content[0], spec)
	return spec, d.errs.errs.Err()
}

var yamlLine = regexp.MustCompile(`^yaml: (?:line \d+: )?(.*)$`)

// yamlError places a YAML syntax error at the offending token. yaml.v3 says
// "line N" with a 0-based line, and often that of the enclosing block rather
// than of the mistake, and never a column; so the line is found again by
// parsing prefixes of the file: the offending line is the first from which
// every longer prefix fails to parse too (a prefix ending inside a valid
// multi-line flow collection fails, but a longer one parses again). The
// column is found the same way within that line.
func yamlError(file string, data []byte, err error) *Error {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		msg = m[1]
	}
	line, col := locateYAMLError(data)
	return &Error{Pos: Pos{File: file, Line: line, Col: col}, Msg: "invalid YAML: " + msg}
}

// locateYAMLError returns the 1-based line and column of the first token
// from which data no longer parses.
func locateYAMLError(data []byte) (line, col int) {
	lines := strings.SplitAfter(string(data), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	// bad[k] reports whether the first k+1 lines fail to parse.
	first := len(lines) - 1
	for k := len(lines) - 1; k >= 0; k-- {
		if !yamlFails(strings.Join(lines[:k+1], "")) {
			break
		}
		first = k
	}
	if first < 0 {
		return 1, 1
	}
	before := strings.Join(lines[:first], "")
	text := strings.TrimRight(lines[first], "\r\n")
	col = 1
	runes := []rune(text)
	for c := len(runes); c >= 1; c-- {
		if !yamlFails(before + string(runes[:c])) {
			break
		}
		col = c
	}
	return first + 1, col
}

func yamlFails(s string) (fails bool) {
	defer func() {
		if recover() != nil {
			fails = true
		}
	}()
	var n yaml.Node
	return yaml.Unmarshal([]byte(s), &n) != nil
}

type decoder struct {
	file string
	errs errList
}

func (d *decoder) pos(n *yaml.Node) Pos {
	return Pos{File: d.file, Line: n.Line, Col: n.Column}
}

// field is one allowed key of a mapping and what to do with its value.
type field struct {
	name string
	fn   func(key, val *yaml.Node)
}

// mapping walks a mapping node, calling each field's function for its key
// and reporting unknown and repeated keys. It returns false when n is not a
// mapping.
func (d *decoder) mapping(n *yaml.Node, what string, fields []field) bool {
	if !d.kind(n, yaml.MappingNode, what, "a mapping") {
		return false
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !d.kind(k, yaml.ScalarNode, "key in "+what, "a string") {
			continue
		}
		if seen[k.Value] {
			d.errs.add(d.pos(k), "%s: key %q repeated", what, k.Value)
			continue
		}
		seen[k.Value] = true
		i := slices.IndexFunc(fields, func(f field) bool { return f.name == k.Value })
		if i < 0 {
			names := make([]string, len(fields))
			for j, f := range fields {
				names[j] = f.name
			}
			d.errs.add(d.pos(k), "unknown key %q in %s%s", k.Value, what, Suggest(k.Value, names))
			continue
		}
		if !d.kind(v, 0, what+": "+k.Value, "") {
			continue
		}
		fields[i].fn(k, v)
	}
	return true
}

// kind checks that n has the wanted kind (0: any kind but an alias) and is
// not an alias or anchor, which the spec does not support.
func (d *decoder) kind(n *yaml.Node, want yaml.Kind, what, wantText string) bool {
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		d.errs.add(d.pos(n), "%s: YAML anchors and aliases are not supported in a spec", what)
		return false
	}
	if want != 0 && n.Kind != want {
		d.errs.add(d.pos(n), "%s: want %s, got %s", what, wantText, describe(n))
		return false
	}
	return true
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "nothing"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "something else"
}

func (d *decoder) str(n *yaml.Node, what string) Str {
	if !d.kind(n, yaml.ScalarNode, what, "a string") {
		return Str{Pos: d.pos(n)}
	}
	if n.Tag == "!!null" || n.Value == "" {
		d.errs.add(d.pos(n), "%s: want a non-empty string", what)
		return Str{Pos: d.pos(n)}
	}
	return Str{Value: n.Value, Pos: d.pos(n)}
}

func (d *decoder) strList(n *yaml.Node, what string) []Str {
	if n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
		return []Str{d.str(n, what)} // a lone name stands for a list of one
	}
	if !d.kind(n, yaml.SequenceNode, what, "a list") {
		return nil
	}
	out := make([]Str, 0, len(n.Content))
	for _, c := range n.Content {
		if s := d.str(c, what); s.Value != "" {
			out = append(out, s)
		}
	}
	return out
}

func (d *decoder) boolean(n *yaml.Node, what string) bool {
	if !d.kind(n, yaml.ScalarNode, what, "true or false") {
		return false
	}
	switch n.Value {
	case "true":
		return true
	case "false":
		return false
	}
	d.errs.add(d.pos(n), "%s: want true or false, got %s", what, describe(n))
	return false
}

func (d *decoder) integer(n *yaml.Node, what string) int {
	if !d.kind(n, yaml.ScalarNode, what, "a number") {
		return 0
	}
	v, err := strconv.Atoi(n.Value)
	if err != nil || v < 1 || v > 1<<20 {
		d.errs.add(d.pos(n), "%s: want a whole number from 1 to %d, got %s", what, 1<<20, describe(n))
		return 0
	}
	return v
}

func (d *decoder) spec(n *yaml.Node, s *Spec) {
	versionSeen := false
	ok := d.mapping(n, "spec", []field{
		{"version", func(_, v *yaml.Node) {
			versionSeen = true
			if v.Kind != yaml.ScalarNode || v.Value != strconv.Itoa(Version) {
				d.errs.add(d.pos(v), "unsupported spec version %s: this kgen reads version %d", describe(v), Version)
				return
			}
			s.Version = Version
		}},
		{"app", func(_, v *yaml.Node) { s.App = d.str(v, "app") }},
		{"package", func(_, v *yaml.Node) { s.Package = d.str(v, "package") }},
		{"types", func(_, v *yaml.Node) { d.types(v, &s.Types) }},
		{"topics", func(_, v *yaml.Node) {
			d.named(v, "topics", func(name Str, v *yaml.Node) { s.Topics = append(s.Topics, d.topic(name, v)) })
		}},
		{"stores", func(_, v *yaml.Node) {
			d.named(v, "stores", func(name Str, v *yaml.Node) { s.Stores = append(s.Stores, d.store(name, v)) })
		}},
		{"processors", func(_, v *yaml.Node) {
			d.named(v, "processors", func(name Str, v *yaml.Node) { s.Processors = append(s.Processors, d.processor(name, v)) })
		}},
		{"operators", func(_, v *yaml.Node) {
			d.named(v, "operators", func(name Str, v *yaml.Node) { s.Operators = append(s.Operators, d.operator(name, v)) })
		}},
	})
	if !ok {
		return
	}
	if !versionSeen {
		d.errs.add(d.pos(n), "missing version: add \"version: %d\"", Version)
	}
	if s.App.Value == "" && s.App.Pos.Line == 0 {
		d.errs.add(d.pos(n), "missing app: add \"app: NAME\" (the application id)")
	}
	slices.SortFunc(s.Topics, func(a, b *Topic) int { return strings.Compare(a.Name.Value, b.Name.Value) })
	slices.SortFunc(s.Stores, func(a, b *Store) int { return strings.Compare(a.Name.Value, b.Name.Value) })
	slices.SortFunc(s.Processors, func(a, b *Processor) int { return strings.Compare(a.Name.Value, b.Name.Value) })
	slices.SortFunc(s.Operators, func(a, b *Operator) int { return strings.Compare(a.Name.Value, b.Name.Value) })
}

func (d *decoder) types(n *yaml.Node, t *Types) {
	d.mapping(n, "types", []field{
		{"go", func(_, v *yaml.Node) { t.Go = d.strList(v, "types: go") }},
		{"avro", func(_, v *yaml.Node) { t.Avro = d.strList(v, "types: avro") }},
	})
}

// named walks a mapping from names to declarations.
func (d *decoder) named(n *yaml.Node, what string, fn func(name Str, v *yaml.Node)) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // "topics:" with nothing under it
	}
	if !d.kind(n, yaml.MappingNode, what, "a mapping of names") {
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		name := d.str(k, "name in "+what)
		if name.Value == "" {
			continue
		}
		if seen[name.Value] {
			d.errs.add(name.Pos, "%s: %q declared twice", what, name.Value)
			continue
		}
		seen[name.Value] = true
		fn(name, v)
	}
}

func (d *decoder) topic(name Str, n *yaml.Node) *Topic {
	t := &Topic{Name: name}
	what := fmt.Sprintf("topic %q", name.Value)
	if d.mapping(n, what, []field{
		{"key", func(_, v *yaml.Node) { t.Key = d.str(v, what+": key") }},
		{"value", func(_, v *yaml.Node) { t.Value = d.str(v, what+": value") }},
		{"format", func(_, v *yaml.Node) { t.Format = d.str(v, what+": format") }},
		{"key-format", func(_, v *yaml.Node) { t.KeyFormat = d.str(v, what+": key-format") }},
		{"partitions", func(_, v *yaml.Node) {
			t.Partitions, t.PartitionsPos = d.integer(v, what+": partitions"), d.pos(v)
		}},
		{"timestamp", func(_, v *yaml.Node) { t.Timestamp = d.str(v, what+": timestamp") }},
		{"repartition", func(_, v *yaml.Node) {
			t.Repartition, t.RepartitionPos = d.boolean(v, what+": repartition"), d.pos(v)
		}},
		{"windowed", func(_, v *yaml.Node) {
			t.WindowedPos = d.pos(v)
			switch {
			case v.Kind == yaml.ScalarNode && (v.Value == "true" || v.Value == "false"):
				t.Windowed = d.boolean(v, what+": windowed")
			case v.Kind == yaml.ScalarNode && v.Value == WindowSession:
				t.Windowed, t.WindowSession = true, true
			case v.Kind == yaml.ScalarNode && !validDuration(v.Value):
				d.errs.add(d.pos(v), "%s: windowed: want true, session, or the size of its time windows (5m), got %s%s", what, describe(v), Suggest(v.Value, []string{"true", "false", WindowSession}))
			default:
				t.WindowSize = d.duration(v, what+": windowed (the size of its time windows)", false)
				t.Windowed = t.WindowSize.Set()
			}
		}},
		{"configs", func(_, v *yaml.Node) { t.Configs = d.topicConfigs(v, what+": configs") }},
		{"nullable", func(_, v *yaml.Node) {
			t.Nullable = d.str(v, what+": nullable")
			switch t.Nullable.Value {
			case "", NullableKey, NullableValue, NullableBoth:
			default:
				d.errs.add(t.Nullable.Pos, "%s: nullable %q: want key, value or both%s", what, t.Nullable.Value, Suggest(t.Nullable.Value, []string{NullableBoth, NullableKey, NullableValue}))
			}
		}},
	}) {
		d.require(n, what, "key", t.Key)
		d.require(n, what, "value", t.Value)
	}
	if t.Repartition && len(t.Configs) > 0 {
		d.errs.add(t.Configs[0].Key.Pos, "%s: configs: a repartition topic is the application's own, created with the configs it needs; give configs to the user's topics only", what)
	}
	return t
}

// topicConfigs reads a topic's configs: a mapping of config names to
// scalar values (a number or a boolean is kept as written).
func (d *decoder) topicConfigs(n *yaml.Node, what string) []TopicConfig {
	if !d.kind(n, yaml.MappingNode, what, "a mapping of config names to values") {
		return nil
	}
	var out []TopicConfig
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := d.str(k, what+": config name")
		if key.Value == "" {
			continue
		}
		if seen[key.Value] {
			d.errs.add(key.Pos, "%s: %q given twice", what, key.Value)
			continue
		}
		seen[key.Value] = true
		val := d.str(v, fmt.Sprintf("%s: %s", what, key.Value))
		if val.Value == "" {
			continue
		}
		if key.Value == "cleanup.policy" {
			for _, p := range strings.Split(val.Value, ",") {
				if p = strings.TrimSpace(p); p != "delete" && p != "compact" {
					d.errs.add(val.Pos, "%s: cleanup.policy %q: want delete, compact or compact,delete", what, val.Value)
					break
				}
			}
		}
		out = append(out, TopicConfig{Key: key, Value: val})
	}
	return out
}

func (d *decoder) require(n *yaml.Node, what, key string, s Str) {
	if s.Pos.Line == 0 {
		d.errs.add(d.pos(n), "%s: missing %s", what, key)
	}
}

func (d *decoder) store(name Str, n *yaml.Node) *Store {
	s := &Store{Name: name, Changelog: true}
	what := fmt.Sprintf("store %q", name.Value)
	if d.mapping(n, what, []field{
		{"kind", func(_, v *yaml.Node) { s.Kind = d.str(v, what+": kind") }},
		{"key", func(_, v *yaml.Node) { s.Key = d.str(v, what+": key") }},
		{"value", func(_, v *yaml.Node) { s.Value = d.str(v, what+": value") }},
		{"format", func(_, v *yaml.Node) { s.Format = d.str(v, what+": format") }},
		{"backend", func(_, v *yaml.Node) { s.Backend = d.str(v, what+": backend") }},
		{"changelog", func(_, v *yaml.Node) { s.Changelog, s.ChangelogPos = d.boolean(v, what+": changelog"), d.pos(v) }},
		{"queryable", func(_, v *yaml.Node) { s.Queryable = d.boolean(v, what+": queryable") }},
	}) {
		d.require(n, what, "key", s.Key)
		d.require(n, what, "value", s.Value)
	}
	return s
}

func (d *decoder) processor(name Str, n *yaml.Node) *Processor {
	p := &Processor{Name: name}
	what := fmt.Sprintf("processor %q", name.Value)
	d.mapping(n, what, []field{
		{"from", func(_, v *yaml.Node) { p.From = d.strList(v, what+": from") }},
		{"to", func(_, v *yaml.Node) { p.To = d.strList(v, what+": to") }},
		{"stores", func(_, v *yaml.Node) { p.Stores = d.strList(v, what+": stores") }},
		{"forward", func(_, v *yaml.Node) { p.Forward = d.forward(v, what+": forward") }},
		{"rekeys", func(_, v *yaml.Node) { p.Rekeys, p.RekeysPos = d.boolean(v, what+": rekeys"), d.pos(v) }},
		{"punctuate", func(_, v *yaml.Node) {
			if !d.kind(v, yaml.SequenceNode, what+": punctuate", "a list") {
				return
			}
			for _, c := range v.Content {
				p.Punctuate = append(p.Punctuate, d.punctuation(c, what+": punctuate"))
			}
		}},
	})
	return p
}

func (d *decoder) forward(n *yaml.Node, what string) *Forward {
	f := &Forward{Pos: d.pos(n)}
	if n.Kind == yaml.MappingNode {
		// A mapping of child names to types reads as per-child forwards; the
		// runtime gives a processor one output type, so say that plainly.
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i+1].Kind == yaml.MappingNode {
				d.errs.add(d.pos(n.Content[i]), "%s: per-child forward types are not supported: a processor forwards one key and value type to all its children (forward: {key: K, value: V}); use ForwardTo<Child> to pick a child", what)
				return f
			}
		}
	}
	if d.mapping(n, what, []field{
		{"key", func(_, v *yaml.Node) { f.Key = d.str(v, what+": key") }},
		{"value", func(_, v *yaml.Node) { f.Value = d.str(v, what+": value") }},
	}) {
		d.require(n, what, "key", f.Key)
		d.require(n, what, "value", f.Value)
	}
	return f
}

func (d *decoder) punctuation(n *yaml.Node, what string) *Punctuation {
	p := &Punctuation{Pos: d.pos(n)}
	everySeen := false
	if d.mapping(n, what, []field{
		{"name", func(_, v *yaml.Node) { p.Name = d.str(v, what+": name") }},
		{"every", func(_, v *yaml.Node) {
			everySeen = true
			s := d.str(v, what+": every")
			p.EveryPos = s.Pos
			if s.Value == "" {
				return
			}
			dur, err := time.ParseDuration(s.Value)
			if err != nil || dur <= 0 {
				d.errs.add(s.Pos, "%s: every: want a positive duration such as 30s or 1m, got %q", what, s.Value)
				return
			}
			p.Every = dur
		}},
		{"time", func(_, v *yaml.Node) { p.Time = d.str(v, what+": time") }},
	}) && !everySeen {
		d.errs.add(d.pos(n), "%s: missing every", what)
	}
	return p
}

// Suggest returns ` (did you mean "x"?)` when a known name is close to got.
func Suggest(got string, known []string) string {
	best, bestDist := "", 3
	for _, k := range known {
		if dist := editDistance(got, k); dist < bestDist {
			best, bestDist = k, dist
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
