package basic

import (
	"time"

	"github.com/kgen-dev/kgen/testdata/golden/basic/model"
)

// Enrich is the code of processor "enrich". kgen wrote this file once and
// will not touch it again: it is yours to edit.
type Enrich struct{}

var _ EnrichProcessor = (*Enrich)(nil)

// Process handles one record from "orders".
func (p *Enrich) Process(ctx *EnrichContext, key string, value model.Order) error {
	// Your code here. Send results on with ctx.Forward(key, value).
	return nil
}

// Punctuate runs every 30s of stream time.
func (p *Enrich) Punctuate(ctx *EnrichContext, now time.Time) error {
	return nil
}
