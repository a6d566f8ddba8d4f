package cli

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/kgen-dev/kgen/gen/model"
	"github.com/kgen-dev/kgen/runtime/serde/avro"
	"github.com/kgen-dev/kgen/schema"
)

// A sideCodec turns one side (key or value) of a topic's records between
// the JSON kgen produce reads and kgen consume prints, and the record bytes
// of the spec's format. The JSON is the one encoding/json gives the
// generated Go type: records as objects by wire name, []byte and fixed as
// base64, time as RFC 3339, decimals as decimal strings, enums by symbol.
type sideCodec struct {
	format string
	t      *model.Type
	// schemaID is the registry id for avro-confluent; 0 until looked up.
	schemaID uint32
}

// encode turns a JSON value into record bytes; JSON null is no bytes (a
// null key, or a tombstone).
func (c *sideCodec) encode(raw json.RawMessage) ([]byte, error) {
	if len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	v, err := decodeJSON(raw)
	if err != nil {
		return nil, err
	}
	switch c.format {
	case schema.FormatString:
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("want a JSON string, got %s", jsonKind(v))
		}
		return []byte(s), nil
	case schema.FormatBytes:
		return decodeBase64(v, "$")
	case schema.FormatInt32:
		n, err := intOf(v, "$", math.MinInt32, math.MaxInt32)
		return binary.BigEndian.AppendUint32(nil, uint32(int32(n))), err
	case schema.FormatInt64:
		n, err := intOf(v, "$", math.MinInt64, math.MaxInt64)
		return binary.BigEndian.AppendUint64(nil, uint64(n)), err
	case schema.FormatFloat64:
		f, err := floatOf(v, "$")
		return binary.BigEndian.AppendUint64(nil, math.Float64bits(f)), err
	case schema.FormatJSON, schema.FormatJSONLenient:
		if c.format == schema.FormatJSON {
			if err := checkJSONValue(c.t, v, "$"); err != nil {
				return nil, err
			}
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	case schema.FormatAvro:
		return appendAvro(nil, c.t, v, "$")
	case schema.FormatAvroConfluent:
		return appendAvro(avro.AppendConfluentHeader(nil, c.schemaID), c.t, v, "$")
	}
	return nil, fmt.Errorf("format %s is not supported by kgen produce", c.format)
}

// refusedError is a record side that is valid JSON but that the app's
// strict JSON serde refuses: consume prints it with the reason.
type refusedError struct{ err error }

func (e *refusedError) Error() string {
	return "the app refuses this record (format json decodes strictly; its -on-deserialize-error policy decides what happens to it): " + e.err.Error()
}

// decode turns record bytes into the JSON value to print; nil bytes are
// JSON null. A value the app would refuse comes back with a *refusedError.
func (c *sideCodec) decode(b []byte) (any, error) {
	if b == nil {
		return nil, nil
	}
	switch c.format {
	case schema.FormatString:
		if !utf8.Valid(b) {
			return nil, errors.New("invalid UTF-8")
		}
		return string(b), nil
	case schema.FormatBytes:
		return base64.StdEncoding.EncodeToString(b), nil
	case schema.FormatInt32:
		if len(b) != 4 {
			return nil, fmt.Errorf("int32: %d bytes, want 4", len(b))
		}
		return int32(binary.BigEndian.Uint32(b)), nil
	case schema.FormatInt64:
		if len(b) != 8 {
			return nil, fmt.Errorf("int64: %d bytes, want 8", len(b))
		}
		return int64(binary.BigEndian.Uint64(b)), nil
	case schema.FormatFloat64:
		if len(b) != 8 {
			return nil, fmt.Errorf("float64: %d bytes, want 8", len(b))
		}
		return math.Float64frombits(binary.BigEndian.Uint64(b)), nil
	case schema.FormatJSON, schema.FormatJSONLenient:
		if !json.Valid(b) {
			return nil, errors.New("not valid JSON")
		}
		if c.format == schema.FormatJSON {
			// As strictly as the app's serde.JSON: a record it would refuse
			// must not print as a normal one.
			var err error
			if !utf8.Valid(b) {
				err = errors.New("$: invalid UTF-8")
			} else if v, derr := decodeJSON(b); derr != nil {
				err = derr
			} else {
				err = checkJSONValue(c.t, v, "$")
			}
			if err != nil {
				return json.RawMessage(b), &refusedError{err}
			}
		}
		return json.RawMessage(b), nil
	case schema.FormatAvro, schema.FormatAvroConfluent:
		payload := b
		if c.format == schema.FormatAvroConfluent {
			id, p, err := avro.ParseConfluentHeader(b)
			if err != nil {
				return nil, err
			}
			if c.schemaID != 0 {
				if err := avro.CheckSchemaID(id, c.schemaID); err != nil {
					return nil, err
				}
			}
			payload = p
		}
		v, rest, err := readAvro(payload, c.t, "$")
		if err != nil {
			return nil, err
		}
		if len(rest) != 0 {
			return nil, fmt.Errorf("%d bytes after the value", len(rest))
		}
		return v, nil
	}
	return nil, fmt.Errorf("format %s is not supported by kgen consume", c.format)
}

