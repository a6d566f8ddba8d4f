package metrics

import (
	"time"

	"github.com/kgen-dev/kgen/testdata/golden/multichild/model"
)

// Check is the code of processor "check". kgen wrote this file once and
// will not touch it again: it is yours to edit.
type Check struct{}

var _ CheckProcessor = (*Check)(nil)

// Process handles one record from "route".
func (p *Check) Process(ctx *CheckContext, key string, value model.Reading) error {
	// Your code here. Send results on with ctx.Forward(key, value).
	return nil
}

// PunctuateFlush runs every 1m of wall-clock time.
func (p *Check) PunctuateFlush(ctx *CheckContext, now time.Time) error {
	return nil
}

// PunctuateTick runs every 500ms of stream time.
func (p *Check) PunctuateTick(ctx *CheckContext, now time.Time) error {
	return nil
}
