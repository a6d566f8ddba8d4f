package stream

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// forwardedHeader marks a query one instance forwarded to another, which
// answers it from its own tasks and forwards it no further: two instances
// that disagree on an owner (one has not heard of the last assignment yet)
// must not send a query back and forth.
const forwardedHeader = "Kgen-Forwarded-By"

// forwardClient forwards queries when the caller gives no client: as
// http.DefaultClient, but keeping as many idle connections to each owner
// as queries run at once (the default keeps 2, so concurrent forwards
// would open and close a connection each).
var forwardClient = &http.Client{Transport: func() http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 256
	return t
}()}

// KeyValueHandler serves the key lookups of a key-value store over HTTP:
// GET .../keys/{key} (the last path segment, unescaped, parsed by
// parseKey) answers 200 with {"key", "value", "served"}, 404 when the
// store holds no value for the key, 400 for a key parseKey refuses. A
// key of a task another instance runs is forwarded to that instance's
// advertised address with client (nil: a client like http.DefaultClient
// that keeps more idle connections per owner) and its answer
// relayed; with no address, or for a query already forwarded, the answer
// is 421 naming the owner. While no instance may answer (a restore, a
// move) it is 503 with Retry-After. ?stale=true allows answers from
// standbys and restoring copies (KeyValueView.AllowStale). Values are
// written with encoding/json.
func KeyValueHandler[K, V any](view *KeyValueView[K, V], parseKey func(string) (K, error), client *http.Client) http.Handler {
	if client == nil {
		client = forwardClient
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			writeJSONError(w, http.StatusMethodNotAllowed, "only GET")
			return
		}
		raw := r.URL.EscapedPath()
		raw = raw[strings.LastIndexByte(raw, '/')+1:]
		text, err := url.PathUnescape(raw)
		if err != nil {
			writeJSONError(w, http.StatusBadRequest, fmt.Sprintf("key %q: %v", raw, err))
			return
		}
		key, err := parseKey(text)
		if err != nil {
			writeJSONError(w, http.StatusBadRequest, fmt.Sprintf("key %q: %v", text, err))
			return
		}
		v := view
		if r.URL.Query().Get("stale") == "true" {
			v = v.AllowStale()
		}
		value, ok, served, err := v.Get(key)
		var nl *NotLocalError
		var na *NotAvailableError
		switch {
		case errors.As(err, &nl):
			if nl.Owner.Address == "" || r.Header.Get(forwardedHeader) != "" {
				writeJSON(w, http.StatusMisdirectedRequest, map[string]any{"error": err.Error(), "owner": nl.Owner})
				return
			}
			forward(w, r, client, nl.Owner.Address, view.app.InstanceID())
		case errors.As(err, &na):
			if na.Retry {
				w.Header().Set("Retry-After", "1")
			}
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": err.Error(), "retry": na.Retry})
		case err != nil:
			writeJSONError(w, http.StatusInternalServerError, err.Error())
		case !ok:
			writeJSON(w, http.StatusNotFound, map[string]any{"error": "no value for the key", "served": served})
		default:
			writeJSON(w, http.StatusOK, keyValueAnswer[K, V]{Key: key, Served: served, Value: value})
		}
	})
}

// keyValueAnswer is KeyValueHandler's answer for a key with a value: a
// struct rather than a map, which costs a request a map and its sorting,
// with the map's key order, so the bytes are the same.
type keyValueAnswer[K, V any] struct {
	Key    K      `json:"key"`
	Served Served `json:"served"`
	Value  V      `json:"value"`
}

// forward asks the owner at addr the same question and relays its answer.
func forward(w http.ResponseWriter, r *http.Request, client *http.Client, addr, self string) {
	u := *r.URL
	u.Scheme, u.Host = "http", addr
	if r.TLS != nil {
		u.Scheme = "https"
	}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, u.String(), nil)
	if err != nil {
		writeJSONError(w, http.StatusBadGateway, err.Error())
		return
	}
	if auth := r.Header.Get("Authorization"); auth != "" {
		req.Header.Set("Authorization", auth)
	}
	req.Header.Set(forwardedHeader, self)
	resp, err := client.Do(req)
	if err != nil {
		// The owner may have just stopped: the group will move its
		// tasks, so asking again later may succeed.
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": fmt.Sprintf("forward to the owner at %s: %v", addr, err), "retry": true})
		return
	}
	defer resp.Body.Close()
	for _, h := range []string{"Content-Type", "Retry-After"} {
		if v := resp.Header.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

func writeJSONError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"error": msg})
}
