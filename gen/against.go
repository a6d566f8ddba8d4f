package gen

import (
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/kgen-dev/kgen/schema"
)

// Change is one difference between two versions of a spec that matters to
// an application already running: Breaking ones lose or strand state or
// internal topics; the others are safe and said so, so a reader knows they
// were considered.
type Change struct {
	Pos      schema.Pos // in the new spec
	Msg      string
	Breaking bool
}

func (c Change) String() string {
	kind := "safe"
	if c.Breaking {
		kind = "breaking"
	}
	return fmt.Sprintf("%s: %s: %s", c.Pos, kind, c.Msg)
}

// LoadSpecAt reads the spec to compare against: ref is a spec file, or else
// a git revision at which dir's kgen.yaml is read ("HEAD~1", "v1.2.0").
func LoadSpecAt(dir, ref string) (*schema.Spec, error) {
	if data, err := os.ReadFile(ref); err == nil {
		return schema.Parse(ref, data)
	}
	cmd := exec.Command("git", "show", ref+":./"+schema.FileName)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		msg := err.Error()
		if ee, ok := err.(*exec.ExitError); ok && len(ee.Stderr) > 0 {
			msg = strings.TrimSpace(string(ee.Stderr))
		}
		return nil, schema.Errors{{Pos: schema.Pos{File: filepath.Join(dir, schema.FileName)}, Msg: fmt.Sprintf("-against %s: neither a spec file nor a git revision that has this file: %s", ref, msg)}}
	}
	return schema.Parse(ref+":"+schema.FileName, out)
}

// changelogged says whether store s of spec has a changelog: a global
// table's store has none, whatever changelog: says (a declared one may
// leave it out, and the generator refuses true).
func changelogged(spec *schema.Spec, s *schema.Store) bool {
	if !s.Changelog {
		return false
	}
	for _, o := range spec.Operators {
		if o.Store.Value == s.Name.Value && isGlobal(o) {
			return false
		}
	}
	return true
}

