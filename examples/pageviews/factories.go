package pageviews

import (
	"github.com/kgen-dev/kgen/examples/pageviews/model"
)

// Factories makes the processors of kgen.yaml for the runtime: one method per
// processor, each called once per task. Pass it to NewTestDriver, Run or Main.
// Its other methods are the functions of the operators, called from every
// task at once: keep them free of shared mutable state.
// kgen wrote this file once and will not touch it again: it is yours to edit
// (give Factories fields for what your processors need, such as configuration).
// When the spec gains a processor, the line below stops compiling until
// Factories has its method.
type Factories struct{}

var _ Processors = Factories{}

// ByUser is the key selector of groupBy "by-user": a view is counted for its
// user, whatever page (the topic's key) it was.
func (Factories) ByUser(page string, view model.PageView) string { return view.User }
