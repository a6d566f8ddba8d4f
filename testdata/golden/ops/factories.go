package ops

import (
	"github.com/kgen-dev/kgen/runtime/dsl"
	"github.com/kgen-dev/kgen/testdata/golden/ops/model"
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

// Auditor makes processor "auditor".
func (Factories) Auditor() AuditorProcessor { return &Auditor{} }

// Clean makes processor "clean".
func (Factories) Clean() CleanProcessor { return &Clean{} }

// ByCity is the selector of groupBy "by-city": the key a table row is grouped by, and the value aggregated.
func (Factories) ByCity(key string, value model.Profile) (newKey string, newValue string) {
	// TODO: implement operator "by-city" (groupBy).
	return
}

// ByWord is the key selector of groupBy "by-word": the key a record is grouped by.
func (Factories) ByWord(key string, value string) (newKey string) {
	// TODO: implement operator "by-word" (groupBy).
	return
}

// KeepAll is the predicate of filter "keep-all": it keeps the records for which it returns true.
func (Factories) KeepAll(key string, value int64) (keep bool) {
	// TODO: implement operator "keep-all" (filter).
	return
}

// Lengths is the mapper of map "lengths": the new key and value of a record.
func (Factories) Lengths(key string, value string) (newKey string, newValue int64) {
	// TODO: implement operator "lengths" (map).
	return
}

// Letters is the mapper of flatMap "letters": the records one record becomes (none, one or more).
func (Factories) Letters(key string, value model.Sentence) (out []dsl.KeyValue[string, int64]) {
	// TODO: implement operator "letters" (flatMap).
	return
}

// Nonzero is the predicate of filterNot "nonzero": it drops the records for which it returns true.
func (Factories) Nonzero(key string, value int64) (drop bool) {
	// TODO: implement operator "nonzero" (filterNot).
	return
}

// PerCityInit is the initializer of aggregate "per-city": the aggregate of a key before its first record.
func (Factories) PerCityInit() (agg int64) {
	// TODO: implement operator "per-city" (aggregate).
	return
}

// PerCityAdd is the adder of aggregate "per-city": the aggregate with a new row added.
func (Factories) PerCityAdd(key string, value string, agg int64) (newAgg int64) {
	// TODO: implement operator "per-city" (aggregate).
	return
}

// PerCitySubtract is the subtractor of aggregate "per-city": the aggregate with an old row taken out.
func (Factories) PerCitySubtract(key string, value string, agg int64) (newAgg int64) {
	// TODO: implement operator "per-city" (aggregate).
	return
}

// Rekeyed is the key selector of selectKey "rekeyed": the new key of a record.
func (Factories) Rekeyed(key string, value int64) (newKey string) {
	// TODO: implement operator "rekeyed" (selectKey).
	return
}

// Seen is called with every record peek "seen" passes on.
func (Factories) Seen(key string, value string) {
	// TODO: implement operator "seen" (peek).
	return
}

// Shout is the mapper of mapValues "shout": the new value of a record (its key stays).
func (Factories) Shout(key string, value string) (newValue string) {
	// TODO: implement operator "shout" (mapValues).
	return
}

// Sink is called with every record foreach "sink" reads.
func (Factories) Sink(key string, value string) {
	// TODO: implement operator "sink" (foreach).
	return
}

// SizeLong is the predicate of arm "long" of branch "size": a record goes to the first arm whose predicate returns true.
func (Factories) SizeLong(key string, value string) (take bool) {
	// TODO: implement arm "long" of branch "size".
	return
}

// TotalReduce is the reducer of reduce "total": the aggregate with one more value.
func (Factories) TotalReduce(agg int64, value int64) (newAgg int64) {
	// TODO: implement operator "total" (reduce).
	return
}

// Words is the mapper of flatMapValues "words": the values one record becomes, each with its key.
func (Factories) Words(key string, value model.Sentence) (out []string) {
	// TODO: implement operator "words" (flatMapValues).
	return
}
