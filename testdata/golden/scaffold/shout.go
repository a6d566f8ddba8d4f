package scaffold

import (
	"errors"
)

// Shout is the code of processor "shout". kgen wrote this file once and
// will not touch it again: it is yours to edit.
type Shout struct{}

var _ ShoutProcessor = (*Shout)(nil)

// Process handles one record from "greetings".
func (p *Shout) Process(ctx *ShoutContext, key string, value string) error {
	// Your code here. Send results on with ctx.Forward(key, value).
	//
	// Until then every record fails loudly, in tests and at run time, rather
	// than being dropped without a word.
	return errors.New("processor \"shout\" is not implemented yet: write Shout.Process in shout.go")
}
