package serde_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kgen-dev/kgen/runtime/serde"
)

type address struct {
	City string `json:"city"`
}

type Base struct {
	ID string `json:"id"`
}

type order struct {
	Base
	Item     string            `json:"item"`
	Qty      int               `json:"qty,omitempty"`
	Note     *string           `json:"note"`
	Tags     []string          `json:"tags"`
	Ship     address           `json:"ship"`
	Lines    []address         `json:"lines"`
	ByName   map[string]string `json:"by_name"`
	When     time.Time         `json:"when"`
	Raw      []byte            `json:"raw"`
	Untagged int
	Skipped  int `json:"-"`
	hidden   int
}

// TestJSONStrict: what the strict decoder refuses, where, and that the
// lenient one accepts it as encoding/json does.
func TestJSONStrict(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		err      string // "" for success
	}{
		{"exact", `{"id":"o1","item":"pen","qty":2,"note":null,"tags":null,"ship":{"city":"Oslo"},"Untagged":1,"when":"2026-01-01T00:00:00Z","raw":"AQI="}`, ""},
		{"unknown member", `{"item":"pen","foo":1}`, `$: member "foo" is no field of serde_test.order`},
		{"case differs", `{"Item":"pen"}`, `member "Item" is no field of serde_test.order (names match exactly: did you mean "item"?)`},
		{"nested unknown", `{"ship":{"city":"Oslo","zip":1}}`, `$.ship: member "zip" is no field of serde_test.address`},
		{"unknown in array", `{"lines":[{"city":"a"},{"town":"b"}]}`, `$.lines[1]: member "town"`},
		{"null struct", `null`, `$: null, but serde_test.order cannot be null`},
		{"null nested struct", `{"ship":null}`, `$.ship: null, but serde_test.address cannot be null`},
		{"null string", `{"item":null}`, `$.item: null, but string cannot be null`},
		{"skipped field", `{"Skipped":1}`, `member "Skipped" is no field`},
		{"unexported field", `{"hidden":1}`, `member "hidden" is no field`},
		{"invalid utf-8", "{\"item\":\"p\xffn\"}", "$: invalid UTF-8 at byte 10"},
		{"type mismatch", `{"qty":"two"}`, "cannot unmarshal string"},
		{"syntax", `{"item":`, "unexpected end of JSON input"},
		{"trailing", `{} {}`, "invalid character"},
		// Not null, though they start with n: a syntax error, not "null, but".
		{"not json", `not json`, "invalid character 'o' in literal null"},
		{"n word in a member", `{"item":nope}`, "invalid character 'o' in literal null"},
		{"null run on", `nullx`, "invalid character 'x' after top-level value"},
		{"time checks itself", `{"when":"yesterday"}`, "parsing time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := serde.JSON[order]{}.Deserialize([]byte(tc.in))
			if tc.err == "" {
				if err != nil {
					t.Fatalf("strict: %v", err)
				}
				return
			}
			var je *serde.JSONError
			if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.As(err, &je) {
				t.Fatalf("strict: %v, want a *JSONError containing %q", err, tc.err)
			}
			lenientFails := tc.name == "type mismatch" || tc.name == "syntax" || tc.name == "trailing" ||
				tc.name == "not json" || tc.name == "n word in a member" || tc.name == "null run on" || tc.name == "time checks itself"
			if _, err := (serde.JSON[order]{Lenient: true}).Deserialize([]byte(tc.in)); (err != nil) != lenientFails {
				t.Errorf("lenient: %v, want an error: %v", err, lenientFails)
			}
		})
	}
}

