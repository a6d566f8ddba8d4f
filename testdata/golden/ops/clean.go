package ops

import (
	"strings"

	"github.com/kgen-dev/kgen/testdata/golden/ops/model"
)

// Clean lower-cases sentences before the operators see them.
type Clean struct{}

var _ CleanProcessor = (*Clean)(nil)

// Process forwards the sentence lower-cased.
func (p *Clean) Process(ctx *CleanContext, key string, value model.Sentence) error {
	ctx.Forward(key, model.Sentence{Text: strings.ToLower(value.Text)})
	return nil
}
