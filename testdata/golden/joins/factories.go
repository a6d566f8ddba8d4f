package joins

import "fmt"

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

// AnySide is the joiner of outerJoin "any-side" (stream-stream): the joined value of a key's left and right values (either nil where that side has none).
func (Factories) AnySide(key string, left *int64, right *string) (joined string) {
	return opt(left) + "|" + optS(right)
}

// Both is the joiner of join "both" (table-table): the joined value of a key's left and right values.
func (Factories) Both(key string, left int64, right int64) (joined string) {
	return fmt.Sprint(left, "x", right)
}

// ClickViews is the joiner of leftJoin "click-views" (stream-stream): the joined value of a key's left and right values (right nil where there is none).
func (Factories) ClickViews(key string, left int64, right *string) (joined string) {
	return fmt.Sprint(left) + "|" + optS(right)
}

// Either is the joiner of outerJoin "either" (table-table): the joined value of a key's left and right values (either nil where that side has none).
func (Factories) Either(key string, left *int64, right *int64) (joined string) {
	return opt(left) + "x" + opt(right)
}

// Matched is the joiner of join "matched" (stream-stream): the joined value of a key's left and right values.
func (Factories) Matched(key string, left int64, right string) (joined string) {
	return fmt.Sprint(left) + "|" + right
}

// MaybeUser is the joiner of leftJoin "maybe-user" (stream-table): the joined value of a key's left and right values (right nil where there is none).
func (Factories) MaybeUser(key string, left int64, right *string) (joined string) {
	return fmt.Sprint(left) + "@" + optS(right)
}

// Priced is the joiner of leftJoin "priced" (table-table): the joined value of a key's left and right values (right nil where there is none).
func (Factories) Priced(key string, left int64, right *int64) (joined string) {
	return fmt.Sprint(left) + "x" + opt(right)
}

// WithUser is the joiner of join "with-user" (stream-table): the joined value of a key's left and right values.
func (Factories) WithUser(key string, left int64, right string) (joined string) {
	return fmt.Sprint(left) + "@" + right
}

// opt writes a side that may be missing: "-" for none.
func opt(v *int64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprint(*v)
}

func optS(v *string) string {
	if v == nil {
		return "-"
	}
	return *v
}

// ByValue keys a view by its value.
func (Factories) ByValue(key string, value string) (newKey string) { return value }

// Rekeyed is the joiner of join "rekeyed" (stream-stream).
func (Factories) Rekeyed(key string, left int64, right string) (joined string) {
	return fmt.Sprint(left) + "|" + right
}
