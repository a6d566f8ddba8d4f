package metrics

import (
	"github.com/kgen-dev/kgen/testdata/golden/multichild/model"
)

// Archive is the code of processor "archive". kgen wrote this file once and
// will not touch it again: it is yours to edit.
type Archive struct{}

var _ ArchiveProcessor = (*Archive)(nil)

// Process handles one record from "route".
func (p *Archive) Process(ctx *ArchiveContext, key string, value model.Reading) error {
	// Your code here. Send results on with ctx.Forward(key, value).
	return nil
}