// CompareSpecs reports, at the new spec's positions, every change from old
// to new that breaks the state or the internal topics of an application
// already running with old, and the changes it checked that are safe. The
// result is sorted by position.
//
// What kgen names state after: the application id (the consumer group and
// the prefix of every internal topic) and store names (changelog
// <app>-<store>-changelog); what decides which partition holds a key: the
// partition counts of the topics a sub-topology reads.
func CompareSpecs(old, new *schema.Spec) []Change {
	var out []Change
	add := func(pos schema.Pos, breaking bool, format string, args ...any) {
		out = append(out, Change{Pos: pos, Msg: fmt.Sprintf(format, args...), Breaking: breaking})
	}
	if old.App.Value != new.App.Value {
		add(new.App.Pos, true, "app changed from %q to %q: a new consumer group starts from the topics' reset offsets, and every store starts empty (changelogs %s-*-changelog are left behind)", old.App.Value, new.App.Value, old.App.Value)
	}
	app := new.App.Value

	oldStores := map[string]*schema.Store{}
	for _, s := range old.Stores {
		oldStores[s.Name.Value] = s
	}
	newStores := map[string]*schema.Store{}
	for _, s := range new.Stores {
		newStores[s.Name.Value] = s
	}
	// Stores in new but not in old, for telling a rename from an addition.
	var added []*schema.Store
	for _, s := range new.Stores {
		if oldStores[s.Name.Value] == nil {
			added = append(added, s)
		}
	}
	for _, ost := range old.Stores {
		ns := newStores[ost.Name.Value]
		if ns == nil {
			// A new store of the same types reads as a rename.
			if i := slices.IndexFunc(added, func(s *schema.Store) bool { return sameStoreTypes(ost, s) }); i >= 0 {
				s := added[i]
				added = slices.Delete(added, i, i+1)
				add(s.Name.Pos, true, "store %q looks like store %q renamed: its changelog is %s-%s-changelog, not %s-%s-changelog, so it starts empty and the old state is left behind", s.Name.Value, ost.Name.Value, app, s.Name.Value, app, ost.Name.Value)
				continue
			}
			add(removedPos(old, new, ost), true, "store %q was removed: its state and changelog %s-%s-changelog are left behind", ost.Name.Value, app, ost.Name.Value)
			continue
		}
		if ost.Key.Value != ns.Key.Value {
			add(ns.Key.Pos, true, "store %q: key type changed from %s to %s: existing entries no longer decode", ns.Name.Value, ost.Key.Value, ns.Key.Value)
		}
		if ost.Value.Value != ns.Value.Value {
			add(ns.Value.Pos, true, "store %q: value type changed from %s to %s: existing entries no longer decode", ns.Name.Value, ost.Value.Value, ns.Value.Value)
		}
		if ok, nk := cmp.Or(ost.Kind.Value, "keyvalue"), cmp.Or(ns.Kind.Value, "keyvalue"); ok != nk {
			add(posOr(ns.Kind.Pos, ns.Name.Pos), true, "store %q: kind changed from %s to %s: its entries and changelog records are laid out otherwise and no longer decode", ns.Name.Value, ok, nk)
		}
		if ost.Format.Value != ns.Format.Value {
			add(posOr(ns.Format.Pos, ns.Name.Pos), true, "store %q: format changed from %s to %s: existing entries no longer decode", ns.Name.Value, orDefault(ost.Format.Value), orDefault(ns.Format.Value))
		}
		oldLogged, newLogged := changelogged(old, ost), changelogged(new, ns)
		switch {
		case oldLogged && !newLogged:
			add(ns.Name.Pos, true, "store %q is no longer changelogged: its state is lost when an instance moves or restarts without local state, and %s-%s-changelog is left behind", ns.Name.Value, app, ns.Name.Value)
		case !oldLogged && newLogged:
			add(ns.Name.Pos, false, "store %q is now changelogged: %s-%s-changelog starts empty, so state held only locally so far is not in it", ns.Name.Value, app, ns.Name.Value)
		}
		if backendOf(ost) != backendOf(ns) {
			safe := newLogged
			msg := "restored from its changelog"
			if !safe {
				msg = "not restored: the store has no changelog"
			}
			add(posOr(ns.Backend.Pos, ns.Name.Pos), !safe, "store %q: backend changed from %s to %s: the state is %s", ns.Name.Value, backendOf(ost), backendOf(ns), msg)
		}
	}
	for _, s := range added {
		add(s.Name.Pos, false, "store %q is new: it starts empty", s.Name.Value)
	}

	oldTopics := map[string]*schema.Topic{}
	for _, t := range old.Topics {
		oldTopics[t.Name.Value] = t
	}
	read := readTopics(old)
	for t := range readTopics(new) {
		read[t] = true
	}
	for _, nt := range new.Topics {
		ot := oldTopics[nt.Name.Value]
		if ot == nil || ot.Partitions == nt.Partitions {
			continue
		}
		pos := posOr(nt.PartitionsPos, nt.Name.Pos)
		if !read[nt.Name.Value] {
			// Tasks and their state follow the partitions of the topics the
			// app reads; one it only writes moves no state of the app's.
			add(pos, false, "topic %q: partitions changed from %s to %s: the app only writes this topic, so none of its state moves; its consumers that keep state per partition see a key's new records on another partition than its earlier ones", nt.Name.Value, partitionsText(ot.Partitions), partitionsText(nt.Partitions))
			continue
		}
		add(pos, true, "topic %q: partitions changed from %s to %s: keys move to other partitions, so state kept per partition no longer sits with its keys", nt.Name.Value, partitionsText(ot.Partitions), partitionsText(nt.Partitions))
	}

	newProcs := map[string]bool{}
	for _, p := range new.Processors {
		newProcs[p.Name.Value] = true
	}
	for _, op := range old.Processors {
		if !newProcs[op.Name.Value] {
			add(new.App.Pos, false, "processor %q was removed or renamed: kgen names state after stores, not processors, so no state is renamed by this alone", op.Name.Value)
		}
	}
	// Sub-topologies decide task ids (sub-topology, partition), and so
	// which local state a task opens, and which topics are co-partitioned.
	oldSubs, newSubs := specSubtopologies(old), specSubtopologies(new)
	for _, ns := range new.Stores {
		ost := oldStores[ns.Name.Value]
		if ost == nil {
			continue
		}
		was, okOld := oldSubs.store[ns.Name.Value]
		is, okNew := newSubs.store[ns.Name.Value]
		if !okOld || !okNew || was == is {
			continue
		}
		if ns.Changelog {
			add(ns.Name.Pos, false, "store %q moves from sub-topology %d to %d: its tasks get new ids, so they restore it from %s-%s-changelog instead of opening their local state", ns.Name.Value, was, is, app, ns.Name.Value)
		} else {
			add(ns.Name.Pos, true, "store %q moves from sub-topology %d to %d: its tasks get new ids and it has no changelog, so its state is lost", ns.Name.Value, was, is)
		}
	}
	compareOperators(old, new, add)
	compareRekeyedTopics(old, new, add)
	newTopicPos := map[string]schema.Pos{}
	for _, t := range new.Topics {
		newTopicPos[t.Name.Value] = t.Name.Pos
	}
	for i, a := range old.Topics {
		for _, b := range old.Topics[i+1:] {
			sa, okA := oldSubs.topic[a.Name.Value]
			sb, okB := oldSubs.topic[b.Name.Value]
			if !okA || !okB || sa != sb {
				continue
			}
			na, okA := newSubs.topic[a.Name.Value]
			nb, okB := newSubs.topic[b.Name.Value]
			if !okA || !okB || na == nb {
				continue
			}
			add(newTopicPos[b.Name.Value], true, "topics %q and %q were read by one sub-topology (co-partitioned) and now by sub-topologies %d and %d: their tasks and the state those hold are split apart, and records of one key no longer meet in one task", a.Name.Value, b.Name.Value, na, nb)
		}
	}
	slices.SortStableFunc(out, func(a, b Change) int {
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line - b.Pos.Line
		}
		if a.Pos.Col != b.Pos.Col {
			return a.Pos.Col - b.Pos.Col
		}
		return strings.Compare(a.Msg, b.Msg)
	})
	return out
}

