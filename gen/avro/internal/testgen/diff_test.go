package testgen

import (
	"bytes"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	hamba "github.com/hamba/avro/v2"

	gen "github.com/kgen-dev/kgen/gen/avro"
	"github.com/kgen-dev/kgen/gen/model"
)

// codec is what every generated record type implements on its pointer.
type codec interface {
	AppendAvro(dst []byte) ([]byte, error)
	DecodeAvro(src []byte) ([]byte, error)
}

type record struct {
	full   string
	schema string
	typ    reflect.Type
}

var records = []record{
	{"com.example.crm.Address", AddressAvroSchema, reflect.TypeFor[Address]()},
	{"com.example.shop.Card", CardAvroSchema, reflect.TypeFor[Card]()},
	{"com.example.shop.Cash", CashAvroSchema, reflect.TypeFor[Cash]()},
	{"com.example.events.Created", CreatedAvroSchema, reflect.TypeFor[Created]()},
	{"com.example.crm.Customer", CustomerAvroSchema, reflect.TypeFor[Customer]()},
	{"com.example.events.Deleted", DeletedAvroSchema, reflect.TypeFor[Deleted]()},
	{"org.apache.avro.Foo", FooAvroSchema, reflect.TypeFor[Foo]()},
	{"org.apache.avro.Interop", InteropAvroSchema, reflect.TypeFor[Interop]()},
	{"com.example.shop.Line", LineAvroSchema, reflect.TypeFor[Line]()},
	{"org.apache.avro.Node", NodeAvroSchema, reflect.TypeFor[Node]()},
	{"com.example.shop.Order", OrderAvroSchema, reflect.TypeFor[Order]()},
	{"com.example.bench.Simple", SimpleAvroSchema, reflect.TypeFor[Simple]()},
}

var fixtures = []string{
	"../../testdata/order.avsc", "../../testdata/customer.avsc", "../../testdata/address.avsc",
	"../../testdata/simple.avsc", "../../testdata/events.avsc", "../../testdata/interop.avsc",
}

func universe(t testing.TB) *model.Universe {
	t.Helper()
	u, err := gen.Load(fixtures)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

var equal = []cmp.Option{
	cmpopts.EquateEmpty(),
	cmp.Comparer(func(a, b *big.Rat) bool {
		if a == nil || b == nil {
			return a == b
		}
		return a.Cmp(b) == 0
	}),
}

// gen fills values at random, guided by the model.
type valueGen struct {
	r *rand.Rand
	// multiMap is set when a value holds a map of two or more entries:
	// hamba writes those in Go's random map order, kgen sorts the keys.
	multiMap bool
}

func (g *valueGen) str() string {
	const alphabet = "abcxyz_-é世🙂"
	rs := []rune(alphabet)
	n := g.r.IntN(8)
	out := make([]rune, n)
	for i := range out {
		out[i] = rs[g.r.IntN(len(rs))]
	}
	return string(out)
}

func (g *valueGen) int64() int64 {
	switch g.r.IntN(4) {
	case 0:
		return []int64{0, -1, 1, math.MaxInt64, math.MinInt64, 63, 64, -64, -65}[g.r.IntN(9)]
	case 1:
		return g.r.Int64N(256) - 128
	}
	return int64(g.r.Uint64())
}

func (g *valueGen) fill(t *model.Type, v reflect.Value, depth int) {
	r := g.r
	switch t.Kind {
	case model.String:
		v.SetString(g.str())
	case model.UUID:
		v.SetString(fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", r.Uint32(), r.IntN(1<<16), r.IntN(1<<12), r.IntN(1<<12), r.Int64N(1<<48)))
	case model.Bytes:
		b := make([]byte, r.IntN(6))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		v.SetBytes(b)
	case model.Bool:
		v.SetBool(r.IntN(2) == 1)
	case model.Int32:
		v.SetInt(int64(int32(g.int64())))
	case model.Int64:
		v.SetInt(g.int64())
	case model.Float32:
		v.SetFloat(float64(float32(r.NormFloat64() * 1e6)))
	case model.Float64:
		v.SetFloat([]float64{0, math.Inf(1), -1.5, r.NormFloat64() * 1e9, math.SmallestNonzeroFloat64}[r.IntN(5)])
	case model.Timestamp:
		if t.Unit == model.Micros {
			v.Set(reflect.ValueOf(time.UnixMicro(r.Int64N(1e17) - 5e16).UTC()))
		} else {
			v.Set(reflect.ValueOf(time.UnixMilli(r.Int64N(1e14) - 5e13).UTC()))
		}
	case model.Date:
		v.Set(reflect.ValueOf(time.Unix((r.Int64N(2e6)-1e6)*86400, 0).UTC()))
	case model.Decimal:
		digits := min(t.Precision, 18)
		un := r.Int64N(int64(math.Pow10(digits)))
		if r.IntN(2) == 0 {
			un = -un
		}
		den := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(t.Scale)), nil)
		v.Set(reflect.ValueOf(new(big.Rat).SetFrac(big.NewInt(un), den)))
	case model.Fixed:
		for i := range v.Len() {
			v.Index(i).SetUint(uint64(r.IntN(256)))
		}
	case model.Enum:
		v.SetString(t.Symbols[r.IntN(len(t.Symbols))])
	case model.Record:
		for i, f := range t.Fields {
			g.fill(f.Type, v.Field(i), depth+1)
		}
	case model.Array:
		n := r.IntN(4)
		if depth > 4 {
			n = 0
		}
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			g.fill(t.Elem, s.Index(i), depth+1)
		}
		v.Set(s)
	case model.Map:
		n := []int{0, 1, 1, 2}[r.IntN(4)]
		if depth > 4 {
			n = 0
		}
		m := reflect.MakeMap(v.Type())
		for range n {
			e := reflect.New(v.Type().Elem()).Elem()
			g.fill(t.Elem, e, depth+1)
			m.SetMapIndex(reflect.ValueOf(g.str()), e)
		}
		if m.Len() > 1 {
			g.multiMap = true
		}
		v.Set(m)
	case model.Optional:
		if r.IntN(3) == 0 {
			v.SetZero()
			return
		}
		if t.Elem.Kind == model.Decimal {
			g.fill(t.Elem, v, depth)
			return
		}
		p := reflect.New(v.Type().Elem())
		g.fill(t.Elem, p.Elem(), depth)
		v.Set(p)
	case model.Union:
		i := r.IntN(len(t.Variants))
		bt := unionBranches[t.Name][i]
		if bt == nil {
			v.SetZero()
			return
		}
		v.Set(g.branch(t.Variants[i], bt, depth))
	}
}

