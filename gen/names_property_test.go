package gen

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/schema"
)

// TestNamesNeverClash states the namer's invariant once and checks it over
// generated specs: whenever a spec resolves, no two things of the
// application share a topic name (topics, repartition topics, changelogs,
// operators' internal topics), a store name, a runtime node name or a Serdes
// field. Names are drawn from a small set of hyphenated words, so that
// derived names (<op>-<role>, <app>-<x>-repartition) often meet.
func TestNamesNeverClash(t *testing.T) {
	withTestJoin(t)
	words := []string{"a", "b", "a-b", "b-left", "a-left", "left", "x", "x-repartition", "a-b-left"}
	kinds := []string{"groupByKey", "groupBy", "repartition", "selectKey", "testJoin", "filter"}
	rng := rand.New(rand.NewPCG(1, 17))
	resolved, rejected := 0, 0
	for i := range 400 {
		var b strings.Builder
		b.WriteString("version: 1\napp: a\ntopics:\n  in: {key: string, value: string}\n  other: {key: string, value: int64}\n")
		if rng.IntN(3) == 0 {
			fmt.Fprintf(&b, "  %s: {key: string, value: string}\n", "a-"+words[rng.IntN(len(words))]+"-changelog")
		}
		b.WriteString("operators:\n")
		used := map[string]bool{"in": true, "other": true}
		for range 1 + rng.IntN(4) {
			name := words[rng.IntN(len(words))]
			if used[name] {
				continue
			}
			used[name] = true
			switch kind := kinds[rng.IntN(len(kinds))]; kind {
			case "groupByKey", "groupBy":
				key := ""
				if kind == "groupBy" {
					key = ", key: string"
				}
				store := words[rng.IntN(len(words))]
				fmt.Fprintf(&b, "  %s: {op: %s, from: [in]%s}\n  %s-count: {op: count, from: [%s], store: %s}\n", name, kind, key, name, name, store)
				used[name+"-count"] = true
			case "testJoin":
				fmt.Fprintf(&b, "  %s: {op: testJoin, from: [in, other], value: string}\n", name)
			case "selectKey":
				fmt.Fprintf(&b, "  %s: {op: selectKey, from: [in], key: string}\n", name)
			default:
				fmt.Fprintf(&b, "  %s: {op: %s, from: [in]}\n", name, kind)
			}
		}
		spec := b.String()
		s, err := schema.Parse("kgen.yaml", []byte(spec))
		if err != nil {
			t.Fatalf("spec %d does not parse: %v\n%s", i, err, spec)
		}
		g, err := Resolve(s, universe(), "example.com/m")
		if err != nil {
			var errs schema.Errors
			if !errors.As(err, &errs) {
				t.Fatalf("spec %d: internal error %v\n%s", i, err, spec)
			}
			rejected++
			continue
		}
		resolved++
		if dup := duplicateNames(g); dup != "" {
			t.Fatalf("spec %d resolves, yet %s\n%s", i, dup, spec)
		}
	}
	t.Logf("%d resolved, %d rejected", resolved, rejected)
	if resolved == 0 || rejected == 0 {
		t.Fatalf("%d resolved, %d rejected: the specs no longer test both paths", resolved, rejected)
	}
}

// duplicateNames computes, from the resolved graph and apart from the
// namer, the names the application will use, and says which is used twice.
func duplicateNames(g *Graph) string {
	app := g.Spec.App.Value
	seen := map[string]map[string]bool{}
	dup := ""
	use := func(space, name string) {
		if seen[space] == nil {
			seen[space] = map[string]bool{}
		}
		if seen[space][name] && dup == "" {
			dup = fmt.Sprintf("%s %q is used twice", space, name)
		}
		seen[space][name] = true
	}
	for _, t := range g.Topics {
		if t.Repartition {
			use("topic", app+"-"+t.Name.Value+"-repartition")
		} else {
			use("topic", t.Name.Value)
			use("node", t.Name.Value+"-source")
			use("node", t.Name.Value+"-sink")
		}
		use("serde", t.Go.KeySerde)
		use("serde", t.Go.ValueSerde)
	}
	for _, s := range g.Stores {
		use("store", s.Name.Value)
		if s.Changelog {
			use("topic", app+"-"+s.Name.Value+"-changelog")
		}
		use("serde", s.Go.KeySerde)
		use("serde", s.Go.ValueSerde)
	}
	for _, p := range g.Processors {
		use("node", p.Name.Value)
	}
	for _, o := range g.allOps() {
		for _, n := range o.nodes() {
			use("node", o.Name.Value+n.Suffix)
		}
		for _, in := range o.Internal {
			if !in.Topic {
				use("store", in.Name)
				use("topic", app+"-"+in.Name+"-changelog")
				use("serde", in.KeySerde)
				use("serde", in.ValueSerde)
				continue
			}
			use("topic", in.Name)
			use("serde", in.KeySerde)
			use("serde", in.ValueSerde)
		}
	}
	return dup
}
