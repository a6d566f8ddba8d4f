package ops

import (
	"strings"

	"github.com/kgen-dev/kgen/runtime/dsl"
	"github.com/kgen-dev/kgen/testdata/golden/ops/model"
)

// Factories makes the processors of kgen.yaml and holds the operators'
// functions.
type Factories struct{}

var _ Processors = Factories{}

// Auditor makes processor "auditor".
func (Factories) Auditor() AuditorProcessor { return &Auditor{} }

// Clean makes processor "clean".
func (Factories) Clean() CleanProcessor { return &Clean{} }

// Words splits a sentence into words.
func (Factories) Words(_ string, value model.Sentence) []string { return strings.Fields(value.Text) }

// ByWord groups words by themselves.
func (Factories) ByWord(_ string, word string) string { return word }

// SizeLong takes words of four letters or more.
func (Factories) SizeLong(_ string, word string) bool { return len(word) >= 4 }

// Shout upper-cases a long word.
func (Factories) Shout(_ string, word string) string { return strings.ToUpper(word) }

// Lengths keys a short word by its first letter, with its length.
func (Factories) Lengths(_ string, word string) (string, int64) { return word[:1], int64(len(word)) }

// TotalReduce sums lengths.
func (Factories) TotalReduce(agg, value int64) int64 { return agg + value }

// Seen sees every word.
func (Factories) Seen(string, string) {}

// Sink consumes every word.
func (Factories) Sink(string, string) {}

// ByCity groups people by city.
func (Factories) ByCity(_ string, p model.Profile) (string, string) { return p.City, p.Name }

// PerCityInit starts a city at nobody.
func (Factories) PerCityInit() int64 { return 0 }

// PerCityAdd counts a person in.
func (Factories) PerCityAdd(_ string, _ string, agg int64) int64 { return agg + 1 }

// PerCitySubtract counts a person out.
func (Factories) PerCitySubtract(_ string, _ string, agg int64) int64 { return agg - 1 }

// Letters emits each word's first letter with the word's length, keyed by
// the word.
func (Factories) Letters(_ string, s model.Sentence) []dsl.KeyValue[string, int64] {
	var out []dsl.KeyValue[string, int64]
	for _, w := range strings.Fields(s.Text) {
		out = append(out, dsl.KeyValue[string, int64]{Key: w, Value: int64(len(w))})
	}
	return out
}

// Rekeyed keys each pair by its first letter.
func (Factories) Rekeyed(word string, _ int64) string { return word[:1] }

// Nonzero drops one-letter words.
func (Factories) Nonzero(_ string, n int64) bool { return n == 1 }

// KeepAll keeps everything.
func (Factories) KeepAll(string, int64) bool { return true }
