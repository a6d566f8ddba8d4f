package joinsrekeyed

// Swap keys each record by its value and sends it, with its old key as
// the value, to the join "swapped" (through the repartition topic the
// generator inserts) and, unchanged, to topic swap-copy.
type Swap struct{}

var _ SwapProcessor = (*Swap)(nil)

// Process swaps key and value for the join and copies the record.
func (p *Swap) Process(ctx *SwapContext, key string, value string) error {
	ctx.ForwardToSwapped(value, key)
	ctx.ForwardToSwapCopy(key, value)
	return nil
}
