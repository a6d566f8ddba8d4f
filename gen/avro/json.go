package avro

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// node is a JSON value with the byte offset where it starts, so that schema
// problems can be reported at file:line:col.
type node struct {
	off  int
	val  any // string, json.Number, bool, nil, []*node, *object
	text []byte
}

type object struct {
	keys []string
	offs []int // key offsets
	vals []*node
}

func (o *object) get(k string) *node {
	for i, key := range o.keys {
		if key == k {
			return o.vals[i]
		}
	}
	return nil
}

// obj and str take a nil node (a key the object does not have) as a value
// of another kind, so a lookup can be read without a nil check.
func (n *node) obj() *object {
	if n == nil {
		return nil
	}
	o, _ := n.val.(*object)
	return o
}

func (n *node) str() (string, bool) {
	if n == nil {
		return "", false
	}
	s, ok := n.val.(string)
	return s, ok
}

// plain converts the node to what encoding/json decodes with UseNumber.
func (n *node) plain() any {
	switch v := n.val.(type) {
	case []*node:
		a := make([]any, len(v))
		for i, e := range v {
			a[i] = e.plain()
		}
		return a
	case *object:
		m := make(map[string]any, len(v.keys))
		for i, k := range v.keys {
			m[k] = v.vals[i].plain()
		}
		return m
	}
	return n.val
}

// jsonError is a syntax error at a byte offset.
type jsonError struct {
	off int
	msg string
}

func (e *jsonError) Error() string { return e.msg }

type jparser struct {
	d    *json.Decoder
	data []byte
}

// parseJSON parses one JSON document keeping offsets.
func parseJSON(data []byte) (*node, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	p := &jparser{d: d, data: data}
	n, err := p.value()
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, &jsonError{p.start(), "invalid json: data after the schema"}
	}
	return n, nil
}

// start is the offset of the next token.
func (p *jparser) start() int {
	off := int(p.d.InputOffset())
	for off < len(p.data) {
		switch p.data[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
			continue
		}
		break
	}
	return off
}

func (p *jparser) fail(err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return &jsonError{int(se.Offset), "invalid json: " + se.Error()}
	}
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return &jsonError{len(p.data), "invalid json: unexpected end of file"}
	}
	return &jsonError{p.start(), "invalid json: " + err.Error()}
}

func (p *jparser) value() (*node, error) {
	off := p.start()
	tok, err := p.d.Token()
	if err != nil {
		return nil, p.fail(err)
	}
	n := &node{off: off}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &object{}
			for p.d.More() {
				koff := p.start()
				k, err := p.d.Token()
				if err != nil {
					return nil, p.fail(err)
				}
				// A key given twice means two things: kgen would read the
				// first, hamba/avro (as encoding/json) the last.
				if o.get(k.(string)) != nil {
					return nil, &jsonError{koff, fmt.Sprintf("duplicate key %q", k)}
				}
				v, err := p.value()
				if err != nil {
					return nil, err
				}
				o.keys = append(o.keys, k.(string))
				o.offs = append(o.offs, koff)
				o.vals = append(o.vals, v)
			}
			if _, err := p.d.Token(); err != nil {
				return nil, p.fail(err)
			}
			n.val = o
		case '[':
			var a []*node
			for p.d.More() {
				v, err := p.value()
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			if _, err := p.d.Token(); err != nil {
				return nil, p.fail(err)
			}
			if a == nil {
				a = []*node{}
			}
			n.val = a
		default:
			return nil, &jsonError{off, fmt.Sprintf("invalid json: unexpected %q", t)}
		}
	default:
		n.val = t
	}
	return n, nil
}

// lineCol converts a byte offset into a 1-based line and column.
func lineCol(data []byte, off int) (int, int) {
	if off > len(data) {
		off = len(data)
	}
	line := 1 + bytes.Count(data[:off], []byte{'\n'})
	col := off - bytes.LastIndexByte(data[:off], '\n')
	return line, col
}
