package queryapi

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// TestOpenAPIValid: the document of two stores is valid OpenAPI 3 and has
// both stores' paths.
func TestOpenAPIValid(t *testing.T) {
	doc, err := OpenAPI("app", []StoreDoc{
		{Name: "word-counts", Key: map[string]any{"type": "string"}, Value: map[string]any{"type": "integer", "format": "int64"}},
		{Name: "people", Key: map[string]any{"type": "integer", "format": "int32"}, Value: map[string]any{"type": "object", "properties": map[string]any{"Name": map[string]any{"type": "string"}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	d, err := openapi3.NewLoader().LoadFromData(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Validate(context.Background()); err != nil {
		t.Fatalf("not valid OpenAPI: %v", err)
	}
	for _, p := range []string{"/v1/stores/word-counts/keys/{key}", "/v1/stores/word-counts/keys", "/v1/stores/people/keys/{key}"} {
		if d.Paths.Find(p) == nil {
			t.Errorf("no path %s", p)
		}
	}
	if d.Components.Schemas["ValueWordCounts"] == nil {
		t.Error("no schema ValueWordCounts")
	}
}

// TestParseKey: keys round-trip through FormatKey and ParseKey, and a key
// that does not parse gets a message naming what was wanted.
func TestParseKey(t *testing.T) {
	type rec struct {
		A string
		B int
	}
	roundTrip(t, "a/b c")
	roundTrip(t, int64(-42))
	roundTrip(t, int32(7))
	roundTrip(t, true)
	roundTrip(t, 1.5)
	roundTrip(t, []byte{0, 1, 255})
	roundTrip(t, rec{"x", 3})
	for _, c := range []struct {
		err  error
		want string
	}{
		{second(ParseKey[int64]("abc")), "not an integer (int64)"},
		{second(ParseKey[int32]("99999999999")), "out of range of an int32"},
		{second(ParseKey[bool]("yes")), "not a bool"},
		{second(ParseKey[float64]("x")), "not a number"},
		{second(ParseKey[[]byte]("%%")), "not base64"},
		{second(ParseKey[rec]("{")), "as JSON"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("error %v, want one containing %q", c.err, c.want)
		}
	}
}

func second[K any](_ K, err error) error { return err }

func roundTrip[K any](t *testing.T, k K) {
	t.Helper()
	s, err := FormatKey(k)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseKey[K](s)
	if err != nil {
		t.Fatalf("%v: %q does not parse: %v", k, s, err)
	}
	s2, _ := FormatKey(back)
	if s2 != s {
		t.Errorf("%v: %q came back as %q", k, s, s2)
	}
}

// TestErrorAnswerValidates: an error written by WriteError validates
// against the document's Error schema, and one without its error field
// does not (the check can fail).
func TestErrorAnswerValidates(t *testing.T) {
	doc, err := OpenAPI("app", []StoreDoc{{Name: "counts", Key: map[string]any{"type": "string"}, Value: map[string]any{"type": "integer"}}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := openapi3.NewLoader().LoadFromData(doc)
	if err != nil {
		t.Fatal(err)
	}
	router, err := gorillamux.NewRouter(d)
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, "/v1/stores/counts/keys/x", nil)
	req.URL.Host, req.Host = "", ""
	route, params, err := router.FindRoute(req)
	if err != nil {
		t.Fatal(err)
	}
	validate := func(status int, body string) error {
		in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route}
		h := http.Header{"Content-Type": {"application/json"}}
		return openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
			RequestValidationInput: in, Status: status, Header: h, Body: io.NopCloser(strings.NewReader(body)),
			Options: &openapi3filter.Options{IncludeResponseStatus: true}})
	}
	rec := httptest.NewRecorder()
	WriteError(rec, http.StatusServiceUnavailable, ErrorAnswer{Error: "restoring", Retry: true})
	if err := validate(rec.Code, rec.Body.String()); err != nil {
		t.Errorf("WriteError's answer: %v", err)
	}
	if err := validate(http.StatusServiceUnavailable, `{"retry":true}`); err == nil {
		t.Error("an answer without error validated")
	}
}
