package queryapi

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// ParseKey parses a key written in a URL as K: a string as it is, a number
// or bool as strconv writes it, bytes as standard base64, anything else
// (records) as JSON. FormatKey writes what it reads. The error says what K
// wants.
func ParseKey[K any](s string) (K, error) {
	var k K
	var err error
	switch p := any(&k).(type) {
	case *string:
		*p = s
	case *[]byte:
		*p, err = base64.StdEncoding.DecodeString(s)
		if err != nil {
			err = fmt.Errorf("not base64 bytes: %v", err)
		}
	case *bool:
		*p, err = strconv.ParseBool(s)
		if err != nil {
			err = fmt.Errorf("not a bool (true or false)")
		}
	case *int64:
		*p, err = parseInt[int64](s, 64)
	case *int32:
		*p, err = parseInt[int32](s, 32)
	case *int16:
		*p, err = parseInt[int16](s, 16)
	case *int8:
		*p, err = parseInt[int8](s, 8)
	case *int:
		*p, err = parseInt[int](s, strconv.IntSize)
	case *float64:
		*p, err = strconv.ParseFloat(s, 64)
		if err != nil {
			err = fmt.Errorf("not a number (float64)")
		}
	case *float32:
		var f float64
		f, err = strconv.ParseFloat(s, 32)
		*p = float32(f)
		if err != nil {
			err = fmt.Errorf("not a number (float32)")
		}
	default:
		if err = json.Unmarshal([]byte(s), p); err != nil {
			err = fmt.Errorf("not a %T as JSON: %v", k, err)
		}
	}
	return k, err
}

func parseInt[I int | int8 | int16 | int32 | int64](s string, bits int) (I, error) {
	n, err := strconv.ParseInt(s, 10, bits)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, fmt.Errorf("out of range of an int%d", bits)
		}
		return 0, fmt.Errorf("not an integer (int%d)", bits)
	}
	return I(n), nil
}

// FormatKey writes a key as ParseKey reads it.
func FormatKey[K any](k K) (string, error) {
	switch v := any(k).(type) {
	case string:
		return v, nil
	case []byte:
		return base64.StdEncoding.EncodeToString(v), nil
	case bool:
		return strconv.FormatBool(v), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case int32:
		return strconv.FormatInt(int64(v), 10), nil
	case int16:
		return strconv.FormatInt(int64(v), 10), nil
	case int8:
		return strconv.FormatInt(int64(v), 10), nil
	case int:
		return strconv.Itoa(v), nil
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64), nil
	case float32:
		return strconv.FormatFloat(float64(v), 'g', -1, 32), nil
	}
	b, err := json.Marshal(k)
	return string(b), err
}
