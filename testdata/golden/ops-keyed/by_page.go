package opskeyed

// ByPage re-keys clicks by page, the user as the value.
type ByPage struct{}

var _ ByPageProcessor = (*ByPage)(nil)

// Process forwards (page, user).
func (p *ByPage) Process(ctx *ByPageContext, user string, page string) error {
	ctx.Forward(page, user)
	return nil
}
