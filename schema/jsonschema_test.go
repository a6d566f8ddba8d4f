package schema

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestJSONSchemaMatchesLoader checks that every property the JSON Schema
// allows is a key the loader accepts, and that the loader accepts no key the
// schema does not list, section by section.
func TestJSONSchemaMatchesLoader(t *testing.T) {
	var js struct {
		Properties  map[string]json.RawMessage `json:"properties"`
		Definitions map[string]struct {
			Properties map[string]struct {
				Properties map[string]any `json:"properties"`
				Items      struct {
					Properties map[string]any `json:"properties"`
				} `json:"items"`
			} `json:"properties"`
		} `json:"definitions"`
	}
	if err := json.Unmarshal(JSONSchema, &js); err != nil {
		t.Fatalf("kgen.schema.json: %v", err)
	}
	keys := func(m map[string]any) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	var top []string
	for k := range js.Properties {
		top = append(top, k)
	}
	slices.Sort(top)
	sections := map[string][]string{
		"spec":      top,
		"topic":     keys(anyMap(js.Definitions["topic"].Properties)),
		"store":     keys(anyMap(js.Definitions["store"].Properties)),
		"processor": keys(anyMap(js.Definitions["processor"].Properties)),
		"forward":   keys(js.Definitions["processor"].Properties["forward"].Properties),
		"punctuate": keys(js.Definitions["processor"].Properties["punctuate"].Items.Properties),
		"operator":  keys(anyMap(js.Definitions["operator"].Properties)),
	}
	// A spec using every key the schema lists must load without an
	// "unknown key" error.
	spec := `version: 1
app: a
package: a
types: {go: [./model], avro: [x.avsc]}
topics:
  t: {key: string, value: string, format: string, key-format: string, partitions: 1, timestamp: ts, repartition: false, nullable: both, windowed: false, configs: {cleanup.policy: compact}}
stores:
  s: {kind: keyvalue, key: string, value: string, format: json, backend: memory, changelog: true, queryable: true}
processors:
  p: {from: [t], to: [t], forward: {key: string, value: string}, stores: [s], rekeys: false, punctuate: [{name: n, every: 1s, time: wall-clock}]}
operators:
  o: {op: groupBy, from: [t], to: [t], key: string, value: string, store: s, topic: t, branches: [a], default: b, partitions: 2,
    window: {tumbling: 1m, grace: 1s}, emit: final, idle-close: 1m, grace: 1s, until: window-closes, buffer: {max-records: 1, max-bytes: 1, when-full: shut-down},
    versioned: {history: 1h}, foreign-key: true}
`
	_, err := Parse("kgen.yaml", []byte(spec))
	if err != nil && strings.Contains(err.Error(), "unknown key") {
		t.Fatalf("the loader rejects a key of the schema: %v", err)
	}
	used := map[string][]string{
		"spec":      {"app", "operators", "package", "processors", "stores", "topics", "types", "version"},
		"topic":     {"configs", "format", "key", "key-format", "nullable", "partitions", "repartition", "timestamp", "value", "windowed"},
		"store":     {"backend", "changelog", "format", "key", "kind", "queryable", "value"},
		"processor": {"forward", "from", "punctuate", "rekeys", "stores", "to"},
		"forward":   {"key", "value"},
		"punctuate": {"every", "name", "time"},
		"operator":  {"branches", "buffer", "default", "emit", "foreign-key", "from", "grace", "idle-close", "key", "op", "partitions", "store", "to", "topic", "until", "value", "versioned", "window"},
	}
	for section, want := range used {
		if got := sections[section]; !slices.Equal(want, got) {
			t.Errorf("%s: schema lists %v, the spec above uses %v", section, got, want)
		}
	}
}

func anyMap[V any](m map[string]V) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}
