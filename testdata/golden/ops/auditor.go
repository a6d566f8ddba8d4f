package ops

import (
	"errors"

	"github.com/kgen-dev/kgen/runtime/dsl"
)

// Auditor is the code of processor "auditor". kgen wrote this file once and
// will not touch it again: it is yours to edit.
type Auditor struct{}

var _ AuditorProcessor = (*Auditor)(nil)

// Process handles one record from "counted".
func (p *Auditor) Process(ctx *AuditorContext, key string, value dsl.Change[int64]) error {
	// Your code here. Send results on with ctx.Forward(key, value).
	//
	// Until then every record fails loudly, in tests and at run time, rather
	// than being dropped without a word.
	return errors.New("processor \"auditor\" is not implemented yet: write Auditor.Process in auditor.go")
}
