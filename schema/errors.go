package schema

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/kgen-dev/kgen/gen/model"
)

// Error is one problem in user input, at a place in a file.
type Error struct {
	Pos model.Pos
	Msg string
}

func (e *Error) Error() string { return e.Pos.String() + ": " + e.Msg }

// Errors is every problem found in user input, sorted by file and position.
// Callers tell user errors from internal failures with errors.As.
type Errors []*Error

func (es Errors) Error() string {
	var b strings.Builder
	for i, e := range es {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// Sort orders the errors by file, line, column and message, dropping exact
// duplicates.
func (es Errors) Sort() Errors {
	slices.SortStableFunc(es, func(a, b *Error) int {
		return cmp.Or(
			cmp.Compare(a.Pos.File, b.Pos.File),
			cmp.Compare(a.Pos.Line, b.Pos.Line),
			cmp.Compare(a.Pos.Col, b.Pos.Col),
			cmp.Compare(a.Msg, b.Msg),
		)
	})
	return slices.CompactFunc(es, func(a, b *Error) bool { return *a == *b })
}

// Err returns the sorted errors, or nil when there are none.
func (es Errors) Err() error {
	if len(es) == 0 {
		return nil
	}
	return es.Sort()
}

type errList struct{ errs Errors }

func (l *errList) add(pos model.Pos, format string, args ...any) {
	l.errs = append(l.errs, &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)})
}
