package appmain

import (
	_ "embed"
	"encoding/json"
	"net/http"
	"sort"

	"github.com/kgen-dev/kgen/runtime/stream"
)

// livePageHTML is the live page: HTML and a little JavaScript, embedded so
// the binary needs no files, no build step and no CDN.
//
//go:embed page/index.html
var livePageHTML []byte

// Status is what /v1/status answers: this instance, its tasks, every
// instance of the group with the tasks the last assignment gave it, the
// stores, and the topology to draw.
type Status struct {
	App       string           `json:"app"`
	Instance  stream.Instance  `json:"instance"`
	State     string           `json:"state"`
	Processed uint64           `json:"processed"`
	Gen       int32            `json:"generation"`
	Tasks     []StatusTask     `json:"tasks"`
	Instances []StatusInstance `json:"instances"`
	Stores    []StatusStore    `json:"stores"`
	Topology  StatusTopology   `json:"topology"`
	// StandbyLag is the changelog records this instance's standbys have
	// yet to apply (the runtime counts it for all of them together).
	StandbyLag int64 `json:"standbyLag"`
}

// StatusTask is one task held here: active (running or restoring) or
// standby.
type StatusTask struct {
	ID        string `json:"id"`
	Role      string `json:"role"` // "active" or "standby"
	Restoring bool   `json:"restoring,omitempty"`
	// Lag is, for an active task, the input records past what it
	// processed; RestoreRemaining the changelog records it has yet to
	// restore.
	Lag              int64  `json:"lag"`
	RestoreRemaining int64  `json:"restoreRemaining,omitempty"`
	Processed        uint64 `json:"processed"`
}

// StatusInstance is one instance of the group, from the owners of the
// last assignment this instance received.
type StatusInstance struct {
	stream.Instance
	Self     bool     `json:"self,omitempty"`
	Active   []string `json:"active"`
	Standbys []string `json:"standbys"`
}

// StatusStore is one store of the topology; Queryable when /v1/stores/
// {name}/keys/{key} serves it.
type StatusStore struct {
	Name        string `json:"name"`
	Subtopology int    `json:"subtopology"`
	Queryable   bool   `json:"queryable"`
}

// StatusTopology is stream.Diagram with kinds spelled out, for the page.
type StatusTopology struct {
	Groups []StatusGroup        `json:"groups"`
	Edges  []stream.DiagramEdge `json:"edges"`
}

// StatusGroup is one sub-topology's nodes.
type StatusGroup struct {
	ID    int          `json:"id"`
	Nodes []StatusNode `json:"nodes"`
}

// StatusNode is one node; Key names it in edges.
type StatusNode struct {
	Key  string `json:"key"`
	Name string `json:"name"`
	Kind string `json:"kind"` // source, processor, sink, store, topic
}

var diagramKinds = map[stream.DiagramKind]string{stream.DiagramSource: "source", stream.DiagramProcessor: "processor",
	stream.DiagramSink: "sink", stream.DiagramStore: "store", stream.DiagramTopic: "topic"}

// statusTopology is d as the page reads it. The diagram is fixed for the
// app's life, so it is built once.
func statusTopology(d stream.Diagram) (StatusTopology, []StatusStore) {
	st := StatusTopology{Edges: d.Edges}
	var stores []StatusStore
	for _, g := range d.Groups {
		sg := StatusGroup{ID: g.ID}
		for _, n := range g.Nodes {
			sg.Nodes = append(sg.Nodes, StatusNode{Key: n.Key(), Name: n.Name, Kind: diagramKinds[n.Kind]})
			if n.Kind == stream.DiagramStore {
				stores = append(stores, StatusStore{Name: n.Name, Subtopology: g.ID})
			}
		}
		st.Groups = append(st.Groups, sg)
	}
	if st.Edges == nil {
		st.Edges = []stream.DiagramEdge{}
	}
	return st, stores
}

// LivePage serves the live page of app at / and its data at /v1/status:
// the topology t (the one app runs), the instances of the group and their
// tasks, this instance's tasks with their lag, and a lookup box for each
// store in queryable, which the page asks at /v1/stores/{store}/keys/{key}
// (mounted by App.Queries). The page refreshes itself every 2 seconds.
// Run mounts it on the ops endpoints; anything else is answered by next.
func LivePage(app *stream.App, t *stream.Topology, queryable []string, next http.Handler) http.Handler {
	topo, stores := statusTopology(t.Diagram())
	q := map[string]bool{}
	for _, s := range queryable {
		q[s] = true
	}
	for i := range stores {
		stores[i].Queryable = q[stores[i].Name]
	}
	mux := http.NewServeMux()
	mux.Handle("/", next)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		w.Write(livePageHTML)
	})
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, _ *http.Request) {
		s := status(app, topo, stores)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		json.NewEncoder(w).Encode(s)
	})
	return mux
}

// status gathers the page's data; everything it reads is safe to read
// while the app runs (the units' published snapshot, the owner map).
func status(app *stream.App, topo StatusTopology, stores []StatusStore) Status {
	st := app.Stats()
	me := app.InstanceID()
	s := Status{App: app.AppID(), Instance: stream.Instance{ID: me}, State: app.State().String(), Processed: st.Processed,
		Gen: st.Generation, StandbyLag: st.StandbyLag, Topology: topo, Stores: stores, Tasks: []StatusTask{}, Instances: []StatusInstance{}}
	for id, ts := range st.Tasks {
		s.Tasks = append(s.Tasks, StatusTask{ID: id.String(), Role: "active", Restoring: ts.Restoring, Lag: ts.Lag,
			RestoreRemaining: ts.RestoreRemaining, Processed: ts.Processed})
	}
	for _, id := range st.Standbys {
		s.Tasks = append(s.Tasks, StatusTask{ID: id.String(), Role: "standby"})
	}
	sort.Slice(s.Tasks, func(i, j int) bool {
		if s.Tasks[i].Role != s.Tasks[j].Role {
			return s.Tasks[i].Role == "active"
		}
		return s.Tasks[i].ID < s.Tasks[j].ID
	})
	byID := map[string]*StatusInstance{}
	inst := func(in stream.Instance) *StatusInstance {
		if p := byID[in.ID]; p != nil {
			return p
		}
		p := &StatusInstance{Instance: in, Self: in.ID == me, Active: []string{}, Standbys: []string{}}
		byID[in.ID] = p
		return p
	}
	for _, loc := range app.Owners() {
		if loc.Active.ID != "" {
			a := inst(loc.Active)
			a.Active = append(a.Active, loc.Task.String())
			if a.Self {
				s.Instance = loc.Active
			}
		}
		for _, sb := range loc.Standbys {
			b := inst(sb)
			b.Standbys = append(b.Standbys, loc.Task.String())
		}
	}
	inst(s.Instance) // listed even before its first assignment
	for _, p := range byID {
		s.Instances = append(s.Instances, *p)
	}
	sort.Slice(s.Instances, func(i, j int) bool { return s.Instances[i].ID < s.Instances[j].ID })
	return s
}
