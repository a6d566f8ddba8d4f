package generated

import (
	"strings"

	"github.com/kgen-dev/kgen/runtime/dsl"
)

// Factories implements the operators' functions of kgen.yaml as
// oracle/kstreams/src/main/java/dev/kgen/oracle/Topologies.java does: the
// same trivial functions, so both give the same records. kgen wrote this
// file once; it is the oracle's to edit.
//
// Peeked, when set, collects what operators "look", "look-n" (peeks), "see"
// and "see-n" (foreaches) see, as the Java runner records it.
type Factories struct{ Peeked *[]string }

var _ Processors = Factories{}

// words splits on single spaces and drops empty words, as the Java twin.
func words(v string) []string {
	var out []string
	for _, w := range strings.Split(v, " ") {
		if w != "" {
			out = append(out, w)
		}
	}
	return out
}

func first(v string) string {
	if v == "" {
		return ""
	}
	return v[:1]
}

func parity(v int64) string {
	if v%2 == 0 {
		return "even"
	}
	return "odd"
}

// Stateless operators.

func (Factories) KeepLong(_ string, value string) bool { return len(value) > 3 }
func (Factories) DropLong(_ string, value string) bool { return len(value) > 3 }
func (Factories) UpperAndLength(key string, value string) (string, int64) {
	return strings.ToUpper(key), int64(len(value))
}
func (Factories) KeyAndUpper(key string, value string) string {
	return key + "=" + strings.ToUpper(value)
}
func (Factories) WordLengths(_ string, value string) []dsl.KeyValue[string, int64] {
	var out []dsl.KeyValue[string, int64]
	for _, w := range words(value) {
		out = append(out, dsl.KeyValue[string, int64]{Key: w, Value: int64(len(w))})
	}
	return out
}
func (Factories) SplitWords(_ string, value string) []string { return words(value) }
func (Factories) FirstLetter(_ string, value string) string  { return first(value) }
func (f Factories) Look(key string, value string) {
	if f.Peeked != nil {
		*f.Peeked = append(*f.Peeked, key+"="+value)
	}
}
func (Factories) SplitLong(_ string, value string) bool   { return len(value) > 5 }
func (Factories) SplitA(_ string, value string) bool      { return strings.HasPrefix(value, "a") }
func (Factories) Upper(_ string, value string) string     { return strings.ToUpper(value) }
func (Factories) SplitNdLong(_ string, value string) bool { return len(value) > 5 }
func (Factories) SplitNdA(_ string, value string) bool    { return strings.HasPrefix(value, "a") }
func (f Factories) See(key string, value string) {
	if f.Peeked != nil {
		*f.Peeked = append(*f.Peeked, key+"="+value)
	}
}

// Aggregations of streams.

func (Factories) SumByKeyReduce(agg int64, value int64) int64 { return agg + value }
func (Factories) LengthsByKeyInit() int64                     { return 100 }
func (Factories) LengthsByKeyAggregate(_ string, value string, agg int64) int64 {
	return agg + int64(len(value))
}
func (Factories) ByValue(_ string, value string) string         { return value }
func (Factories) ByFirstOfKey(key string, _ int64) string       { return first(key) }
func (Factories) SumByFirstReduce(agg int64, value int64) int64 { return agg + value }
func (Factories) ByFirstLetter(key string, _ string) string     { return first(key) }
func (Factories) LengthsByFirstInit() int64                     { return 100 }
func (Factories) LengthsByFirstAggregate(_ string, value string, agg int64) int64 {
	return agg + int64(len(value))
}
func (Factories) Words(_ string, value string) []string { return words(value) }
func (Factories) ByWord(_ string, word string) string   { return word }

// Tables grouped by a new key.

func (Factories) ByRegion(key string, value string) (string, string) { return value, key }
func (Factories) ByParity(_ string, value int64) (string, int64)     { return parity(value), value }
func (Factories) ParitySumsAdd(agg int64, value int64) int64         { return agg + value }
func (Factories) ParitySumsSubtract(agg int64, value int64) int64    { return agg - value }
func (Factories) ByHome(key string, value string) (string, string)   { return value, key }
func (Factories) NameLengthsInit() int64                             { return 100 }
func (Factories) NameLengthsAdd(_ string, value string, agg int64) int64 {
	return agg + int64(len(value))
}
func (Factories) NameLengthsSubtract(_ string, value string, agg int64) int64 {
	return agg - int64(len(value))
}

// The -nullable topologies: a nullable side is nil for null, and the
// functions are null-safe as their Java twins are.

// javaString is what Java's string concatenation makes of a String.
func javaString(p *string) string {
	if p == nil {
		return "null"
	}
	return *p
}

// longerThan3N is Java's v != null && v.length() > 3.
func longerThan3N(v *string) bool { return v != nil && len(*v) > 3 }

func (Factories) KeepLongN(_ *string, value *string) bool { return longerThan3N(value) }
func (Factories) DropLongN(_ *string, value *string) bool { return longerThan3N(value) }

