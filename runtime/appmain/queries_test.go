package appmain

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestWithQueries: a store's key lookups reach its handler, with the key
// as the last path segment; everything else reaches the ops endpoints.
func TestWithQueries(t *testing.T) {
	named := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, name+" "+r.PathValue("key"))
		})
	}
	h := withQueries(named("ops"), map[string]http.Handler{"counts": named("counts"), "totals": named("totals")})
	for path, want := range map[string]string{
		"/v1/stores/counts/keys/a%2Fb": "counts a/b",
		"/v1/stores/totals/keys/x":     "totals x",
		"/v1/stores/other/keys/x":      "ops ",
		"/healthz":                     "ops ",
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if got := rec.Body.String(); got != want {
			t.Errorf("GET %s reached %q, want %q", path, got, want)
		}
	}
}