func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func typeErr(path string, want string, v any) error {
	return fmt.Errorf("%s: want %s, got %s", path, want, jsonKind(v))
}

func intOf(v any, path string, lo, hi int64) (int64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, typeErr(path, "a whole number", v)
	}
	i, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil || i < lo || i > hi {
		return 0, fmt.Errorf("%s: %s is not a whole number from %d to %d", path, n, lo, hi)
	}
	return i, nil
}

func floatOf(v any, path string) (float64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, typeErr(path, "a number", v)
	}
	return n.Float64()
}

func decodeBase64(v any, path string) ([]byte, error) {
	s, ok := v.(string)
	if !ok {
		return nil, typeErr(path, "a base64 string", v)
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%s: not base64: %v", path, err)
	}
	return b, nil
}

func timeOf(v any, path string) (time.Time, error) {
	s, ok := v.(string)
	if !ok {
		return time.Time{}, typeErr(path, "an RFC 3339 time string", v)
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: %v", path, err)
	}
	return t, nil
}

func ratOf(v any, path string) (*big.Rat, error) {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case json.Number:
		s = x.String()
	default:
		return nil, typeErr(path, "a decimal number or string", v)
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil, fmt.Errorf("%s: %q is not a decimal", path, s)
	}
	return r, nil
}

// checkJSONValue checks a JSON value against a Go record type as the
// strict JSON serde will (serde.JSON): members by exact wire name, no null
// where the Go type cannot hold nil, and the JSON kind of each value.
func checkJSONValue(t *model.Type, v any, path string) error {
	if t == nil {
		return nil
	}
	if v == nil {
		if t.Kind == model.Optional || t.Kind == model.Array || t.Kind == model.Map || t.Kind == model.Bytes {
			return nil
		}
		return fmt.Errorf("%s: null, but %s cannot be null", path, kindName(t))
	}
	switch t.Kind {
	case model.String, model.UUID, model.Enum:
		if _, ok := v.(string); !ok {
			return typeErr(path, "a string", v)
		}
	case model.Bytes:
		_, err := decodeBase64(v, path)
		return err
	case model.Bool:
		if _, ok := v.(bool); !ok {
			return typeErr(path, "a boolean", v)
		}
	case model.Int32:
		_, err := intOf(v, path, math.MinInt32, math.MaxInt32)
		return err
	case model.Int64:
		_, err := intOf(v, path, math.MinInt64, math.MaxInt64)
		return err
	case model.Float32, model.Float64:
		_, err := floatOf(v, path)
		return err
	case model.Timestamp, model.Date:
		_, err := timeOf(v, path)
		return err
	case model.Optional:
		return checkJSONValue(t.Elem, v, path)
	case model.Array:
		arr, ok := v.([]any)
		if !ok {
			return typeErr(path, "an array", v)
		}
		for i, e := range arr {
			if err := checkJSONValue(t.Elem, e, path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
	case model.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			return typeErr(path, "an object", v)
		}
		for _, k := range sortedAnyKeys(obj) {
			if err := checkJSONValue(t.Elem, obj[k], path+"["+strconv.Quote(k)+"]"); err != nil {
				return err
			}
		}
	case model.Record:
		obj, ok := v.(map[string]any)
		if !ok {
			return typeErr(path, "an object", v)
		}
		fields := map[string]*model.Field{}
		for _, f := range t.Fields {
			fields[f.WireName] = f
		}
		for _, k := range sortedAnyKeys(obj) {
			f, ok := fields[k]
			if !ok {
				return fmt.Errorf("%s: member %q is no field of %s", path, k, t.FullName)
			}
			if err := checkJSONValue(f.Type, obj[k], path+"."+k); err != nil {
				return err
			}
		}
	}
	return nil
}

func kindName(t *model.Type) string {
	if t.FullName != "" {
		return t.FullName
	}
	return t.Kind.String()
}

func sortedAnyKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sortStrings(keys)
	return keys
}