func (g *valueGen) branch(vt *model.Type, bt reflect.Type, depth int) reflect.Value {
	switch vt.Kind {
	case model.Record:
		p := reflect.New(bt.Elem())
		g.fill(vt, p.Elem(), depth+1)
		return p
	case model.Enum, model.Fixed:
		x := reflect.New(bt).Elem()
		g.fill(vt, x, depth)
		return x
	}
	w := reflect.New(bt).Elem()
	g.fill(vt, w.Field(0), depth)
	return w
}

// branchName is hamba's name for a union branch.
func branchName(t *model.Type) string {
	switch t.Kind {
	case model.Record, model.Enum, model.Fixed:
		return t.FullName
	case model.Decimal:
		if t.Size > 0 {
			return t.FullName
		}
		return "bytes.decimal"
	case model.Int32:
		return "int"
	case model.Int64:
		return "long"
	case model.Float32:
		return "float"
	case model.Float64:
		return "double"
	case model.Bool:
		return "boolean"
	case model.String:
		return "string"
	case model.Bytes:
		return "bytes"
	case model.UUID:
		return "string.uuid"
	case model.Date:
		return "int.date"
	case model.Timestamp:
		if t.Unit == model.Micros {
			return "long.timestamp-micros"
		}
		return "long.timestamp-millis"
	case model.Array:
		return "array"
	case model.Map:
		return "map"
	}
	return "null"
}

// toGeneric converts a generated value into hamba's generic form: records
// and unions as maps.
func toGeneric(t *model.Type, v reflect.Value) any {
	switch t.Kind {
	case model.String, model.UUID, model.Enum:
		return v.String()
	case model.Fixed:
		a := reflect.New(reflect.ArrayOf(v.Len(), reflect.TypeFor[byte]())).Elem()
		reflect.Copy(a, v)
		return a.Interface()
	case model.Record:
		m := map[string]any{}
		for i, f := range t.Fields {
			m[f.WireName] = toGeneric(f.Type, v.Field(i))
		}
		return m
	case model.Array:
		a := make([]any, v.Len())
		for i := range a {
			a[i] = toGeneric(t.Elem, v.Index(i))
		}
		return a
	case model.Map:
		m := map[string]any{}
		for it := v.MapRange(); it.Next(); {
			m[it.Key().String()] = toGeneric(t.Elem, it.Value())
		}
		return m
	case model.Optional:
		if v.IsNil() {
			return map[string]any(nil)
		}
		if t.Elem.Kind == model.Decimal {
			return map[string]any{branchName(t.Elem): v.Interface()}
		}
		return map[string]any{branchName(t.Elem): toGeneric(t.Elem, v.Elem())}
	case model.Union:
		if v.IsNil() {
			return map[string]any(nil)
		}
		e := v.Elem()
		for i, bt := range unionBranches[t.Name] {
			if bt != e.Type() {
				continue
			}
			vt := t.Variants[i]
			switch vt.Kind {
			case model.Record:
				return map[string]any{branchName(vt): toGeneric(vt, e.Elem())}
			case model.Enum, model.Fixed:
				return map[string]any{branchName(vt): toGeneric(vt, e)}
			}
			return map[string]any{branchName(vt): toGeneric(vt, e.Field(0))}
		}
		panic(fmt.Sprintf("%s: no branch of type %s", t.Name, e.Type()))
	case model.Kind(0):
		return nil
	}
	return v.Interface()
}

