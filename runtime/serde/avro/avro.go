// Package avro is the runtime of kgen's generated Avro codecs: bounded readers
// and appenders of the Avro binary encoding, errors that name the path to the
// failing field, and the Confluent wire format header. It depends on no Avro
// library; generated code calls it in straight lines, without reflection.
//
// Every length and count read from the wire is checked against the input that
// is left and against MaxBytesLen, MaxItems and MaxDepth before anything is
// allocated, so hostile input yields an error, never a huge allocation.
package avro

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"time"
)

// Limits applied while decoding. They are read on every call; set them once
// at program start, before any decoding, if the defaults do not fit.
var (
	// MaxBytesLen is the largest bytes or string value accepted: 64 MiB.
	MaxBytesLen = 64 << 20
	// MaxItems is the largest number of items accepted in one array or map,
	// over all its blocks: 1<<20.
	MaxItems = 1 << 20
	// MaxDepth is how deeply records may nest (recursive schemas): 1000.
	// It also stops encoding of values whose pointers form a cycle.
	MaxDepth = 1000
)

// Errors a decoder returns, wrapped in *Error with the path where it occurred.
var (
	ErrShort    = errors.New("unexpected end of input")
	ErrOverflow = errors.New("varint overflows its type")
	ErrTooDeep  = errors.New("values nest deeper than avro.MaxDepth")
)

// Error is an Avro encoding or decoding failure. Path names the field inside
// the value: "lines[2].qty", `attrs["k"]`.
type Error struct {
	Op   string // "decode" or "encode"; empty while the error travels up
	Type string // Avro full name of the outermost type
	Path string
	Err  error
}

func (e *Error) Error() string {
	s := e.Err.Error()
	if e.Path != "" {
		s = e.Path + ": " + s
	}
	if e.Op != "" {
		s = e.Op + " avro " + e.Type + ": " + s
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

func prefix(err error, seg string) error {
	if e, ok := err.(*Error); ok && e.Op == "" {
		if e.Path == "" || e.Path[0] == '[' {
			e.Path = seg + e.Path
		} else {
			e.Path = seg + "." + e.Path
		}
		return e
	}
	return &Error{Path: seg, Err: err}
}

// Field puts a record field's name in front of err's path.
func Field(err error, name string) error { return prefix(err, name) }

// Index puts an array index in front of err's path.
func Index(err error, i int) error { return prefix(err, "["+strconv.Itoa(i)+"]") }

// Key puts a map key in front of err's path.
func Key(err error, k string) error { return prefix(err, "["+strconv.Quote(k)+"]") }

// Decoding marks err as the failure to decode a value of the named type.
func Decoding(err error, typ string) error { return finish(err, "decode", typ) }

// Encoding marks err as the failure to encode a value of the named type.
func Encoding(err error, typ string) error { return finish(err, "encode", typ) }

func finish(err error, op, typ string) error {
	if e, ok := err.(*Error); ok && e.Op == "" {
		e.Op, e.Type = op, typ
		return e
	}
	return &Error{Op: op, Type: typ, Err: err}
}

// AppendLong appends v as a zigzag varint (Avro long).
func AppendLong(dst []byte, v int64) []byte {
	u := uint64(v<<1) ^ uint64(v>>63)
	for u >= 0x80 {
		dst = append(dst, byte(u)|0x80)
		u >>= 7
	}
	return append(dst, byte(u))
}

// AppendInt appends v as a zigzag varint (Avro int).
func AppendInt(dst []byte, v int32) []byte { return AppendLong(dst, int64(v)) }

// ReadLong reads a zigzag varint of at most 10 bytes.
func ReadLong(src []byte) (int64, []byte, error) {
	if len(src) > 0 && src[0] < 0x80 {
		u := uint64(src[0])
		return int64(u>>1) ^ -int64(u&1), src[1:], nil
	}
	var u uint64
	for i := 0; i < len(src) && i < 10; i++ {
		b := src[i]
		if i == 9 && b > 1 {
			return 0, nil, ErrOverflow
		}
		u |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return int64(u>>1) ^ -int64(u&1), src[i+1:], nil
		}
	}
	if len(src) >= 10 {
		return 0, nil, ErrOverflow
	}
	return 0, nil, ErrShort
}

// ReadInt reads a zigzag varint of at most 5 bytes whose value fits an int32.
func ReadInt(src []byte) (int32, []byte, error) {
	if len(src) > 0 && src[0] < 0x80 {
		u := uint32(src[0])
		return int32(u>>1) ^ -int32(u&1), src[1:], nil
	}
	var u uint32
	for i := 0; i < len(src) && i < 5; i++ {
		b := src[i]
		if i == 4 && b > 0x0f {
			return 0, nil, ErrOverflow
		}
		u |= uint32(b&0x7f) << (7 * i)
		if b < 0x80 {
			return int32(u>>1) ^ -int32(u&1), src[i+1:], nil
		}
	}
	if len(src) >= 5 {
		return 0, nil, ErrOverflow
	}
	return 0, nil, ErrShort
}

// AppendBool appends v as one byte, 0 or 1.
func AppendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, 1)
	}
	return append(dst, 0)
}

