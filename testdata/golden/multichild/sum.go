package metrics

// Sum is the code of processor "sum". kgen wrote this file once and
// will not touch it again: it is yours to edit.
type Sum struct{}

var _ SumProcessor = (*Sum)(nil)

// Process handles one record from "ids".
func (p *Sum) Process(ctx *SumContext, key int32, value float64) error {
	// Your code here. Send results on with ctx.Forward(key, value),
	// or one child at a time with ctx.ForwardToLog(key, value), ctx.ForwardToStats(key, value).
	return nil
}
