package oracle_test

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/oracle/generated"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// generatedPrefix names, for each topology that generated/kgen.yaml writes
// as operators, the prefix of its topics there.
var generatedPrefix = map[string]string{
	"filter": "filter", "filterNot": "filter-not", "map": "map", "mapValues": "map-values",
	"flatMap": "flat-map", "flatMapValues": "flat-map-values", "selectKey": "select-key", "peek": "peek",
	"branch": "branch", "branch-no-default": "branch-no-default", "foreach": "foreach", "merge": "merge",
	"count-groupByKey": "count-by-key", "reduce-groupByKey": "reduce-by-key", "aggregate-groupByKey": "aggregate-by-key",
	"count-groupBy": "count-group-by", "reduce-groupBy": "reduce-group-by", "aggregate-groupBy": "aggregate-group-by",
	"wordcount": "wordcount",
	"table":     "table", "table-count": "table-count", "table-reduce": "table-reduce", "table-aggregate": "table-aggregate",
	// The -nullable topologies the spec can express (README.md, section 4,
	// says which it cannot and why).
	"filter-nullable": "filter-nullable", "filterNot-nullable": "filter-not-nullable",
	"mapValues-nullable": "map-values-nullable", "flatMapValues-nullable": "flat-map-values-nullable",
	"peek-nullable": "peek-nullable", "foreach-nullable": "foreach-nullable", "branch-nullable": "branch-nullable",
	"count-groupByKey-nullable": "count-by-key-nullable", "reduce-groupByKey-nullable": "reduce-by-key-nullable",
	"aggregate-groupByKey-nullable": "aggregate-by-key-nullable",
	"table-nullable":                "table-nullable",
	// The windowed topologies.
	"tumbling-count": "tumbling-count", "tumbling-grace-count": "tumbling-grace-count", "hopping-count": "hopping-count",
	"sliding-count": "sliding-count", "session-count": "session-count", "tumbling-reduce": "tumbling-reduce",
	"tumbling-aggregate": "tumbling-aggregate", "session-reduce": "session-reduce", "session-aggregate": "session-aggregate",
	"tumbling-emit-final": "tumbling-emit-final", "session-emit-final": "session-emit-final",
	"tumbling-suppress": "tumbling-suppress", "emit-final-vs-suppress": "emit-final-vs-suppress",
	// The joins with tables.
	"join-table-stream-inner": "join-table-stream-inner", "join-table-stream-left": "join-table-stream-left",
	"join-table-table-inner": "join-table-table-inner", "join-table-table-left": "join-table-table-left",
	"join-table-table-outer": "join-table-table-outer",
	// The stream-stream joins.
	"join-ss-inner": "join-ss-inner", "join-ss-left": "join-ss-left", "join-ss-outer": "join-ss-outer",
	"join-ss-outer-asym": "join-ss-outer-asym",
	// The stream-global table joins, the foreign-key joins and the
	// versioned table.
	"global-join-nullable": "global-join", "global-leftJoin-nullable": "global-left-join",
	"join-fk-inner": "join-fk-inner", "join-fk-left": "join-fk-left",
	"versioned-table": "versioned-table",
	// The joins of a re-keyed stream, through the repartition topic the
	// generator inserts.
	"join-ss-rekeyed": "join-ss-rekeyed", "join-table-stream-rekeyed": "join-table-stream-rekeyed",
}

// notGenerated names the topologies kgen.yaml cannot express: a function
// of theirs gives a null, which the spec's plain output types cannot say,
// or a stream's groupBy reads nullable values (README.md, section 4).
var notGenerated = []string{
	"map-nullable", "flatMap-nullable", "selectKey-nullable", "merge-nullable",
	"count-groupBy-nullable", "aggregate-groupBy-nullable",
	"table-groupBy-nullable", "table-groupBy-nullable-reduce", "table-groupBy-nullable-aggregate",
	"reduce-delete", "table-reduce-delete", "repartition-chain",
	"join-table-stream-inner-nullable", "join-table-stream-left-nullable",
	"join-table-table-left-count", "join-table-table-materialized", "join-table-stream-count",
	"join-fk-left-count",
}