// ReadBool reads one byte that must be 0 or 1.
func ReadBool(src []byte) (bool, []byte, error) {
	if len(src) == 0 {
		return false, nil, ErrShort
	}
	switch src[0] {
	case 0:
		return false, src[1:], nil
	case 1:
		return true, src[1:], nil
	}
	return false, nil, fmt.Errorf("invalid boolean byte 0x%02x", src[0])
}

// AppendFloat appends v as 4 little-endian bytes.
func AppendFloat(dst []byte, v float32) []byte {
	return binary.LittleEndian.AppendUint32(dst, math.Float32bits(v))
}

// ReadFloat reads 4 little-endian bytes.
func ReadFloat(src []byte) (float32, []byte, error) {
	if len(src) < 4 {
		return 0, nil, ErrShort
	}
	return math.Float32frombits(binary.LittleEndian.Uint32(src)), src[4:], nil
}

// AppendDouble appends v as 8 little-endian bytes.
func AppendDouble(dst []byte, v float64) []byte {
	return binary.LittleEndian.AppendUint64(dst, math.Float64bits(v))
}

// ReadDouble reads 8 little-endian bytes.
func ReadDouble(src []byte) (float64, []byte, error) {
	if len(src) < 8 {
		return 0, nil, ErrShort
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(src)), src[8:], nil
}

// AppendBytes appends v with its length in front.
func AppendBytes(dst, v []byte) []byte {
	return append(AppendLong(dst, int64(len(v))), v...)
}

// AppendString appends v with its length in front.
func AppendString(dst []byte, v string) []byte {
	return append(AppendLong(dst, int64(len(v))), v...)
}

// readLen reads a length prefix and checks it against the input left and
// MaxBytesLen.
func readLen(src []byte) (int, []byte, error) {
	n, src, err := ReadLong(src)
	switch {
	case err != nil:
		return 0, nil, err
	case n < 0:
		return 0, nil, fmt.Errorf("negative length %d", n)
	case n > int64(MaxBytesLen):
		return 0, nil, fmt.Errorf("length %d exceeds avro.MaxBytesLen %d", n, MaxBytesLen)
	case n > int64(len(src)):
		return 0, nil, fmt.Errorf("length %d exceeds the %d bytes left: %w", n, len(src), ErrShort)
	}
	return int(n), src, nil
}

// ReadBytes reads a length-prefixed byte string into a new slice (nil when
// empty), so the result never aliases src.
func ReadBytes(src []byte) ([]byte, []byte, error) {
	n, src, err := readLen(src)
	if err != nil || n == 0 {
		return nil, src, err
	}
	b := make([]byte, n)
	copy(b, src)
	return b, src[n:], nil
}

// ReadString reads a length-prefixed string. When whole is not empty it
// must hold the same bytes as the buffer src is the tail of (see Whole): the
// string is then cut out of whole instead of being allocated.
func ReadString(src []byte, whole string) (string, []byte, error) {
	n, src, err := readLen(src)
	if err != nil {
		return "", nil, err
	}
	if whole != "" && len(src) <= len(whole) {
		off := len(whole) - len(src)
		return whole[off : off+n], src[n:], nil
	}
	return string(src[:n]), src[n:], nil
}

// MaxWhole is the largest input Whole copies: above it, strings are
// allocated one by one so that a small string cannot keep a large copy alive.
const MaxWhole = 64 << 10

