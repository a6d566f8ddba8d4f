package schema

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Pos is a place in a file: a spec, a Go file or an Avro schema. Line and
// Col are 1-based; 0 means unknown.
type Pos struct {
	File string
	Line int
	Col  int
}

func (p Pos) String() string {
	switch {
	case p.File == "":
		return "-"
	case p.Col > 0:
		return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
	case p.Line > 0:
		return fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	return p.File
}

// Error is one problem in user input, at a place in a file.
type Error struct {
	Pos Pos
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

func (l *errList) add(pos Pos, format string, args ...any) {
	l.errs = append(l.errs, &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)})
}