// fromGeneric stores hamba's generic value g into the generated value v.
func fromGeneric(t *model.Type, g any, v reflect.Value) error {
	switch t.Kind {
	case model.String, model.UUID, model.Enum:
		s, ok := g.(string)
		if !ok {
			return fmt.Errorf("%s: got %T", t.Kind, g)
		}
		v.SetString(s)
	case model.Int32:
		v.SetInt(int64(g.(int)))
	case model.Fixed:
		reflect.Copy(v, reflect.ValueOf(g))
	case model.Record:
		m := g.(map[string]any)
		for i, f := range t.Fields {
			if err := fromGeneric(f.Type, m[f.WireName], v.Field(i)); err != nil {
				return fmt.Errorf("%s: %w", f.WireName, err)
			}
		}
	case model.Array:
		a := g.([]any)
		s := reflect.MakeSlice(v.Type(), len(a), len(a))
		for i, e := range a {
			if err := fromGeneric(t.Elem, e, s.Index(i)); err != nil {
				return err
			}
		}
		v.Set(s)
	case model.Map:
		gm := g.(map[string]any)
		m := reflect.MakeMap(v.Type())
		for k, e := range gm {
			x := reflect.New(v.Type().Elem()).Elem()
			if err := fromGeneric(t.Elem, e, x); err != nil {
				return err
			}
			m.SetMapIndex(reflect.ValueOf(k), x)
		}
		v.Set(m)
	case model.Optional:
		if g == nil {
			v.SetZero()
			return nil
		}
		inner := unwrap(g, branchName(t.Elem))
		if t.Elem.Kind == model.Decimal {
			return fromGeneric(t.Elem, inner, v)
		}
		p := reflect.New(v.Type().Elem())
		if err := fromGeneric(t.Elem, inner, p.Elem()); err != nil {
			return err
		}
		v.Set(p)
	case model.Union:
		if g == nil {
			v.SetZero()
			return nil
		}
		m, ok := g.(map[string]any)
		if !ok || len(m) != 1 {
			// hamba leaves some unions unwrapped (inside maps): match by Go type
			m = nil
			for _, vt := range t.Variants {
				if !vt.Null && matches(vt, g) {
					m = map[string]any{branchName(vt): g}
					break
				}
			}
			if m == nil {
				return fmt.Errorf("union %s: got %#v", t.Name, g)
			}
		}
		for name, inner := range m {
			for i, vt := range t.Variants {
				if vt.Null || branchName(vt) != name {
					continue
				}
				bt := unionBranches[t.Name][i]
				switch vt.Kind {
				case model.Record:
					p := reflect.New(bt.Elem())
					if err := fromGeneric(vt, inner, p.Elem()); err != nil {
						return err
					}
					v.Set(p)
				case model.Enum, model.Fixed:
					x := reflect.New(bt).Elem()
					if err := fromGeneric(vt, inner, x); err != nil {
						return err
					}
					v.Set(x)
				default:
					w := reflect.New(bt).Elem()
					if err := fromGeneric(vt, inner, w.Field(0)); err != nil {
						return err
					}
					v.Set(w)
				}
				return nil
			}
			return fmt.Errorf("union %s: no branch %q", t.Name, name)
		}
	case model.Kind(0):
	default:
		if g == nil {
			v.SetZero()
			return nil
		}
		v.Set(reflect.ValueOf(g).Convert(v.Type()))
	}
	return nil
}

func unwrap(g any, name string) any {
	if m, ok := g.(map[string]any); ok && len(m) == 1 {
		if x, ok := m[name]; ok {
			return x
		}
	}
	return g
}

