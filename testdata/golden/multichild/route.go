package metrics

import (
	"github.com/kgen-dev/kgen/testdata/golden/multichild/model"
)

// Route is the code of processor "route". kgen wrote this file once and
// will not touch it again: it is yours to edit.
type Route struct{}

var _ RouteProcessor = (*Route)(nil)

// Process handles one record from "readings".
func (p *Route) Process(ctx *RouteContext, key []byte, value model.Reading) error {
	// Your code here. Send results on with ctx.Forward(key, value),
	// or one child at a time with ctx.ForwardToArchive(key, value), ctx.ForwardToCheck(key, value).
	return nil
}
