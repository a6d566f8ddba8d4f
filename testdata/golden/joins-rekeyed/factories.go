package joinsrekeyed

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

// Both is the joiner of join "both" (stream-stream): the joined value of a key's left and right values.
func (Factories) Both(key string, left string, right string) (joined string) {
	return left + "|" + right
}

// ByOrder keys an order by its id, its value.
func (Factories) ByOrder(key string, value string) (newKey string) { return value }

// ByUser keys a click by its user, its value.
func (Factories) ByUser(key string, value string) (newKey string) { return value }

// LByValue keys a left record by its value.
func (Factories) LByValue(key string, value string) (newKey string) { return value }

// Paid is the joiner of join "paid" (stream-stream): the order's customer and its payment.
func (Factories) Paid(key string, left string, right int64) (joined string) {
	return fmt.Sprint(left, "|", right)
}

// RByValue keys a right record by its value and makes its old key the value.
func (Factories) RByValue(key string, value string) (newKey string, newValue string) {
	return value, key
}

// WithUser is the joiner of leftJoin "with-user" (stream-table): the click and its user's name, "-" for none.
func (Factories) WithUser(key string, left string, right *string) (joined string) {
	if right == nil {
		return left + "@-"
	}
	return left + "@" + *right
}

// Swap makes the processor "swap".
func (Factories) Swap() SwapProcessor { return &Swap{} }

// Swapped is the joiner of join "swapped" (stream-table): the record's old key and its user's name.
func (Factories) Swapped(key string, left string, right string) string { return left + "@" + right }
