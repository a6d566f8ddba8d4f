package gen

import (
	"slices"

	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/kgen-dev/kgen/schema"
)

// Diagram describes the topology of a resolved spec for drawing, with the
// runtime's renderer (stream.Diagram), so kgen graph and a running
// topology's Mermaid and DOT are drawn by one piece of code. Topics sit
// outside the sub-topologies they connect and carry their key and value
// types; edges out of a processor carry what it forwards.
func Diagram(g *Graph) stream.Diagram {
	d := stream.Diagram{Name: g.Spec.App.Value}
	for _, t := range g.Topics {
		detail := t.KV.String()
		if t.Repartition {
			// The app's own topic, where the sub-topologies it separates meet.
			detail += ", repartition topic " + g.Spec.App.Value + "-" + t.Name.Value + "-repartition"
		}
		d.Nodes = append(d.Nodes, stream.DiagramNode{Kind: stream.DiagramTopic, Name: t.Name.Value, Detail: detail})
	}
	groups := map[int]int{} // sub-topology -> index in d.Groups
	placed := map[*StoreNode]bool{}
	for _, p := range g.Processors {
		i, ok := groups[p.Subtopology]
		if !ok {
			i = len(d.Groups)
			groups[p.Subtopology] = i
			d.Groups = append(d.Groups, stream.DiagramGroup{ID: p.Subtopology})
		}
		grp := &d.Groups[i]
		grp.Nodes = append(grp.Nodes, stream.DiagramNode{Kind: stream.DiagramProcessor, Name: p.Name.Value})
		for _, s := range p.Stores {
			if !placed[s] {
				placed[s] = true
				detail := s.KV.String()
				if s.WindowKind != "" {
					detail += ", " + s.WindowKind + " store"
				}
				grp.Nodes = append(grp.Nodes, stream.DiagramNode{Kind: stream.DiagramStore, Name: s.Name.Value, Detail: detail})
			}
		}
	}
	group := func(id int) *stream.DiagramGroup {
		i, ok := groups[id]
		if !ok {
			i = len(d.Groups)
			groups[id] = i
			d.Groups = append(d.Groups, stream.DiagramGroup{ID: id})
		}
		return &d.Groups[i]
	}
	// Operators are drawn as the nodes they are, with their kind; a
	// grouping that repartitions sits before its repartition topic, drawn
	// as the topic it is, and the aggregations read that topic.
	for _, o := range g.allOps() {
		kind := o.kind.Name
		if o.Windows != nil && o.kind.Aggregation {
			kind += " " + o.Windows.String() // its windows, as the spec writes them
		}
		if o.kind.Inputs == leftRight && o.Window != nil {
			kind += " " + o.Window.String() // a stream-stream join's window
		}
		if o.Emit.Value == schema.EmitFinal {
			kind += ", emit final"
		}
		if o.kind.Global {
			// Every instance holds it whole: it is in no sub-topology.
			d.Nodes = append(d.Nodes, stream.DiagramNode{Kind: stream.DiagramProcessor, Name: o.Name.Value, Detail: kind})
			if s := o.Rows; s != nil {
				placed[s] = true
				d.Nodes = append(d.Nodes, stream.DiagramNode{Kind: stream.DiagramStore, Name: s.Name.Value, Detail: s.KV.String() + ", global store"})
			}
			continue
		}
		grp := group(o.Subtopology)
		for i, s := range o.Rekeyed {
			if s != nil {
				// A join's side read through its own repartition topic.
				d.Nodes = append(d.Nodes, stream.DiagramNode{Kind: stream.DiagramTopic, Name: o.sideTopic(o.Parents[i]), Detail: o.Ins[i].String() + ", repartition topic"})
			}
		}
		if rt := o.groupingTopic(); rt != nil {
			grp = group(o.UpSubtopology)
			topic := rt.Name
			d.Nodes = append(d.Nodes, stream.DiagramNode{Kind: stream.DiagramTopic, Name: topic, Detail: o.Out.String() + ", repartition topic"})
		}
		grp.Nodes = append(grp.Nodes, stream.DiagramNode{Kind: stream.DiagramProcessor, Name: o.Name.Value, Detail: kind})
		if s := o.Rows; s != nil && !placed[s] {
			placed[s] = true
			detail := s.KV.String()
			if s.WindowKind != "" {
				detail += ", " + s.WindowKind + " store"
			}
			if s.Flavor != "" {
				detail += ", " + s.Flavor + " store"
			}
			grp.Nodes = append(grp.Nodes, stream.DiagramNode{Kind: stream.DiagramStore, Name: s.Name.Value, Detail: detail})
		}
		for _, in := range o.Internal {
			switch {
			case in.Topic:
			case in.RuntimeSerdes:
				// A foreign-key join's subscriptions live with the right
				// table, in the runtime's encoding.
				right := group(o.Parents[1].Op.Subtopology)
				right.Nodes = append(right.Nodes, stream.DiagramNode{Kind: stream.DiagramStore, Name: in.Name, Detail: in.What})
			default:
				grp.Nodes = append(grp.Nodes, stream.DiagramNode{Kind: stream.DiagramStore, Name: in.Name, Detail: in.KV.String()})
			}
		}
	}
	slices.SortFunc(d.Groups, func(a, b stream.DiagramGroup) int { return a.ID - b.ID })
	key := func(n Node) string {
		switch {
		case n.Topic != nil:
			return "topic:" + n.Topic.Name.Value
		}
		return n.Name()
	}
	// to is where an edge from parent from to child c ends: c, or the
	// repartition topic c reads from through.
	to := func(from, c Node) string {
		if c.Op != nil {
			if t := c.Op.sideTopic(from); t != "" {
				return "topic:" + t
			}
		}
		return key(c)
	}
	for _, p := range g.Processors {
		for _, par := range p.Parents {
			if par.Topic != nil {
				d.Edges = append(d.Edges, stream.DiagramEdge{From: key(par), To: p.Name.Value})
			}
		}
		for _, c := range p.Children {
			e := stream.DiagramEdge{From: p.Name.Value, To: to(Node{Proc: p}, c)}
			if p.HasOut {
				e.Label = p.Out.String()
			}
			d.Edges = append(d.Edges, e)
		}
		for _, s := range p.Stores {
			d.Edges = append(d.Edges, stream.DiagramEdge{From: p.Name.Value, To: "store:" + s.Name.Value, Store: true})
		}
	}
	for _, o := range g.allOps() {
		for i, par := range o.Parents {
			if t := o.sideTopic(par); t != "" {
				d.Edges = append(d.Edges, stream.DiagramEdge{From: "topic:" + t, To: o.Name.Value, Label: o.Ins[i].String()})
			}
			if par.Topic != nil {
				d.Edges = append(d.Edges, stream.DiagramEdge{From: key(par), To: to(par, Node{Op: o})})
			}
		}
		from := o.Name.Value
		rt := o.groupingTopic()
		if rt != nil {
			d.Edges = append(d.Edges, stream.DiagramEdge{From: from, To: "topic:" + rt.Name, Label: o.Out.String()})
		}
		for _, c := range o.Children {
			e := stream.DiagramEdge{From: from, To: to(Node{Op: o}, c)}
			if rt != nil {
				e.From = "topic:" + rt.Name
			} else if o.HasOut {
				e.Label = o.Out.String()
			}
			d.Edges = append(d.Edges, e)
		}
		if o.Rows != nil {
			d.Edges = append(d.Edges, stream.DiagramEdge{From: o.Name.Value, To: "store:" + o.Rows.Name.Value, Store: true})
		}
		for _, in := range o.Internal {
			if !in.Topic {
				d.Edges = append(d.Edges, stream.DiagramEdge{From: o.Name.Value, To: "store:" + in.Name, Store: true})
			}
		}
	}
	return d
}

// Mermaid draws the topology as a Mermaid flowchart.
func Mermaid(g *Graph) string { return Diagram(g).Mermaid() }

// DOT draws the topology in Graphviz's DOT language.
func DOT(g *Graph) string { return Diagram(g).DOT() }
