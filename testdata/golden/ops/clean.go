package ops

import (
	"errors"

	"github.com/kgen-dev/kgen/testdata/golden/ops/model"
)

// Clean is the code of processor "clean". kgen wrote this file once and
// will not touch it again: it is yours to edit.
type Clean struct{}

var _ CleanProcessor = (*Clean)(nil)

// Process handles one record from "sentences".
func (p *Clean) Process(ctx *CleanContext, key string, value model.Sentence) error {
	// Your code here. Send results on with ctx.Forward(key, value).
	//
	// Until then every record fails loudly, in tests and at run time, rather
	// than being dropped without a word.
	return errors.New("processor \"clean\" is not implemented yet: write Clean.Process in clean.go")
}