// appendAvro appends the Avro binary encoding of the JSON value v of type t.
func appendAvro(dst []byte, t *model.Type, v any, path string) ([]byte, error) {
	switch t.Kind {
	case model.String, model.UUID:
		s, ok := v.(string)
		if !ok {
			return nil, typeErr(path, "a string", v)
		}
		return avro.AppendString(dst, s), nil
	case model.Bytes:
		b, err := decodeBase64(v, path)
		return avro.AppendBytes(dst, b), err
	case model.Fixed:
		b, err := decodeBase64(v, path)
		if err == nil && len(b) != t.Size {
			err = fmt.Errorf("%s: %d bytes, want %d", path, len(b), t.Size)
		}
		return append(dst, b...), err
	case model.Bool:
		b, ok := v.(bool)
		if !ok {
			return nil, typeErr(path, "a boolean", v)
		}
		return avro.AppendBool(dst, b), nil
	case model.Int32:
		n, err := intOf(v, path, math.MinInt32, math.MaxInt32)
		return avro.AppendInt(dst, int32(n)), err
	case model.Int64:
		n, err := intOf(v, path, math.MinInt64, math.MaxInt64)
		return avro.AppendLong(dst, n), err
	case model.Float32:
		f, err := floatOf(v, path)
		return avro.AppendFloat(dst, float32(f)), err
	case model.Float64:
		f, err := floatOf(v, path)
		return avro.AppendDouble(dst, f), err
	case model.Timestamp:
		ts, err := timeOf(v, path)
		if t.Unit == model.Micros {
			return avro.AppendTimestampMicros(dst, ts), err
		}
		return avro.AppendTimestampMillis(dst, ts), err
	case model.Date:
		ts, err := timeOf(v, path)
		if err != nil {
			return nil, err
		}
		return avro.AppendDate(dst, ts)
	case model.Decimal:
		r, err := ratOf(v, path)
		if err != nil {
			return nil, err
		}
		if t.Size > 0 {
			return avro.AppendFixedDecimal(dst, r, t.Precision, t.Scale, t.Size)
		}
		return avro.AppendDecimal(dst, r, t.Precision, t.Scale)
	case model.Enum:
		s, ok := v.(string)
		if !ok {
			return nil, typeErr(path, "an enum symbol", v)
		}
		for i, sym := range t.Symbols {
			if sym == s {
				return avro.AppendInt(dst, int32(i)), nil
			}
		}
		return nil, fmt.Errorf("%s: %q is no symbol of %s", path, s, t.FullName)
	case model.Optional:
		if v == nil {
			return avro.AppendLong(dst, int64(t.NullIndex)), nil
		}
		return appendAvro(avro.AppendLong(dst, int64(1-t.NullIndex)), t.Elem, v, path)
	case model.Array:
		arr, ok := v.([]any)
		if !ok {
			return nil, typeErr(path, "an array", v)
		}
		if len(arr) > 0 {
			dst = avro.AppendLong(dst, int64(len(arr)))
			for i, e := range arr {
				var err error
				if dst, err = appendAvro(dst, t.Elem, e, path+"["+strconv.Itoa(i)+"]"); err != nil {
					return nil, err
				}
			}
		}
		return avro.AppendLong(dst, 0), nil
	case model.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, typeErr(path, "an object", v)
		}
		if len(obj) > 0 {
			dst = avro.AppendLong(dst, int64(len(obj)))
			for _, k := range sortedAnyKeys(obj) {
				dst = avro.AppendString(dst, k)
				var err error
				if dst, err = appendAvro(dst, t.Elem, obj[k], path+"["+strconv.Quote(k)+"]"); err != nil {
					return nil, err
				}
			}
		}
		return avro.AppendLong(dst, 0), nil
	case model.Record:
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, typeErr(path, "an object", v)
		}
		known := map[string]bool{}
		for _, f := range t.Fields {
			known[f.WireName] = true
			fv, present := obj[f.WireName]
			if !present {
				if f.Type.Kind != model.Optional {
					return nil, fmt.Errorf("%s: member %q is missing", path, f.WireName)
				}
				fv = nil
			}
			var err error
			if dst, err = appendAvro(dst, f.Type, fv, path+"."+f.WireName); err != nil {
				return nil, err
			}
		}
		for _, k := range sortedAnyKeys(obj) {
			if !known[k] {
				return nil, fmt.Errorf("%s: member %q is no field of %s", path, k, t.FullName)
			}
		}
		return dst, nil
	}
	return nil, fmt.Errorf("%s: %s values are not supported by kgen produce yet", path, t.Kind)
}