// readTopics names the topics s reads: from processors and operators, and
// the topics tables read.
func readTopics(s *schema.Spec) map[string]bool {
	out := map[string]bool{}
	for _, p := range s.Processors {
		for _, f := range p.From {
			out[f.Value] = true
		}
	}
	for _, o := range s.Operators {
		for _, f := range o.From {
			out[f.Value] = true
		}
		if o.Topic.Value != "" {
			out[o.Topic.Value] = true
		}
	}
	return out
}

func sameStoreTypes(a, b *schema.Store) bool {
	return a.Key.Value == b.Key.Value && a.Value.Value == b.Value.Value && a.Format.Value == b.Format.Value
}

// removedPos is where to report that store s of the old spec is gone: at a
// processor of the new spec that owned it, else at app.
func removedPos(old, new *schema.Spec, s *schema.Store) schema.Pos {
	owners := map[string]bool{}
	for _, p := range old.Processors {
		if slices.ContainsFunc(p.Stores, func(n schema.Str) bool { return n.Value == s.Name.Value }) {
			owners[p.Name.Value] = true
		}
	}
	for _, p := range new.Processors {
		if owners[p.Name.Value] {
			return p.Name.Pos
		}
	}
	return new.App.Pos
}

func posOr(p, fallback schema.Pos) schema.Pos {
	if p.Line == 0 {
		return fallback
	}
	return p
}

func backendOf(s *schema.Store) string {
	if s.Backend.Value == "" {
		return schema.BackendMemory
	}
	return s.Backend.Value
}

func orDefault(s string) string {
	if s == "" {
		return "the default"
	}
	return s
}

func partitionsText(n int) string {
	if n == 0 {
		return "unset (the broker's default)"
	}
	return fmt.Sprint(n)
}

// subtopologyMap says which sub-topology reads each topic and holds each
// store, by name.
type subtopologyMap struct{ topic, store map[string]int }

// specSubtopologies numbers the sub-topologies of a parsed spec with the
// runtime's computation, from names alone (types need not resolve, so an
// old spec whose types are gone can still be compared).
func specSubtopologies(s *schema.Spec) subtopologyMap {
	topics := map[string]bool{}
	for _, t := range s.Topics {
		topics[t.Name.Value] = true
	}
	procs := map[string]bool{}
	for _, p := range s.Processors {
		procs[p.Name.Value] = true
	}
	shape := stream.TopologyShape{Sources: map[string]bool{}, Children: map[string][]string{}}
	readers := map[string][]string{}
	for _, p := range s.Processors {
		for _, f := range p.From {
			switch {
			case topics[f.Value]:
				readers[f.Value] = append(readers[f.Value], p.Name.Value)
			case procs[f.Value]:
				shape.Children["processor:"+f.Value] = append(shape.Children["processor:"+f.Value], "processor:"+p.Name.Value)
			}
		}
		for _, t := range p.To {
			if procs[t.Value] {
				shape.Children["processor:"+p.Name.Value] = append(shape.Children["processor:"+p.Name.Value], "processor:"+t.Value)
			}
		}
	}
	for _, t := range s.Topics {
		if len(readers[t.Name.Value]) == 0 {
			continue
		}
		src := "source:" + t.Name.Value
		shape.Nodes = append(shape.Nodes, src)
		shape.Sources[src] = true
		for _, r := range readers[t.Name.Value] {
			shape.Children[src] = append(shape.Children[src], "processor:"+r)
		}
	}
	for _, p := range s.Processors {
		shape.Nodes = append(shape.Nodes, "processor:"+p.Name.Value)
	}
	owners := map[string][]string{}
	for _, p := range s.Processors {
		for _, st := range p.Stores {
			owners[st.Value] = append(owners[st.Value], "processor:"+p.Name.Value)
		}
	}
	for _, st := range s.Stores {
		if len(owners[st.Name.Value]) > 0 {
			shape.StoreOwners = append(shape.StoreOwners, owners[st.Name.Value])
		}
	}
	ids := shape.Subtopologies()
	m := subtopologyMap{topic: map[string]int{}, store: map[string]int{}}
	for t := range readers {
		if id, ok := ids["source:"+t]; ok {
			m.topic[t] = id
		}
	}
	for st, os := range owners {
		if id, ok := ids[os[0]]; ok {
			m.store[st] = id
		}
	}
	return m
}

