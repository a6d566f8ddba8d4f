package windows

import "github.com/kgen-dev/kgen/runtime/dsl"

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

// CloseByInit is the initializer of windowed aggregate "close-by": the aggregate of a key's window before its first record.
func (Factories) CloseByInit() (agg int64) { return 0 }

// CloseByAggregate is the aggregator of windowed aggregate "close-by": a window's aggregate with one more record.
func (Factories) CloseByAggregate(key string, value int64, agg int64) (newAgg int64) {
	return agg + value
}

// HotReduce is the reducer of windowed reduce "hot": a window's aggregate with one more value (sessions: also two sessions' aggregates a record merges, the earlier first).
func (Factories) HotReduce(agg int64, value int64) (newAgg int64) { return agg + value }

// SessionsInit is the initializer of windowed aggregate "sessions": the aggregate of a key's window before its first record.
func (Factories) SessionsInit() (agg int64) { return 0 }

// SessionsAggregate is the aggregator of windowed aggregate "sessions": a window's aggregate with one more record.
func (Factories) SessionsAggregate(key string, value int64, agg int64) (newAgg int64) {
	return agg + value
}

// SessionsMerge is the session merger of windowed aggregate "sessions": the aggregate of two sessions of key that a record bridges, the earlier one a.
func (Factories) SessionsMerge(key string, a int64, b int64) (merged int64) { return a + b }

// Relay keeps the windows that start on the hour.
func (Factories) Relay(key dsl.Windowed[string], value int64) bool { return key.Start%3600000 == 0 }

// SessionsIn sees the sessions read.
func (Factories) SessionsIn(key dsl.Windowed[string], value int64) {}