func TestJSONPromotedAndMapValues(t *testing.T) {
	got, err := serde.JSON[order]{}.Deserialize([]byte(`{"id":"o7","by_name":{"a":"x"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != "o7" || got.ByName["a"] != "x" {
		t.Errorf("decoded %+v", got)
	}
	if _, err := (serde.JSON[map[string]address]{}).Deserialize([]byte(`{"k":{"City":"x"}}`)); err == nil || !strings.Contains(err.Error(), `$["k"]: member "City"`) {
		t.Errorf("map of structs: %v, want the member named with its path", err)
	}
}

// TestJSONTombstones: nil bytes are a tombstone, the zero value with no
// error, in both modes; a nil pointer serializes to a tombstone.
func TestJSONTombstones(t *testing.T) {
	if v, err := (serde.JSON[order]{}).Deserialize(nil); err != nil || !cmp.Equal(order{}, v, cmp.AllowUnexported(order{})) {
		t.Errorf("struct tombstone: %+v, %v; want the zero value, no error", v, err)
	}
	if v, err := (serde.JSON[*order]{}).Deserialize(nil); err != nil || v != nil {
		t.Errorf("pointer tombstone: %+v, %v; want nil, no error", v, err)
	}
	if v, err := (serde.JSON[*order]{}).Deserialize([]byte("null")); err != nil || v != nil {
		t.Errorf("pointer of JSON null: %+v, %v; want nil, no error", v, err)
	}
	if v, err := (serde.JSON[order]{Lenient: true}).Deserialize(nil); err != nil || v.Item != "" {
		t.Errorf("lenient tombstone: %+v, %v", v, err)
	}
	if b, err := (serde.JSON[*order]{}).Serialize(nil); err != nil || b != nil {
		t.Errorf("Serialize(nil pointer) = %q, %v; want a tombstone", b, err)
	}
	if b, err := (serde.JSON[[]int]{}).Serialize([]int{}); err != nil || string(b) != "[]" {
		t.Errorf("Serialize(empty slice) = %q, %v; want []", b, err)
	}
	if b, err := (serde.JSON[order]{}).Serialize(order{}); err != nil || b == nil {
		t.Errorf("Serialize(zero struct) = %q, %v; want JSON, not a tombstone", b, err)
	}
}

// The strict decoder on a typo'd field, as a pipeline's policy sees it.
func ExampleJSON() {
	type Sentence struct {
		Text string `json:"text"`
	}
	_, err := serde.JSON[Sentence]{}.Deserialize([]byte(`{"txt":"hello"}`))
	fmt.Println(err)
	v, _ := serde.JSON[Sentence]{Lenient: true}.Deserialize([]byte(`{"TEXT":"hello","extra":1}`))
	fmt.Println(v.Text)
	// Output:
	// decode json serde_test.Sentence: $: member "txt" is no field of serde_test.Sentence
	// hello
}

// BenchmarkJSONDeserialize compares the strict decoder (a walk of the
// document before encoding/json) with the lenient one (encoding/json alone).
func BenchmarkJSONDeserialize(b *testing.B) {
	in := []byte(`{"id":"o1","item":"pen","qty":2,"note":null,"tags":["a","b"],"ship":{"city":"Oslo"},"lines":[{"city":"a"},{"city":"b"}],"Untagged":1}`)
	for _, bc := range []struct {
		name string
		s    serde.JSON[order]
	}{{"strict", serde.JSON[order]{}}, {"lenient", serde.JSON[order]{Lenient: true}}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bc.s.Deserialize(in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzJSONStrict: the strict decoder never panics, and what it accepts the
// lenient one (encoding/json) accepts with the same value.
func FuzzJSONStrict(f *testing.F) {
	for _, seed := range []string{`{"id":"o1","item":"pen","lines":[{"city":"a"}],"by_name":{"k":"v"}}`, `{"Item":1}`, `null`, `[1,2]`, `{"ship":{"city":"\u00e9"}}`, "{\"item\":\"\xff\"}", `{"tags":["a",null]}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		strict, err := serde.JSON[order]{}.Deserialize(b)
		if err != nil {
			return
		}
		lenient, err := serde.JSON[order]{Lenient: true}.Deserialize(b)
		if err != nil {
			t.Fatalf("strict accepted %q, lenient refused it: %v", b, err)
		}
		if diff := cmp.Diff(lenient, strict, cmp.AllowUnexported(order{})); diff != "" {
			t.Fatalf("%q: strict and lenient differ (-lenient +strict):\n%s", b, diff)
		}
	})
}
