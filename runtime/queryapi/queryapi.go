// Package queryapi serves an application's store queries over HTTP, as the
// generated code mounts them on the ops endpoints under
// /v1/stores/{store}/, and reads them back with a typed client (Client).
//
// Keys are written in URLs as text (ParseKey parses them in the store's key
// type; a key that does not parse is 400 naming the problem) and values are
// JSON of the store's value type. A key of a task another instance holds is
// forwarded once to that instance's advertised address; with no owner
// reachable the answer is 503 with Retry-After. Reads of many keys
// (ranges, prefixes, all) answer from the tasks held here and list the
// partitions they could not read, with who holds them, in "missing".
// Window and session stores are read by key (Window, Session), and a
// versioned store's key as of a time (Versioned).
package queryapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/kgen-dev/kgen/runtime/dsl"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// ForwardedHeader marks a query one instance forwarded to another, which
// answers from its own tasks and forwards no further: two instances that
// disagree on an owner must not pass a query back and forth.
const ForwardedHeader = "Kgen-Forwarded-By"

// DefaultLimit and MaxLimit bound the entries of one answer to a read of
// many keys (?limit=): a store may hold millions of keys, and one answer
// is held in memory whole.
const (
	DefaultLimit = 1000
	MaxLimit     = 100_000
)

// Entry is one key and value of an answer to a read of many keys.
type Entry[K, J any] struct {
	Key   K `json:"key"`
	Value J `json:"value"`
	// Timestamp is the time (milliseconds since the epoch) of the record
	// that last updated the value, for a store that keeps one (a table's,
	// an aggregation's: StampedKeyValue); absent for other stores.
	Timestamp *int64 `json:"timestamp,omitempty"`
}

// Missing is a partition a read of many keys could not read here.
type Missing struct {
	Partition int32  `json:"partition"`
	Error     string `json:"error"`
	// Owner is the instance holding the partition's task, when another
	// one does: ask it (with the same request) for the rest.
	Owner *stream.Instance `json:"owner,omitempty"`
	Retry bool             `json:"retry"`
}

// ValueAnswer is the answer to GET keys/{key}.
type ValueAnswer[K, J any] struct {
	Key   K `json:"key"`
	Value J `json:"value"`
	// Timestamp is as Entry's.
	Timestamp *int64        `json:"timestamp,omitempty"`
	Served    stream.Served `json:"served"`
}

// EntriesAnswer is the answer to GET keys (all, ?from=&to=, ?prefix=).
type EntriesAnswer[K, J any] struct {
	Entries []Entry[K, J]   `json:"entries"`
	Served  []stream.Served `json:"served"`
	Missing []Missing       `json:"missing"`
	// Truncated says that more entries matched than ?limit=; Next is the
	// key of the first one left out, to ask again with ?from=Next.
	Truncated bool `json:"truncated"`
	Next      *K   `json:"next,omitempty"`
}

// ErrorAnswer is the body of every answer that is not 200.
type ErrorAnswer struct {
	Error string `json:"error"`
	// Retry says whether asking again later may succeed (503).
	Retry bool `json:"retry,omitempty"`
	// Owner is the instance that holds the key, when this one could not
	// forward to it (421).
	Owner *stream.Instance `json:"owner,omitempty"`
}

// Server is what every store's handler shares.
type Server struct {
	App *stream.App
	// Client forwards a query to the instance that holds its key; nil is
	// a client like http.DefaultClient that keeps more idle connections to
	// each owner. With TLS on the ops endpoints it must trust the other
	// instances' certificates.
	Client *http.Client
}

// defaultForwardClient forwards queries when the Server has no Client: as
// http.DefaultClient, but keeping as many idle connections to each owner as
// forwards run at once (the default keeps 2, so concurrent forwards would
// each open and close a connection).
var defaultForwardClient = &http.Client{Transport: func() http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 256
	return t
}()}

// KeyValue serves a key-value store, mounted so that the paths it sees
// start after the store (http.StripPrefix("/v1/stores/NAME", h)):
//
//	GET /keys/{key}               the key's value (404: none)
//	GET /keys?from=A&to=B         keys in [A, B) by serialized key
//	GET /keys?prefix=P            keys whose serialized form begins with P's
//	GET /keys                     every key
//
// ?stale=true also answers from standbys and restoring copies; ?limit=
// bounds a read of many keys (DefaultLimit, at most MaxLimit). value turns
// a stored value into what the JSON shows (an aggregation's store keeps a
// timestamp with each value, which value leaves out and StampedKeyValue
// shows beside it). srv.Client forwards a key held by another instance
// (nil: a client like http.DefaultClient that keeps more idle connections
// to each owner).
func KeyValue[K, V, J any](srv Server, view *stream.KeyValueView[K, V], parseKey func(string) (K, error), value func(V) J) http.Handler {
	return StampedKeyValue(srv, view, parseKey, value, nil)
}