var (
	hambaPlain = hamba.Config{DisableBlockSizeHeader: true}.Freeze()
	hambaSized = hamba.Config{}.Freeze() // writes negative block counts with byte sizes
)

// TestDifferential encodes random values of every record type with the
// generated code and with hamba/avro/v2 and requires the same bytes, then
// has each side decode the other's output back to an equal value.
func TestDifferential(t *testing.T) {
	u := universe(t)
	for _, rec := range records {
		t.Run(rec.full, func(t *testing.T) {
			mt := u.Types[rec.full]
			if mt == nil {
				t.Fatalf("no model type %s", rec.full)
			}
			schema, err := hamba.ParseWithCache(rec.schema, "", &hamba.SchemaCache{})
			if err != nil {
				t.Fatalf("hamba rejects the generated schema: %v", err)
			}
			g := &valueGen{r: rand.New(rand.NewPCG(1, uint64(len(rec.full))))}
			exact := 0
			for i := range 300 {
				g.multiMap = false
				want := reflect.New(rec.typ)
				g.fill(mt, want.Elem(), 0)
				if err := check(mt, schema, want, g.multiMap); err != nil {
					t.Fatalf("value %d: %v\nvalue: %#v", i, err, want.Elem().Interface())
				}
				if !g.multiMap {
					exact++
				}
			}
			if exact < 20 {
				t.Errorf("only %d of 300 values were compared byte for byte", exact)
			}
		})
	}
}

func check(mt *model.Type, schema hamba.Schema, want reflect.Value, multiMap bool) error {
	c := want.Interface().(codec)
	mine, err := c.AppendAvro(nil)
	if err != nil {
		return fmt.Errorf("kgen encode: %w", err)
	}
	gv := toGeneric(mt, want.Elem())
	theirs, err := hambaPlain.Marshal(schema, gv)
	if err != nil {
		return fmt.Errorf("hamba encode: %w", err)
	}
	if !multiMap && !bytes.Equal(mine, theirs) {
		return fmt.Errorf("encodings differ:\nkgen  %x\nhamba %x", mine, theirs)
	}
	if len(mine) != len(theirs) {
		return fmt.Errorf("encodings differ in length: kgen %d, hamba %d", len(mine), len(theirs))
	}

	// hamba decodes kgen's bytes
	var out any
	if err := hambaSized.Unmarshal(schema, mine, &out); err != nil {
		return fmt.Errorf("hamba decode of kgen bytes: %w", err)
	}
	got := reflect.New(want.Type().Elem())
	if err := fromGeneric(mt, out, got.Elem()); err != nil {
		return fmt.Errorf("hamba decode of kgen bytes: %w", err)
	}
	if d := cmp.Diff(want.Interface(), got.Interface(), equal...); d != "" {
		return fmt.Errorf("hamba decode of kgen bytes differs (-want +got):\n%s", d)
	}

	// kgen decodes hamba's bytes, in both block styles
	sized, err := hambaSized.Marshal(schema, gv)
	if err != nil {
		return fmt.Errorf("hamba encode: %w", err)
	}
	for _, b := range [][]byte{theirs, sized, mine} {
		got := reflect.New(want.Type().Elem())
		rest, err := got.Interface().(codec).DecodeAvro(b)
		if err != nil {
			return fmt.Errorf("kgen decode of %x: %w", b, err)
		}
		if len(rest) != 0 {
			return fmt.Errorf("kgen decode left %d bytes", len(rest))
		}
		if d := cmp.Diff(want.Interface(), got.Interface(), equal...); d != "" {
			return fmt.Errorf("kgen decode of %x differs (-want +got):\n%s", b, d)
		}
		again, err := got.Interface().(codec).AppendAvro(nil)
		if err != nil || !bytes.Equal(again, mine) {
			return fmt.Errorf("re-encoding is not deterministic: %x, want %x (%v)", again, mine, err)
		}
	}
	return nil
}

// matches reports whether hamba's generic value g can be of type t.
func matches(t *model.Type, g any) bool {
	switch g.(type) {
	case int:
		return t.Kind == model.Int32
	case int64:
		return t.Kind == model.Int64
	case string:
		return t.Kind == model.String || t.Kind == model.UUID || t.Kind == model.Enum
	case float32:
		return t.Kind == model.Float32
	case float64:
		return t.Kind == model.Float64
	case bool:
		return t.Kind == model.Bool
	case []byte:
		return t.Kind == model.Bytes
	case []any:
		return t.Kind == model.Array
	}
	return false
}

func bigRat(s string) *big.Rat {
	r, _ := new(big.Rat).SetString(s)
	return r
}