// Every topology is either written in kgen.yaml or in the README's list of
// those the spec cannot express, so a new one is not forgotten and the list
// stays true.
func TestGeneratedCoversTopologies(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(readme)
	if i := strings.Index(section, "4. `generated/`"); i >= 0 {
		section = section[i:]
	}
	if i := strings.Index(section, "\n5. "); i >= 0 {
		section = section[:i]
	}
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile("`([a-zA-Z-]+)`").FindAllStringSubmatch(section, -1) {
		listed[m[1]] = true
	}
	not := map[string]bool{}
	for _, name := range notGenerated {
		not[name] = true
		if _, ok := generatedPrefix[name]; ok {
			t.Errorf("topology %q is both generated and listed as not expressible", name)
		}
		if !listed[name] {
			t.Errorf("topology %q is not generated but README.md section 4 does not say so", name)
		}
	}
	for name := range topologies {
		if _, ok := generatedPrefix[name]; !ok && !not[name] {
			t.Errorf("topology %q is neither written in generated/kgen.yaml nor listed in notGenerated", name)
		}
	}
}

// TestGeneratedOperatorsMatchKafkaStreams runs the oracle cases of the
// topologies written as kgen.yaml operators (generated/) through the code
// kgen generate made of them: the generated wiring, the repartition topics it
// added, the user's typed functions. It must give Kafka Streams' records as
// the hand-built twins do.
func TestGeneratedOperatorsMatchKafkaStreams(t *testing.T) {
	files, err := filepath.Glob("cases/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no case files: %v", err)
	}
	ran := map[string]bool{}
	for _, f := range files {
		var c caseFile
		if err := readJSON(f, &c); err != nil {
			t.Fatal(err)
		}
		prefix, ok := generatedPrefix[c.Topology]
		if !ok {
			continue
		}
		ran[c.Topology] = true
		t.Run(c.Name, func(t *testing.T) {
			var want result
			if err := readJSON(filepath.Join("expected", c.Name+".json"), &want); err != nil {
				t.Fatal(err)
			}
			if c.Differs != "" {
				want = *c.Kgen
			}
			build := func(e *env) *stream.Topology {
				topo, err := generated.NewTopology(generated.Factories{Peeked: &e.peeked}, generated.DefaultSerdes())
				if err != nil {
					t.Fatal(err)
				}
				return topo
			}
			for _, n := range partitionCounts(c) {
				got := runCase(t, c, want, n, build, func(topic string) string { return prefix + "-" + topic })
				// The records Kafka Streams drops silently kgen counts: the
				// generated code must drop the same ones, for the same
				// reasons, as the hand-built twin.
				hand := runCase(t, c, want, n, topologies[c.Topology], func(topic string) string { return topic })
				if !maps.Equal(got, hand) {
					t.Errorf("case %s, %d partition(s): the generated topology dropped %v, the hand-built twin %v", c.Name, n, got, hand)
				}
			}
		})
	}
	for topo := range generatedPrefix {
		if !ran[topo] {
			t.Errorf("no case runs topology %q", topo)
		}
	}
}

// The spec uses every operator kind there is.
func TestGeneratedSpecUsesEveryOperator(t *testing.T) {
	spec, err := os.ReadFile("generated/kgen.yaml")
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, m := range regexp.MustCompile(`op: ([a-zA-Z]+)`).FindAllSubmatch(spec, -1) {
		used[string(m[1])] = true
	}
	var missing []string
	for _, op := range strings.Fields("filter filterNot map mapValues flatMap flatMapValues selectKey peek foreach branch merge groupByKey groupBy count reduce aggregate table toStream suppress join leftJoin outerJoin") {
		if !used[op] {
			missing = append(missing, op)
		}
	}
	if len(missing) > 0 {
		t.Errorf("generated/kgen.yaml uses no %v", missing)
	}
}
