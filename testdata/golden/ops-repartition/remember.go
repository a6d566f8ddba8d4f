package opsrepartition

import "strconv"

// Remember counts, in store last-line, the lines each word came in: right
// only because repartition brought every line of a word to one task.
type Remember struct{}

var _ RememberProcessor = (*Remember)(nil)

// Process adds one to the word's count.
func (p *Remember) Process(ctx *RememberContext, word string, _ string) error {
	seen, _, err := ctx.LastLine().Get(word)
	if err != nil {
		return err
	}
	n, _ := strconv.Atoi(seen)
	return ctx.LastLine().Put(word, strconv.Itoa(n+1))
}