// compareOperators reports the changes to operators that strand state or
// internal topics: the store of an aggregation or table renamed, dropped or
// given rows of another kind (what a kind keeps is its descriptor's Rows),
// and what each kind's own rule (its descriptor's Against) finds, such as a
// grouping renamed or removed (its repartition topic, with the records not
// yet read from it, is left behind).
// Stores declared under stores are compared by CompareSpecs itself.
func compareOperators(old, new *schema.Spec, add func(pos schema.Pos, breaking bool, format string, args ...any)) {
	app := new.App.Value
	declared := func(s *schema.Spec, name string) bool {
		return slices.ContainsFunc(s.Stores, func(st *schema.Store) bool { return st.Name.Value == name })
	}
	// rows says what an operator keeps in its store, from the spec alone.
	rows := func(o *schema.Operator) string {
		if k := specKind(o); k != nil && k.Rows != nil {
			return k.Rows(o)
		}
		return "rows of op " + o.Op.Value
	}
	oldByStore := map[string]*schema.Operator{}
	for _, o := range old.Operators {
		if o.Store.Value != "" {
			oldByStore[o.Store.Value] = o
		}
	}
	newByStore := map[string]*schema.Operator{}
	newByName := map[string]*schema.Operator{}
	for _, o := range new.Operators {
		newByName[o.Name.Value] = o
		if o.Store.Value == "" {
			continue
		}
		newByStore[o.Store.Value] = o
		was, ok := oldByStore[o.Store.Value]
		switch {
		case !ok && !declared(old, o.Store.Value) && !declared(new, o.Store.Value):
			add(o.Store.Pos, false, "store %q of operator %q is new: it starts empty", o.Store.Value, o.Name.Value)
		case ok && rows(was) != rows(o) && isGlobal(o):
			add(o.Store.Pos, false, "store %q is now global table %q's: it is filled from topic %s on every instance (the old store's changelog is left behind)", o.Store.Value, o.Name.Value, o.Topic.Value)
		case ok && rows(was) != rows(o) && isGlobal(was):
			add(o.Store.Pos, true, "store %q was global table %q's and now keeps %s: a global table's store has no changelog, so it starts empty", o.Store.Value, was.Name.Value, rows(o))
		case ok && rows(was) != rows(o):
			add(o.Store.Pos, true, "store %q kept %s and now keeps %s: existing entries no longer decode", o.Store.Value, rows(was), rows(o))
		}
	}
	for _, o := range old.Operators {
		st := o.Store.Value
		if st == "" || newByStore[st] != nil || declared(new, st) {
			continue
		}
		pos := new.App.Pos
		if n := newByName[o.Name.Value]; n != nil {
			pos = posOr(n.Store.Pos, n.Name.Pos)
		}
		if isGlobal(o) {
			add(pos, false, "store %q of global table %q is gone: it had no changelog (it was filled from topic %s), so nothing is left behind", st, o.Name.Value, o.Topic.Value)
			continue
		}
		add(pos, true, "store %q of operator %q is gone: its state is lost (%s-%s-changelog is left behind)", st, o.Name.Value, app, st)
	}
	c := &againstCtx{App: app, AppPos: new.App.Pos, add: add}
	for _, o := range old.Operators {
		if k := specKind(o); k != nil && k.Against != nil {
			k.Against(c, o, newByName[o.Name.Value])
		}
	}
}

// isGlobal says spec operator o is a global table.
func isGlobal(o *schema.Operator) bool {
	k := specKind(o)
	return k != nil && k.Global
}
