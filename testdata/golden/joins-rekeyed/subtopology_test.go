package joinsrekeyed

import (
	"testing"

	"github.com/kgen-dev/kgen/gen"
)

// TestSubtopologiesAsTheRuntime: the sub-topology numbers kgen reports (kgen
// graph, co-partitioning) are those of the topology NewTopology builds.
func TestSubtopologiesAsTheRuntime(t *testing.T) {
	p, err := gen.Load(".")
	if err != nil {
		t.Fatal(err)
	}
	topo, err := NewTopology(Factories{}, DefaultSerdes())
	if err != nil {
		t.Fatal(err)
	}
	runtime := map[string]int{}
	for _, g := range topo.Diagram().Groups {
		for _, n := range g.Nodes {
			runtime[n.Name] = g.ID
		}
	}
	check := func(name string, id int) {
		t.Helper()
		got, ok := runtime[name]
		if !ok {
			t.Errorf("node %q: not in the runtime's topology", name)
		} else if got != id {
			t.Errorf("node %q: kgen says sub-topology %d, the runtime %d", name, id, got)
		}
	}
	for _, pr := range p.Graph.Processors {
		check(pr.Name.Value, pr.Subtopology)
	}
	for _, o := range p.Graph.Operators {
		check(o.Name.Value, o.Subtopology)
		for _, a := range o.Arms {
			check(a.Name.Value, a.Subtopology)
		}
	}
}