// StampedKeyValue is KeyValue for a store that keeps each value with the
// time of the record that last updated it (a table's or an aggregation's,
// whose stamp is Stamp; a timestamped store's, StampState): every value of
// an answer comes with its "timestamp", in milliseconds since the epoch,
// as stamp reads it (nil: none, as KeyValue).
func StampedKeyValue[K, V, J any](srv Server, view *stream.KeyValueView[K, V], parseKey func(string) (K, error), value func(V) J, stamp func(V) int64) http.Handler {
	client := srv.Client
	if client == nil {
		client = defaultForwardClient
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			WriteError(w, http.StatusMethodNotAllowed, ErrorAnswer{Error: "store queries are read-only: only GET"})
			return
		}
		v := view
		q := r.URL.Query()
		if q.Get("stale") == "true" {
			v = v.AllowStale()
		}
		path := r.URL.EscapedPath()
		if path == "/keys" || path == "/keys/" {
			entries(w, r, v, parseKey, value, stamp)
			return
		}
		raw, ok := strings.CutPrefix(path, "/keys/")
		if !ok || strings.Contains(raw, "/") {
			WriteError(w, http.StatusNotFound, ErrorAnswer{Error: fmt.Sprintf("no such path in a key-value store: %q (keys, keys/{key})", path)})
			return
		}
		key, ok := pathKey(w, raw, parseKey)
		if !ok {
			return
		}
		got, found, served, err := v.Get(key)
		if err != nil {
			readError(w, r, client, err, srv.App.InstanceID())
			return
		}
		if !found {
			WriteError(w, http.StatusNotFound, ErrorAnswer{Error: fmt.Sprintf("no value for key %q", mustUnescape(raw))})
			return
		}
		writeJSON(w, http.StatusOK, ValueAnswer[K, J]{Key: key, Value: value(got), Timestamp: stampOf(stamp, got), Served: served})
	})
}

// stampOf is v's timestamp as stamp reads it; nil without stamp.
func stampOf[V any](stamp func(V) int64, v V) *int64 {
	if stamp == nil {
		return nil
	}
	ts := stamp(v)
	return &ts
}

func entries[K, V, J any](w http.ResponseWriter, r *http.Request, v *stream.KeyValueView[K, V], parseKey func(string) (K, error), value func(V) J, stamp func(V) int64) {
	q := r.URL.Query()
	limit := DefaultLimit
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxLimit {
			WriteError(w, http.StatusBadRequest, ErrorAnswer{Error: fmt.Sprintf("limit %q: want a number from 1 to %d", s, MaxLimit)})
			return
		}
		limit = n
	}
	param := func(name string) (K, bool) {
		k, err := parseKey(q.Get(name))
		if err != nil {
			WriteError(w, http.StatusBadRequest, ErrorAnswer{Error: fmt.Sprintf("%s %q: %v", name, q.Get(name), err)})
			return k, false
		}
		return k, true
	}
	var res stream.RangeResult[K, V]
	var err error
	_, hasFrom := q["from"]
	_, hasTo := q["to"]
	_, hasPrefix := q["prefix"]
	switch {
	case hasPrefix && (hasFrom || hasTo):
		WriteError(w, http.StatusBadRequest, ErrorAnswer{Error: "prefix excludes from and to: ask for one or the other"})
		return
	case hasFrom != hasTo:
		WriteError(w, http.StatusBadRequest, ErrorAnswer{Error: "from and to go together: a range is [from, to)"})
		return
	case hasFrom:
		from, ok := param("from")
		if !ok {
			return
		}
		to, ok := param("to")
		if !ok {
			return
		}
		res, err = v.Range(from, to)
	case hasPrefix:
		p, ok := param("prefix")
		if !ok {
			return
		}
		res, err = v.Prefix(p)
	default:
		res, err = v.All()
	}
	if err != nil {
		readError(w, r, nil, err, "")
		return
	}
	out := EntriesAnswer[K, J]{Entries: []Entry[K, J]{}, Served: res.Served, Missing: []Missing{}}
	if out.Served == nil {
		out.Served = []stream.Served{}
	}
	for i, e := range res.Entries {
		if i == limit {
			out.Truncated = true
			next := e.Key
			out.Next = &next
			break
		}
		out.Entries = append(out.Entries, Entry[K, J]{Key: e.Key, Value: value(e.Value), Timestamp: stampOf(stamp, e.Value)})
	}
	for p, err := range res.Missing {
		m := Missing{Partition: p, Error: err.Error()}
		var nl *stream.NotLocalError
		var na *stream.NotAvailableError
		if errors.As(err, &nl) {
			owner := nl.Owner
			m.Owner = &owner
		} else if errors.As(err, &na) {
			m.Retry = na.Retry
		}
		out.Missing = append(out.Missing, m)
	}
	slices.SortFunc(out.Missing, func(a, b Missing) int { return int(a.Partition - b.Partition) })
	writeJSON(w, http.StatusOK, out)
}