// KeyAndUpperN is k + "=" + upperN(v): Java writes a null as "null".
func (Factories) KeyAndUpperN(key *string, value *string) string {
	if value == nil {
		return javaString(key) + "=null"
	}
	return javaString(key) + "=" + strings.ToUpper(*value)
}

// SplitWordsN gives no words for a null value.
func (Factories) SplitWordsN(_ *string, value *string) []string {
	if value == nil {
		return nil
	}
	return words(*value)
}
func (f Factories) LookN(key *string, value *string) {
	if f.Peeked != nil {
		*f.Peeked = append(*f.Peeked, javaString(key)+"="+javaString(value))
	}
}
func (f Factories) SeeN(key *string, value *string) {
	if f.Peeked != nil {
		*f.Peeked = append(*f.Peeked, javaString(key)+"="+javaString(value))
	}
}
func (Factories) SplitNNovalue(_ *string, value *string) bool { return value == nil }
func (Factories) SplitNNokey(key *string, _ *string) bool     { return key == nil }

// The groupByKey of a nullable side dropped the nulls: these see plain types.

func (Factories) SumByKeyNReduce(agg int64, value int64) int64 { return agg + value }
func (Factories) LengthsByKeyNInit() int64                     { return 100 }
func (Factories) LengthsByKeyNAggregate(_ string, value string, agg int64) int64 {
	return agg + int64(len(value))
}

// Windowed aggregations: the reducer sums, the aggregator adds the value's
// length to 100, the session merger adds the two aggregates.

func (Factories) TrSumReduce(agg int64, value int64) int64 { return agg + value }
func (Factories) TaLengthsInit() int64                     { return 100 }
func (Factories) TaLengthsAggregate(_ string, value string, agg int64) int64 {
	return agg + int64(len(value))
}
func (Factories) SrSumReduce(agg int64, value int64) int64 { return agg + value }
func (Factories) SaLengthsInit() int64                     { return 100 }
func (Factories) SaLengthsAggregate(_ string, value string, agg int64) int64 {
	return agg + int64(len(value))
}
func (Factories) SaLengthsMerge(_ string, a, b int64) int64 { return a + b }

// orNull is Java's "" + s: the string, or "null".
func orNull(s *string) string {
	if s == nil {
		return "null"
	}
	return *s
}

func (Factories) JtsiJoin(_ string, left string, right string) string { return left + "/" + right }
func (Factories) JtslJoin(_ string, left string, right *string) string {
	return left + "/" + orNull(right)
}
func (Factories) JttiJoin(_ string, left string, right string) string { return left + "/" + right }
func (Factories) JttlJoin(_ string, left string, right *string) string {
	return left + "/" + orNull(right)
}
func (Factories) JttoJoin(_ string, left *string, right *string) string {
	return orNull(left) + "/" + orNull(right)
}

func (Factories) JssInner(_ string, left string, right string) string { return left + "|" + right }
func (Factories) JssLeft(_ string, left string, right *string) string {
	return left + "|" + orNull(right)
}
func (Factories) JssOuter(_ string, left *string, right *string) string {
	return orNull(left) + "|" + orNull(right)
}
func (Factories) JssOuterAsym(_ string, left *string, right *string) string {
	return orNull(left) + "|" + orNull(right)
}

// globalKey is the global joins' key mapper: the value names the table's
// key; "none" and a null value name none.
func globalKey(v *string) (string, bool) {
	if v == nil || *v == "none" {
		return "", false
	}
	return *v, true
}

func (Factories) GjJoinKey(_ *string, value *string) (string, bool) { return globalKey(value) }
func (Factories) GjJoin(_ *string, value *string, row string) string {
	return javaString(value) + ":" + row
}
func (Factories) GljJoinKey(_ *string, value *string) (string, bool) { return globalKey(value) }
func (Factories) GljJoin(_ *string, value *string, row *string) string {
	r := "-"
	if row != nil {
		r = *row
	}
	return javaString(value) + ":" + r
}

// foreignKey is Topologies.java's FOREIGN_KEY: a "fk:rest" value's fk,
// none without ':'.
func foreignKey(v string) (string, bool) {
	fk, _, ok := strings.Cut(v, ":")
	return fk, ok
}

func (Factories) JfkiJoinForeignKey(value string) (string, bool) { return foreignKey(value) }
func (Factories) JfkiJoin(left string, right string) string      { return left + "/" + right }
func (Factories) JfklJoinForeignKey(value string) (string, bool) { return foreignKey(value) }
func (Factories) JfklJoin(left string, right *string) string {
	return left + "/" + orNull(right)
}

// The joins of a re-keyed stream: keyed by the value's first character.
func (Factories) JssrKey(_ string, value string) string               { return first(value) }
func (Factories) JssrJoin(_ string, left string, right string) string { return left + "|" + right }
func (Factories) JtsrKey(_ string, value string) string               { return first(value) }
func (Factories) JtsrJoin(_ string, left string, right string) string { return left + "/" + right }
