package gen

import (
	"fmt"
	"strings"
)

// Mermaid draws the topology as a Mermaid flowchart: topics as stadiums,
// processors as boxes, stores as cylinders.
func Mermaid(g *Graph) string {
	var b strings.Builder
	b.WriteString("flowchart LR\n")
	for _, t := range g.Topics {
		fmt.Fprintf(&b, "    t_%s([\"%s<br/>%s\"])\n", t.Ident, t.Name.Value, t.KV)
	}
	for _, s := range g.Stores {
		fmt.Fprintf(&b, "    s_%s[(\"%s<br/>%s\")]\n", s.Ident, s.Name.Value, s.KV)
	}
	for _, p := range g.Processors {
		fmt.Fprintf(&b, "    p_%s[\"%s\"]\n", p.Ident, p.Name.Value)
	}
	for _, p := range g.Processors {
		for _, par := range p.Parents {
			if par.Topic != nil {
				fmt.Fprintf(&b, "    t_%s --> p_%s\n", par.Topic.Ident, p.Ident)
			}
		}
		for _, c := range p.Children {
			label := ""
			if p.HasOut {
				label = "|" + p.Out.String() + "|"
			}
			if c.Topic != nil {
				fmt.Fprintf(&b, "    p_%s -->%s t_%s\n", p.Ident, label, c.Topic.Ident)
			} else {
				fmt.Fprintf(&b, "    p_%s -->%s p_%s\n", p.Ident, label, c.Proc.Ident)
			}
		}
		for _, s := range p.Stores {
			fmt.Fprintf(&b, "    p_%s -.- s_%s\n", p.Ident, s.Ident)
		}
	}
	return b.String()
}

// DOT draws the topology in Graphviz's DOT language.
func DOT(g *Graph) string {
	var b strings.Builder
	fmt.Fprintf(&b, "digraph %q {\n    rankdir=LR;\n", g.Spec.App.Value)
	for _, t := range g.Topics {
		fmt.Fprintf(&b, "    %q [shape=box, style=rounded, label=%q];\n", "topic:"+t.Name.Value, t.Name.Value+"\n"+t.KV.String())
	}
	for _, s := range g.Stores {
		fmt.Fprintf(&b, "    %q [shape=cylinder, label=%q];\n", "store:"+s.Name.Value, s.Name.Value+"\n"+s.KV.String())
	}
	for _, p := range g.Processors {
		fmt.Fprintf(&b, "    %q [shape=box, label=%q];\n", "processor:"+p.Name.Value, p.Name.Value)
	}
	node := func(n Node) string {
		if n.Topic != nil {
			return "topic:" + n.Topic.Name.Value
		}
		return "processor:" + n.Proc.Name.Value
	}
	for _, p := range g.Processors {
		for _, par := range p.Parents {
			if par.Topic != nil {
				fmt.Fprintf(&b, "    %q -> %q;\n", node(par), "processor:"+p.Name.Value)
			}
		}
		for _, c := range p.Children {
			fmt.Fprintf(&b, "    %q -> %q [label=%q];\n", "processor:"+p.Name.Value, node(c), p.Out.String())
		}
		for _, s := range p.Stores {
			fmt.Fprintf(&b, "    %q -> %q [dir=none, style=dashed];\n", "processor:"+p.Name.Value, "store:"+s.Name.Value)
		}
	}
	b.WriteString("}\n")
	return b.String()
}