// pathKey unescapes and parses a key from the path; false when it wrote a
// 400 naming the problem.
func pathKey[K any](w http.ResponseWriter, raw string, parseKey func(string) (K, error)) (K, bool) {
	text, err := url.PathUnescape(raw)
	if err != nil {
		var k K
		WriteError(w, http.StatusBadRequest, ErrorAnswer{Error: fmt.Sprintf("key %q: %v", raw, err)})
		return k, false
	}
	k, err := parseKey(text)
	if err != nil {
		WriteError(w, http.StatusBadRequest, ErrorAnswer{Error: fmt.Sprintf("key %q: %v", text, err)})
		return k, false
	}
	return k, true
}

func mustUnescape(raw string) string {
	if s, err := url.PathUnescape(raw); err == nil {
		return s
	}
	return raw
}

// readError answers a failed read: forwarded to the owner (client not
// nil), 421 naming it, or 503 with Retry-After.
func readError(w http.ResponseWriter, r *http.Request, client *http.Client, err error, self string) {
	var nl *stream.NotLocalError
	var na *stream.NotAvailableError
	switch {
	case errors.As(err, &nl):
		if client == nil || nl.Owner.Address == "" || r.Header.Get(ForwardedHeader) != "" {
			owner := nl.Owner
			WriteError(w, http.StatusMisdirectedRequest, ErrorAnswer{Error: err.Error(), Owner: &owner})
			return
		}
		forward(w, r, client, nl.Owner.Address, self)
	case errors.As(err, &na):
		if na.Retry {
			w.Header().Set("Retry-After", "1")
		}
		WriteError(w, http.StatusServiceUnavailable, ErrorAnswer{Error: err.Error(), Retry: na.Retry})
	default:
		WriteError(w, http.StatusInternalServerError, ErrorAnswer{Error: err.Error()})
	}
}

// forward asks the owner at addr the same question (the request's own
// path and query, its token) and relays its answer.
func forward(w http.ResponseWriter, r *http.Request, client *http.Client, addr, self string) {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https" // an instance serving TLS expects its peers to
	}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, scheme+"://"+addr+r.RequestURI, nil)
	if err != nil {
		WriteError(w, http.StatusBadGateway, ErrorAnswer{Error: err.Error()})
		return
	}
	if auth := r.Header.Get("Authorization"); auth != "" {
		req.Header.Set("Authorization", auth)
	}
	req.Header.Set(ForwardedHeader, self)
	resp, err := client.Do(req)
	if err != nil {
		// The owner may have just stopped: the group will move its
		// tasks, so asking again later may succeed.
		w.Header().Set("Retry-After", "1")
		WriteError(w, http.StatusServiceUnavailable, ErrorAnswer{Error: fmt.Sprintf("forward to the owner at %s: %v", addr, err), Retry: true})
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

// WriteError writes an error answer as JSON.
func WriteError(w http.ResponseWriter, status int, e ErrorAnswer) { writeJSON(w, status, e) }

// Plain is the value function of a store whose values the answers show as
// they are.
func Plain[V any](v V) V { return v }

// Unstamped is the value function of an aggregation's or a table's store,
// which keeps each value with the timestamp of its last update: answers
// show the value.
func Unstamped[V any](v dsl.ValueAndTimestamp[V]) V { return v.Value }

// Stamp is the stamp function (StampedKeyValue) of an aggregation's or a
// table's store: the time of the value's last update.
func Stamp[V any](v dsl.ValueAndTimestamp[V]) int64 { return v.Timestamp.UnixMilli() }

// StampState is the stamp function of a timestamped key-value store's
// view (stream.QueryTimestampedKeyValue).
func StampState[V any](v state.ValueAndTimestamp[V]) int64 { return v.Timestamp }

// UnstampedWindow is the value function of a windowed aggregation's window
// store, which keeps each window's value with its last update's timestamp.
func UnstampedWindow[V any](v state.ValueAndTimestamp[V]) V { return v.Value }