// Whole returns one copy of b as a string, for the strings of a value decoded
// from all of b to share instead of each being allocated; "" when b is
// larger than MaxWhole. The strings keep the whole copy alive.
func Whole(b []byte) string {
	if len(b) > MaxWhole {
		return ""
	}
	return string(b)
}

// ReadFixed fills dst with the next len(dst) bytes.
func ReadFixed(src, dst []byte) ([]byte, error) {
	if len(src) < len(dst) {
		return nil, ErrShort
	}
	copy(dst, src)
	return src[len(dst):], nil
}

// ReadBlockCount reads the header of an array or map block and returns how
// many items follow (0 ends the array or map). A negative count is followed by
// the block's size in bytes, which is checked and skipped. total is the number
// of items already read from earlier blocks: together they may not exceed
// MaxItems. minItemSize is the fewest bytes one item can take on the wire;
// when it is positive, a count the remaining input cannot hold is an error.
func ReadBlockCount(src []byte, total, minItemSize int) (int, []byte, error) {
	n, src, err := ReadLong(src)
	if err != nil {
		return 0, nil, err
	}
	if n < 0 {
		if n == math.MinInt64 {
			return 0, nil, fmt.Errorf("invalid block count %d", n)
		}
		n = -n
		var size int64
		if size, src, err = ReadLong(src); err != nil {
			return 0, nil, err
		}
		if size < 0 || size > int64(len(src)) {
			return 0, nil, fmt.Errorf("block size %d exceeds the %d bytes left: %w", size, len(src), ErrShort)
		}
	}
	if n > int64(MaxItems-total) {
		return 0, nil, fmt.Errorf("%d items exceed avro.MaxItems %d", n+int64(total), MaxItems)
	}
	if minItemSize > 0 && n > int64(len(src)/minItemSize) {
		return 0, nil, fmt.Errorf("block of %d items exceeds the %d bytes left: %w", n, len(src), ErrShort)
	}
	return int(n), src, nil
}

// ReadUnionIndex reads a union branch index, which must be below n.
func ReadUnionIndex(src []byte, n int) (int, []byte, error) {
	i, src, err := ReadLong(src)
	if err != nil {
		return 0, nil, err
	}
	if i < 0 || i >= int64(n) {
		return 0, nil, fmt.Errorf("union index %d out of range [0,%d)", i, n)
	}
	return int(i), src, nil
}

// ReadEnumIndex reads an enum symbol index, which must be below n.
func ReadEnumIndex(src []byte, n int) (int, []byte, error) {
	i, src, err := ReadInt(src)
	if err != nil {
		return 0, nil, err
	}
	if i < 0 || int(i) >= n {
		return 0, nil, fmt.Errorf("enum index %d out of range [0,%d)", i, n)
	}
	return int(i), src, nil
}

// AppendTimestampMillis appends t as milliseconds since the Unix epoch.
func AppendTimestampMillis(dst []byte, t time.Time) []byte { return AppendLong(dst, t.UnixMilli()) }

// AppendTimestampMicros appends t as microseconds since the Unix epoch.
func AppendTimestampMicros(dst []byte, t time.Time) []byte { return AppendLong(dst, t.UnixMicro()) }

// ReadTimestampMillis reads milliseconds since the Unix epoch as a UTC time.
func ReadTimestampMillis(src []byte) (time.Time, []byte, error) {
	n, src, err := ReadLong(src)
	if err != nil {
		return time.Time{}, nil, err
	}
	return time.UnixMilli(n).UTC(), src, nil
}

// ReadTimestampMicros reads microseconds since the Unix epoch as a UTC time.
func ReadTimestampMicros(src []byte) (time.Time, []byte, error) {
	n, src, err := ReadLong(src)
	if err != nil {
		return time.Time{}, nil, err
	}
	return time.UnixMicro(n).UTC(), src, nil
}

const secondsPerDay = 24 * 60 * 60

// AppendDate appends the calendar day of t (in UTC) as days since 1970-01-01.
func AppendDate(dst []byte, t time.Time) ([]byte, error) {
	s := t.Unix()
	d := s / secondsPerDay
	if s%secondsPerDay < 0 {
		d-- // floor: 1969-12-31T12:00Z is day -1
	}
	if d < math.MinInt32 || d > math.MaxInt32 {
		return nil, fmt.Errorf("date %s out of range", t.Format(time.DateOnly))
	}
	return AppendInt(dst, int32(d)), nil
}

