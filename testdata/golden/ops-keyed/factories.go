package opskeyed

import "strings"

// Factories makes the processor of kgen.yaml and holds the operators'
// functions.
type Factories struct{}

var _ Processors = Factories{}

// ByPage makes processor "by-page".
func (Factories) ByPage() ByPageProcessor { return &ByPage{} }

// Real drops the clicks of bots.
func (Factories) Real(user string, _ string) bool { return !strings.HasPrefix(user, "bot") }

// Tagged marks a page as seen.
func (Factories) Tagged(_ string, page string) string { return "seen:" + page }

// FirstClickReduce keeps the first user who clicked a page.
func (Factories) FirstClickReduce(agg string, _ string) string { return agg }

// ByBand groups an item's price by its band.
func (Factories) ByBand(_ string, price int64) (string, int64) {
	if price < 100 {
		return "cheap", price
	}
	return "dear", price
}

// BandSumAdd adds a price to its band's sum.
func (Factories) BandSumAdd(agg int64, price int64) int64 { return agg + price }

// BandSumSubtract takes an old price out of its band's sum.
func (Factories) BandSumSubtract(agg int64, price int64) int64 { return agg - price }
