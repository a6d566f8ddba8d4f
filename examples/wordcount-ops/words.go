package wordcountops

import (
	"strings"
	"unicode"

	"github.com/kgen-dev/kgen/examples/wordcount-ops/model"
)

// Words is operator "words" (flatMapValues): the lower-case words of a
// sentence. They keep the sentence's key until groupBy re-keys them.
func (Factories) Words(_ string, value model.Sentence) []string {
	var out []string
	for _, w := range strings.FieldsFunc(value.Text, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\''
	}) {
		if w = strings.ToLower(strings.Trim(w, "'")); w != "" {
			out = append(out, w)
		}
	}
	return out
}

// ByWord is operator "by-word" (groupBy): each word is counted under itself.
func (Factories) ByWord(_ string, word string) string { return word }