// ReadDate reads days since 1970-01-01 as midnight UTC of that day.
func ReadDate(src []byte) (time.Time, []byte, error) {
	d, src, err := ReadInt(src)
	if err != nil {
		return time.Time{}, nil, err
	}
	return time.Unix(int64(d)*secondsPerDay, 0).UTC(), src, nil
}

var bigTen = big.NewInt(10)

// unscaled returns r·10^scale, which must be a whole number of at most
// precision digits.
func unscaled(r *big.Rat, precision, scale int) (*big.Int, error) {
	if r == nil {
		return new(big.Int), nil
	}
	i := new(big.Int).Exp(bigTen, big.NewInt(int64(scale)), nil)
	i.Mul(i, r.Num())
	var rem big.Int
	i.QuoRem(i, r.Denom(), &rem)
	if rem.Sign() != 0 {
		return nil, fmt.Errorf("decimal %s has more than %d fractional digits", r.RatString(), scale)
	}
	if n := len(new(big.Int).Abs(i).String()); n > precision {
		return nil, fmt.Errorf("decimal %s has %d digits, more than precision %d", r.FloatString(scale), n, precision)
	}
	return i, nil
}

// twosComplement returns the shortest big-endian two's complement bytes of i.
func twosComplement(i *big.Int) []byte {
	switch i.Sign() {
	case 0:
		return []byte{0}
	case 1:
		b := i.Bytes()
		if b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		return b
	}
	m := new(big.Int).Neg(i)
	m.Sub(m, big.NewInt(1))
	b := m.Bytes()
	for k := range b {
		b[k] = ^b[k]
	}
	if len(b) == 0 || b[0]&0x80 == 0 {
		b = append([]byte{0xff}, b...)
	}
	return b
}

func fromTwosComplement(b []byte, scale int) *big.Rat {
	i := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		i.Sub(i, new(big.Int).Lsh(big.NewInt(1), uint(len(b))*8))
	}
	d := new(big.Int).Exp(bigTen, big.NewInt(int64(scale)), nil)
	return new(big.Rat).SetFrac(i, d)
}

// AppendDecimal appends r as an Avro bytes decimal: the two's complement of
// r·10^scale with its length in front. A nil r is zero. r must have at most
// scale fractional digits and precision digits in all.
func AppendDecimal(dst []byte, r *big.Rat, precision, scale int) ([]byte, error) {
	i, err := unscaled(r, precision, scale)
	if err != nil {
		return nil, err
	}
	return AppendBytes(dst, twosComplement(i)), nil
}

// AppendFixedDecimal appends r as an Avro fixed decimal of size bytes.
func AppendFixedDecimal(dst []byte, r *big.Rat, precision, scale, size int) ([]byte, error) {
	i, err := unscaled(r, precision, scale)
	if err != nil {
		return nil, err
	}
	b := twosComplement(i)
	if len(b) > size {
		return nil, fmt.Errorf("decimal %s does not fit in %d bytes", r.FloatString(scale), size)
	}
	pad := byte(0)
	if i.Sign() < 0 {
		pad = 0xff
	}
	for range size - len(b) {
		dst = append(dst, pad)
	}
	return append(dst, b...), nil
}

// ReadDecimal reads an Avro bytes decimal with the given scale.
func ReadDecimal(src []byte, scale int) (*big.Rat, []byte, error) {
	n, src, err := readLen(src)
	if err != nil {
		return nil, nil, err
	}
	return fromTwosComplement(src[:n], scale), src[n:], nil
}

// ReadFixedDecimal reads an Avro fixed decimal of size bytes.
func ReadFixedDecimal(src []byte, scale, size int) (*big.Rat, []byte, error) {
	if len(src) < size {
		return nil, nil, ErrShort
	}
	return fromTwosComplement(src[:size], scale), src[size:], nil
}

// More errors of generated code.
var (
	ErrNilUnion = errors.New("nil value for a union without a null branch")
	ErrTrailing = errors.New("bytes left after the value")
)

// SortedKeys appends the keys of m to buf in increasing order and returns
// the result: generated encoders write maps in key order, so equal values
// always encode to equal bytes. A stack array as buf avoids an allocation for
// small maps.
func SortedKeys[V any](buf []string, m map[string]V) []string {
	for k := range m {
		buf = append(buf, k)
	}
	slices.Sort(buf)
	return buf
}