// readAvro decodes one Avro value of type t into its JSON form.
func readAvro(src []byte, t *model.Type, path string) (any, []byte, error) {
	wrap := func(v any, rest []byte, err error) (any, []byte, error) {
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		return v, rest, nil
	}
	switch t.Kind {
	case model.String, model.UUID:
		return wrap(avro.ReadString(src, ""))
	case model.Bytes:
		b, rest, err := avro.ReadBytes(src)
		return wrap(base64.StdEncoding.EncodeToString(b), rest, err)
	case model.Fixed:
		b := make([]byte, t.Size)
		rest, err := avro.ReadFixed(src, b)
		return wrap(base64.StdEncoding.EncodeToString(b), rest, err)
	case model.Bool:
		return wrap(avro.ReadBool(src))
	case model.Int32:
		return wrap(avro.ReadInt(src))
	case model.Int64:
		return wrap(avro.ReadLong(src))
	case model.Float32:
		return wrap(avro.ReadFloat(src))
	case model.Float64:
		return wrap(avro.ReadDouble(src))
	case model.Timestamp:
		var ts time.Time
		var rest []byte
		var err error
		if t.Unit == model.Micros {
			ts, rest, err = avro.ReadTimestampMicros(src)
		} else {
			ts, rest, err = avro.ReadTimestampMillis(src)
		}
		return wrap(ts.UTC().Format(time.RFC3339Nano), rest, err)
	case model.Date:
		ts, rest, err := avro.ReadDate(src)
		return wrap(ts.Format(time.DateOnly)+"T00:00:00Z", rest, err)
	case model.Decimal:
		var r *big.Rat
		var rest []byte
		var err error
		if t.Size > 0 {
			r, rest, err = avro.ReadFixedDecimal(src, t.Scale, t.Size)
		} else {
			r, rest, err = avro.ReadDecimal(src, t.Scale)
		}
		if err != nil {
			return wrap(nil, nil, err)
		}
		return r.FloatString(t.Scale), rest, nil
	case model.Enum:
		i, rest, err := avro.ReadEnumIndex(src, len(t.Symbols))
		if err != nil {
			return wrap(nil, nil, err)
		}
		return t.Symbols[i], rest, nil
	case model.Optional:
		i, rest, err := avro.ReadUnionIndex(src, 2)
		if err != nil {
			return wrap(nil, nil, err)
		}
		if i == t.NullIndex {
			return nil, rest, nil
		}
		return readAvro(rest, t.Elem, path)
	case model.Array:
		out := []any{}
		for {
			n, rest, err := avro.ReadBlockCount(src, len(out), 0)
			if err != nil {
				return wrap(nil, nil, err)
			}
			src = rest
			if n == 0 {
				return out, src, nil
			}
			for range n {
				v, rest, err := readAvro(src, t.Elem, path+"["+strconv.Itoa(len(out))+"]")
				if err != nil {
					return nil, nil, err
				}
				out, src = append(out, v), rest
			}
		}
	case model.Map:
		out := map[string]any{}
		for {
			n, rest, err := avro.ReadBlockCount(src, len(out), 0)
			if err != nil {
				return wrap(nil, nil, err)
			}
			src = rest
			if n == 0 {
				return out, src, nil
			}
			for range n {
				k, rest, err := avro.ReadString(src, "")
				if err != nil {
					return wrap(nil, nil, err)
				}
				v, rest, err := readAvro(rest, t.Elem, path+"["+strconv.Quote(k)+"]")
				if err != nil {
					return nil, nil, err
				}
				out[k], src = v, rest
			}
		}
	case model.Record:
		out := map[string]any{}
		for _, f := range t.Fields {
			v, rest, err := readAvro(src, f.Type, path+"."+f.WireName)
			if err != nil {
				return nil, nil, err
			}
			out[f.WireName], src = v, rest
		}
		return out, src, nil
	}
	return nil, nil, fmt.Errorf("%s: %s values are not supported by kgen consume yet", path, t.Kind)
}
