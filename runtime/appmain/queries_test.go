package appmain

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/runtime/stream"
)

// TestWithQueries: a store's paths reach its handler with the store's
// prefix stripped; an unknown store is 404 naming the known ones; the
// OpenAPI document is served; everything else reaches the ops endpoints.
func TestWithQueries(t *testing.T) {
	named := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, name+" "+r.URL.EscapedPath())
		})
	}
	h := withQueries(named("ops"), map[string]http.Handler{"counts": named("counts"), "totals": named("totals")}, []byte(`{"openapi":"3.0.3"}`))
	for path, want := range map[string]string{
		"/v1/stores/counts/keys/a%2Fb": "counts /keys/a%2Fb",
		"/v1/stores/totals/keys":       "totals /keys",
		"/v1/stores/other/keys/x":      `{"error":"no queryable store \"other\"; the queryable stores are: counts, totals"}`,
		"/v1/openapi.json":             `{"openapi":"3.0.3"}`,
		"/healthz":                     "ops /healthz",
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if got := strings.TrimSpace(rec.Body.String()); got != want {
			t.Errorf("GET %s answered %q, want %q", path, got, want)
		}
	}
}

// TestGuardQueries: with a token, /v1/ needs it (401 otherwise) and the
// other ops endpoints do not; /v1/ is read-only (405).
func TestGuardQueries(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	h := guardQueries(ok, "s3cret")
	for _, c := range []struct {
		method, path, auth string
		status             int
		body               string
	}{
		{"GET", "/v1/stores/counts/keys/a", "Bearer s3cret", 200, "ok"},
		{"GET", "/v1/stores/counts/keys/a", "", 401, "needs the ops token"},
		{"GET", "/v1/stores/counts/keys/a", "Bearer s3cre", 401, "needs the ops token"},
		{"GET", "/v1/stores/counts/keys/a", "s3cret", 401, "needs the ops token"},
		{"POST", "/v1/stores/counts/keys/a", "Bearer s3cret", 405, "read-only: POST is not allowed"},
		{"DELETE", "/v1/stores/counts/keys/a", "Bearer s3cret", 405, "read-only"},
		{"GET", "/healthz", "", 200, "ok"},
		{"GET", "/metrics", "", 200, "ok"},
	} {
		req := httptest.NewRequest(c.method, c.path, nil)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.status || !strings.Contains(rec.Body.String(), c.body) {
			t.Errorf("%s %s (auth %q) = %d %q, want %d containing %q", c.method, c.path, c.auth, rec.Code, rec.Body.String(), c.status, c.body)
		}
	}
	// Without a token /v1/ is open but still read-only.
	rec := httptest.NewRecorder()
	guardQueries(ok, "").ServeHTTP(rec, httptest.NewRequest("PUT", "/v1/stores/x/keys/a", nil))
	if rec.Code != 405 || rec.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("PUT without a token = %d, Allow %q; want 405, GET, HEAD", rec.Code, rec.Header().Get("Allow"))
	}
}

// TestOpsExposure: store queries on an address other hosts reach need TLS
// and a token, or -ops-insecure; loopback and apps without queries do not.
func TestOpsExposure(t *testing.T) {
	loop := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9090}
	any := &net.TCPAddr{IP: net.IPv4zero, Port: 9090}
	secured := Config{MetricsAddr: ":9090", OpsTLSCertFile: "c.pem", OpsTLSKeyFile: "k.pem", OpsToken: "t"}
	for _, c := range []struct {
		name    string
		cfg     Config
		addr    net.Addr
		queries bool
		refused bool
	}{
		{"all interfaces, queries", Config{MetricsAddr: ":9090"}, any, true, true},
		{"TLS without a token", Config{MetricsAddr: ":9090", OpsTLSCertFile: "c", OpsTLSKeyFile: "k"}, any, true, true},
		{"token without TLS", Config{MetricsAddr: ":9090", OpsToken: "t"}, any, true, true},
		{"TLS and token", secured, any, true, false},
		{"insecure opt-out", Config{MetricsAddr: ":9090", OpsInsecure: true}, any, true, false},
		{"loopback", Config{MetricsAddr: "127.0.0.1:9090"}, loop, true, false},
		{"no queries", Config{MetricsAddr: ":9090"}, any, false, false},
	} {
		err := checkOpsExposure(c.cfg, c.addr, c.queries)
		if (err != nil) != c.refused {
			t.Errorf("%s: err %v, want refused %v", c.name, err, c.refused)
			continue
		}
		if err != nil {
			for _, flag := range []string{"-ops-tls-cert", "-ops-tls-key", "-ops-token", "-ops-insecure", "KGEN_OPS_TOKEN"} {
				if !strings.Contains(err.Error(), flag) {
					t.Errorf("%s: message %q does not name %s", c.name, err, flag)
				}
			}
		}
	}
}

// TestRunRefusesExposedQueries: an app with store queries on all
// interfaces, without TLS and a token, stops before it starts anything,
// naming the flags; -ops-insecure is not needed on loopback.
func TestRunRefusesExposedQueries(t *testing.T) {
	app := App{ID: "exposed", Topics: map[string]int32{}, Queries: func(*stream.App, *http.Client) (map[string]http.Handler, error) {
		t.Error("queries built for a refused address")
		return nil, nil
	}, Topology: func() (*stream.Topology, error) {
		t.Error("topology built for a refused address")
		return nil, errors.New("no")
	}}
	err := Run(context.Background(), Config{MetricsAddr: "0.0.0.0:0"}, app)
	if err == nil || !strings.Contains(err.Error(), "-ops-token (KGEN_OPS_TOKEN)") || !strings.Contains(err.Error(), "-ops-insecure") {
		t.Fatalf("Run on 0.0.0.0 with queries: %v, want a refusal naming the flags", err)
	}
}
