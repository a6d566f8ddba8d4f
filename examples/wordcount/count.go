package wordcount

// Count keeps a running count per word in store "counts" and forwards each
// new count to topic word-counts.
type Count struct{}

var _ CountProcessor = (*Count)(nil)

// Process adds one to the count of the word in key.
func (p *Count) Process(ctx *CountContext, key string, _ string) error {
	n, _, err := ctx.Counts().Get(key)
	if err != nil {
		return err
	}
	n++
	if err := ctx.Counts().Put(key, n); err != nil {
		return err
	}
	ctx.Forward(key, n)
	return nil
}
