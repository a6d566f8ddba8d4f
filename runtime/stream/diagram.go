package stream

import (
	"fmt"
	"strings"
)

// Diagram is a topology drawn as nodes, grouped by sub-topology, and edges.
// Topology.Mermaid and Topology.DOT render one, and so does kgen graph from a
// spec, so there is one renderer for both.
type Diagram struct {
	Name   string         // the DOT graph's name; "topology" when empty
	Nodes  []DiagramNode  // nodes outside every sub-topology (topics)
	Groups []DiagramGroup // sub-topologies
	Edges  []DiagramEdge
}

// DiagramGroup is one sub-topology.
type DiagramGroup struct {
	ID    int
	Nodes []DiagramNode
}

// DiagramKind is a node's shape.
type DiagramKind int

// Node kinds of a Diagram.
const (
	DiagramProcessor DiagramKind = iota
	DiagramSource
	DiagramSink
	DiagramStore
	DiagramTopic
)

// DiagramNode is one node: Name is unique among nodes of its kind, Detail
// an optional second line (types).
type DiagramNode struct {
	Kind   DiagramKind
	Name   string
	Detail string
}

// Key identifies the node in edges: its name, prefixed for stores and
// topics, whose names may repeat a processor's.
func (n DiagramNode) Key() string {
	switch n.Kind {
	case DiagramStore:
		return "store:" + n.Name
	case DiagramTopic:
		return "topic:" + n.Name
	}
	return n.Name
}

// DiagramEdge connects two node keys; Store edges attach a store.
type DiagramEdge struct {
	From, To string
	Label    string
	Store    bool
}

// mermaidShapes are the brackets around a node's label, by kind.
var mermaidShapes = map[DiagramKind][2]string{
	DiagramProcessor: {"[", "]"}, DiagramSource: {"[/", "/]"}, DiagramSink: {"[\\", "\\]"},
	DiagramStore: {"[(", ")]"}, DiagramTopic: {"([", "])"},
}

// Mermaid renders d as a Mermaid flowchart.
func (d Diagram) Mermaid() string {
	var b strings.Builder
	b.WriteString("flowchart LR\n")
	node := func(indent string, n DiagramNode) {
		label := n.Name
		if n.Detail != "" {
			label = fmt.Sprintf("%q", n.Name+"<br/>"+n.Detail)
		}
		shape := mermaidShapes[n.Kind]
		fmt.Fprintf(&b, "%s%s%s%s%s\n", indent, mermaidID(n.Key()), shape[0], label, shape[1])
	}
	for _, n := range d.Nodes {
		node("  ", n)
	}
	for _, g := range d.Groups {
		fmt.Fprintf(&b, "  subgraph sub%d [sub-topology %d]\n", g.ID, g.ID)
		for _, n := range g.Nodes {
			node("    ", n)
		}
		b.WriteString("  end\n")
	}
	for _, e := range d.Edges {
		arrow := "-->"
		if e.Store {
			arrow = "---"
		}
		if e.Label != "" {
			arrow += "|" + e.Label + "|"
		}
		fmt.Fprintf(&b, "  %s %s %s\n", mermaidID(e.From), arrow, mermaidID(e.To))
	}
	return b.String()
}

// DOT renders d in Graphviz's DOT language.
func (d Diagram) DOT() string {
	var b strings.Builder
	name := d.Name
	if name == "" {
		name = "topology"
	}
	fmt.Fprintf(&b, "digraph %s {\n  rankdir=LR;\n", dotID(name))
	node := func(indent string, n DiagramNode) {
		shape := map[DiagramKind]string{DiagramSource: "invhouse", DiagramProcessor: "box", DiagramSink: "house", DiagramStore: "cylinder", DiagramTopic: "box, style=rounded"}[n.Kind]
		if n.Detail != "" {
			fmt.Fprintf(&b, "%s%q [shape=%s, label=%q];\n", indent, n.Key(), shape, n.Name+"\n"+n.Detail)
			return
		}
		fmt.Fprintf(&b, "%s%q [shape=%s];\n", indent, n.Key(), shape)
	}
	for _, n := range d.Nodes {
		node("  ", n)
	}
	for _, g := range d.Groups {
		fmt.Fprintf(&b, "  subgraph cluster_%d {\n    label=\"sub-topology %d\";\n", g.ID, g.ID)
		for _, n := range g.Nodes {
			node("    ", n)
		}
		b.WriteString("  }\n")
	}
	for _, e := range d.Edges {
		switch {
		case e.Store:
			fmt.Fprintf(&b, "  %q -> %q [dir=none, style=dashed];\n", e.From, e.To)
		case e.Label != "":
			fmt.Fprintf(&b, "  %q -> %q [label=%q];\n", e.From, e.To, e.Label)
		default:
			fmt.Fprintf(&b, "  %q -> %q;\n", e.From, e.To)
		}
	}
	b.WriteString("}\n")
	return b.String()
}

// dotID quotes a graph name unless it is a plain identifier.
func dotID(s string) string {
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return fmt.Sprintf("%q", s)
		}
	}
	return s
}
