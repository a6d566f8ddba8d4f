package nullable

// Audit passes on the events that have a key, their tombstones too.
type Audit struct{}

var _ AuditProcessor = (*Audit)(nil)

// Process drops an event without a key and forwards the others as they are.
func (p *Audit) Process(ctx *AuditContext, key *string, value *int64) error {
	if key != nil {
		ctx.Forward(*key, value)
	}
	return nil
}
