package wordcount

import (
	"strings"
	"unicode"

	"github.com/kgen-dev/kgen/examples/wordcount/model"
)

// Split breaks a sentence into lower-case words and forwards each one keyed
// by itself, to the repartition topic words, through which all occurrences
// of a word meet in the task that counts it.
type Split struct{}

var _ SplitProcessor = (*Split)(nil)

// Process forwards every word of value.Text.
func (p *Split) Process(ctx *SplitContext, _ string, value model.Sentence) error {
	words := strings.FieldsFunc(value.Text, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\''
	})
	for _, w := range words {
		w = strings.ToLower(strings.Trim(w, "'"))
		if w != "" {
			ctx.Forward(w, w)
		}
	}
	return nil
}
