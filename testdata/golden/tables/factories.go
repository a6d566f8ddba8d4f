package tables

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

// AnyCountry is the joiner of leftJoin "any-country" with global table "country-table": the joined value of a record and the table's row under the key AnyCountryKey gives (nil where there is none).
func (Factories) AnyCountry(key string, value string, row *string) (joined string) {
	r := "-"
	if row != nil {
		r = *row
	}
	return key + "@" + r
}

// AnyCountryKey maps a record of leftJoin "any-country" to the key of its row in global table "country-table"; ok false maps it to none (a null key: a join drops the record, a leftJoin joins it with nil).
func (Factories) AnyCountryKey(key string, value string) (tableKey string, ok bool) {
	return value, value != "none"
}

// AnyPrice is the joiner of foreign-key leftJoin "any-price": the joined value of a left row and the right row its foreign key names (nil where there is none).
func (Factories) AnyPrice(left string, right *int64) (joined string) {
	if right == nil {
		return left + "=-"
	}
	return fmt.Sprint(left, "=", *right)
}

// AnyPriceForeignKey gives the key of the row of "product-table" that a row of "line-table" joins in foreign-key leftJoin "any-price"; ok false names none.
func (Factories) AnyPriceForeignKey(value string) (foreignKey string, ok bool) {
	return value, value != "none"
}

// LinePrice is the joiner of foreign-key join "line-price": the joined value of a left row and the right row its foreign key names.
func (Factories) LinePrice(left string, right int64) (joined string) {
	return fmt.Sprint(left, "=", right)
}

// LinePriceForeignKey gives the key of the row of "product-table" that a row of "line-table" joins in foreign-key join "line-price"; ok false names none.
func (Factories) LinePriceForeignKey(value string) (foreignKey string, ok bool) {
	return value, value != "none"
}

// WithCountry is the joiner of join "with-country" with global table "country-table": the joined value of a record and the table's row under the key WithCountryKey gives.
func (Factories) WithCountry(key string, value string, row string) (joined string) {
	return key + "@" + row
}

// WithCountryKey maps a record of join "with-country" to the key of its row in global table "country-table"; ok false maps it to none (a null key: a join drops the record, a leftJoin joins it with nil).
func (Factories) WithCountryKey(key string, value string) (tableKey string, ok bool) {
	return value, value != "none"
}

// Valued prices a trade at the price of its time.
func (Factories) Valued(key string, left int64, right int64) int64 { return left * right }

// ValuedLate is Valued, -1 for a trade before the product had a price.
func (Factories) ValuedLate(key string, left int64, right *int64) int64 {
	if right == nil {
		return -1
	}
	return left * *right
}
