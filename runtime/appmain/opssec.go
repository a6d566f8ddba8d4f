package appmain

import (
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"
)

// queryPrefix is where the store query API lives on the ops endpoints.
const queryPrefix = "/v1/"

// checkOpsExposure refuses to serve store queries on an address other
// hosts can reach without TLS and a token, unless -ops-insecure says so:
// store contents are the application's data, not its metrics.
func checkOpsExposure(cfg Config, addr net.Addr, queries bool) error {
	if !queries || cfg.OpsInsecure || (cfg.OpsTLSCertFile != "" && cfg.OpsToken != "") {
		return nil
	}
	if tcp, ok := addr.(*net.TCPAddr); ok && tcp.IP.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%s %s is reachable from other hosts and serves store queries: set %s with %s, and %s; or %s on a trusted network",
		setting("metrics-addr"), cfg.MetricsAddr, setting("ops-tls-cert"), setting("ops-tls-key"), setting("ops-token"), setting("ops-insecure"))
}

// opsTLS loads the ops endpoints' certificate; nil when none is set.
func opsTLS(cfg Config) (*tls.Config, error) {
	if cfg.OpsTLSCertFile == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(cfg.OpsTLSCertFile, cfg.OpsTLSKeyFile)
	if err != nil {
		return nil, fmt.Errorf("%s, %s: %w", setting("ops-tls-cert"), setting("ops-tls-key"), err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// guardQueries makes the query API read-only (405 for anything but GET
// and HEAD) and, with a token, closed to requests without it (401). The
// other ops endpoints stay open: probes and scrapers carry no token. The
// token is compared in constant time, so its bytes cannot be found by
// timing; the query handlers pass it on when they forward.
func guardQueries(h http.Handler, token string) http.Handler {
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, queryPrefix) {
			h.ServeHTTP(w, r)
			return
		}
		if token != "" && subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="kgen"`)
			opsError(w, http.StatusUnauthorized, "this endpoint needs the ops token: Authorization: Bearer <token>")
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			opsError(w, http.StatusMethodNotAllowed, "store queries are read-only: "+r.Method+" is not allowed, only GET")
			return
		}
		h.ServeHTTP(w, r)
	})
}

func opsError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// forwardClient is the client a query is forwarded to its owner with.
// With TLS on the ops endpoints it trusts the system's CAs and this
// instance's own certificate chain: instances of one application commonly
// share a certificate, or one signed by a CA in the system pool.
func forwardClient(tc *tls.Config) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// As many idle connections to each owner as forwards run at once: the
	// default keeps 2, so concurrent forwards would each open and close a
	// connection (a handshake, with TLS, and a socket in TIME_WAIT).
	tr.MaxIdleConnsPerHost = 256
	if tc != nil {
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		for _, c := range tc.Certificates {
			for _, der := range c.Certificate {
				if cert, err := x509.ParseCertificate(der); err == nil {
					pool.AddCert(cert)
				}
			}
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}
