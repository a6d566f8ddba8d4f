package ops

import (
	"fmt"

	"github.com/kgen-dev/kgen/runtime/dsl"
)

// Auditor describes each update of a word's count.
type Auditor struct{}

var _ AuditorProcessor = (*Auditor)(nil)

// Process forwards "old->new" for each count update.
func (p *Auditor) Process(ctx *AuditorContext, key string, value dsl.Change[int64]) error {
	old := "none"
	if value.Old != nil {
		old = fmt.Sprint(*value.Old)
	}
	ctx.Forward(key, fmt.Sprintf("%s->%d", old, *value.New))
	return nil
}
