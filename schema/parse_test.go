package schema

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseErrors covers what the file alone can tell; problems found by
// resolving a spec against its types are gen's (gen/resolve_test.go).
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		want       []string
	}{
		{"typo", "version: 1\napp: a\ntopcis: {}\n", []string{`kgen.yaml:3:1: unknown key "topcis" in spec (did you mean "topics"?)`}},
		{"version", "version: 2\napp: a\n", []string{`kgen.yaml:1:10: unsupported spec version "2": this kgen reads version 1`}},
		{"missing", "types: {}\n", []string{`kgen.yaml:1:1: missing app: add "app: NAME" (the application id)`, `kgen.yaml:1:1: missing version: add "version: 1"`}},
		{"planned key", "version: 1\napp: a\noperators:\n  o: {op: count, from: [g], store: s, query: true}\n", []string{`kgen.yaml:4:39: operator "o": query is planned (queryable operators come next) but not supported by this kgen yet`}},
		{"window of no kind", "version: 1\napp: a\noperators:\n  o: {op: count, from: [g], store: s, window: {size: 5m}}\n", []string{
			`kgen.yaml:4:47: operator "o": window: say its kind: {tumbling: SIZE}, {hopping: {size: SIZE, advance: ADVANCE}}, {sliding: DIFFERENCE} or {session: GAP}, with grace: DURATION`,
			`kgen.yaml:4:48: unknown key "size" in operator "o": window`}},
		{"join window: within and before", "version: 1\napp: a\noperators:\n  o: {op: join, from: [l, r], value: string, window: {within: 5s, before: 1s}}\n", []string{
			`kgen.yaml:4:67: operator "o": window: both within and before: within sets before and after`}},
		{"join window: empty", "version: 1\napp: a\noperators:\n  o: {op: join, from: [l, r], value: string, window: {before: 0s, after: 0s}}\n", []string{
			`kgen.yaml:4:55: operator "o": window: a join window needs a positive before plus after (within: D, or before: B and after: A)`}},
		{"join window with an aggregation's", "version: 1\napp: a\noperators:\n  o: {op: join, from: [l, r], value: string, window: {tumbling: 5s, within: 1s}}\n", []string{
			`kgen.yaml:4:69: operator "o": window: both tumbling and within: a window is of one kind (tumbling, hopping, sliding, session, or a join's within or before/after)`}},
		{"session gap of a mapping", "version: 1\napp: a\noperators:\n  o: {op: count, from: [g], store: s, window: {session: {gaps: 5m}}}\n", []string{
			`kgen.yaml:4:57: operator "o": window: session: want {gap: DURATION} (the inactivity gap)`,
			`kgen.yaml:4:58: unknown key "gaps" in operator "o": window: session (did you mean "gap"?)`}},
		{"time limit without a limit", "version: 1\napp: a\noperators:\n  o: {op: suppress, from: [g], until: time-limit, buffer: {max-records: x, when-full: drop}}\n", []string{
			`kgen.yaml:4:39: operator "o": until: say the limit: {time-limit: DURATION}`,
			`kgen.yaml:4:73: operator "o": buffer: max-records: want a positive whole number, got "x"`,
			`kgen.yaml:4:87: operator "o": buffer: when-full: want shut-down or emit-early, got "drop"`}},
		{"nullable", "version: 1\napp: a\ntopics:\n  t: {key: string, value: string, nullable: vlaue}\n", []string{`kgen.yaml:4:45: topic "t": nullable "vlaue": want key, value or both (did you mean "value"?)`}},
		{"cleanup policy", "version: 1\napp: a\ntopics:\n  t: {key: string, value: string, configs: {cleanup.policy: compacted}}\n", []string{`kgen.yaml:4:61: topic "t": configs: cleanup.policy "compacted": want delete, compact or compact,delete`}},
		{"configs not a mapping", "version: 1\napp: a\ntopics:\n  t: {key: string, value: string, configs: [a]}\n", []string{`kgen.yaml:4:44: topic "t": configs: want a mapping of config names to values, got a list`}},
		{"configs of a repartition topic", "version: 1\napp: a\ntopics:\n  t: {key: string, value: string, repartition: true, configs: {retention.ms: 1}}\n", []string{`kgen.yaml:4:64: topic "t": configs: a repartition topic is the application's own, created with the configs it needs; give configs to the user's topics only`}},
		{"duplicate", "version: 1\napp: a\ntopics:\n  t: {key: string, value: string}\n  t: {key: string, value: string}\n", []string{`kgen.yaml:5:3: topics: "t" declared twice`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("kgen.yaml", []byte(tc.spec))
			var got []string
			if err != nil {
				var es Errors
				if !errors.As(err, &es) {
					t.Fatalf("not Errors: %v", err)
				}
				got = strings.Split(es.Error(), "\n")
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTopicConfigs: a topic's configs are kept in order, values as written.
func TestTopicConfigs(t *testing.T) {
	s, err := Parse("kgen.yaml", []byte("version: 1\napp: a\ntopics:\n  t: {key: string, value: string, configs: {cleanup.policy: \"compact,delete\", retention.ms: 86400000}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range s.Topics[0].Configs {
		got = append(got, c.Key.Value+"="+c.Value.Value)
	}
	if diff := cmp.Diff([]string{"cleanup.policy=compact,delete", "retention.ms=86400000"}, got); diff != "" {
		t.Errorf("configs (-want +got):\n%s", diff)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("version: 1\napp: a\ntopics: {a: {key: string, value: string, partitions: 2}}\n"))
	f.Add([]byte("a: &x [*x, *x]\n"))
	f.Add([]byte("version: 1\nprocessors: {p: {from: p, to: [p], punctuate: [{every: 1s}]}}\n"))
	f.Add([]byte("version: 1\napp: a\n b: {c: d}\n"))
	f.Add([]byte("version: 1\napp: a\noperators: {o: {op: branch, from: t, branches: [x], default: y}, c: {op: count, from: [o-x], store: s}}\n"))
	f.Add([]byte("version: 1\napp: a\noperators: {c: {op: count, from: g, store: s, window: {hopping: {size: 5m, advance: 1m}, grace: 1s}, emit: final, idle-close: 1m}, s: {op: suppress, from: c, until: {time-limit: 1s}, buffer: {max-records: 1, when-full: emit-early}}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("kgen.yaml", data)
		if s == nil {
			t.Fatal("nil spec")
		}
		if err != nil {
			var es Errors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("parse error is not Errors: %v", err)
			}
			for _, e := range es {
				if e.Pos.File != "kgen.yaml" || e.Pos.Line < 1 {
					t.Fatalf("error without position: %v", e)
				}
			}
		}
	})
}

// TestYAMLErrorPosition: syntax errors are reported at the offending
// token, not at yaml.v3's 0-based line of the enclosing block.
func TestYAMLErrorPosition(t *testing.T) {
	for _, tc := range []struct{ name, spec, want string }{
		{"mis-indented", "version: 1\napp: a\ntopics:\n  a: {key: string, value: string}\n b: {key: string, value: string}\n", "kgen.yaml:5:2"},
		{"after comments", "# a\n# b\nversion: 1\napp: a\ntopics:\n  a: {key: string, value: string}\n\n\n  b: {key: string, value: string\n", "kgen.yaml:9:6"},
		{"unclosed list", "version: 1\napp: [broken\n", "kgen.yaml:2:6"},
		{"tab", "version: 1\napp: a\n\tb: 1\n", "kgen.yaml:3:1"},
		{"valid multi-line flow before", "version: 1\napp: a\ntopics: {a: {key: string,\n    value: string}}\nprocessors: [\n", "kgen.yaml:5:13"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("kgen.yaml", []byte(tc.spec))
			var es Errors
			if !errors.As(err, &es) || len(es) != 1 {
				t.Fatalf("want one error, got %v", err)
			}
			if got := es[0].Pos.String(); got != tc.want {
				t.Errorf("position %s, want %s (%v)", got, tc.want, es[0])
			}
		})
	}
}
