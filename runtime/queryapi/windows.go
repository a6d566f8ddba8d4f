package queryapi

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/kgen-dev/kgen/runtime/stream"
)

// WindowEntry is one window of an answer: its start in milliseconds since
// the epoch and its value.
type WindowEntry[J any] struct {
	Start int64 `json:"start"`
	Value J     `json:"value"`
}

// WindowsAnswer is the answer to GET keys/{key}/windows.
type WindowsAnswer[K, J any] struct {
	Key     K                `json:"key"`
	Windows []WindowEntry[J] `json:"windows"`
	Served  stream.Served    `json:"served"`
}

// SessionEntry is one session of an answer, start and end in
// milliseconds since the epoch.
type SessionEntry[J any] struct {
	Start int64 `json:"start"`
	End   int64 `json:"end"`
	Value J     `json:"value"`
}

// SessionsAnswer is the answer to GET keys/{key}/sessions.
type SessionsAnswer[K, J any] struct {
	Key      K                 `json:"key"`
	Sessions []SessionEntry[J] `json:"sessions"`
	Served   stream.Served     `json:"served"`
}

// Window serves a window store, mounted as KeyValue:
//
//	GET /keys/{key}/windows?from=T&to=T   the key's windows starting in [from, to]
//
// T is milliseconds since the epoch or an RFC 3339 time; either bound may
// be left out (unbounded). Errors, forwarding and ?stale=true are as
// KeyValue's.
func Window[K, V, J any](srv Server, view *stream.WindowView[K, V], parseKey func(string) (K, error), value func(V) J) http.Handler {
	return keyed(srv, "windows", parseKey, func(w http.ResponseWriter, r *http.Request, key K) error {
		from, ok := timeParam(w, r, "from", math.MinInt64)
		if !ok {
			return nil
		}
		to, ok := timeParam(w, r, "to", math.MaxInt64)
		if !ok {
			return nil
		}
		v := view
		if r.URL.Query().Get("stale") == "true" {
			v = v.AllowStale()
		}
		wins, served, err := v.Fetch(key, from, to)
		if err != nil {
			return err
		}
		out := WindowsAnswer[K, J]{Key: key, Windows: []WindowEntry[J]{}, Served: served}
		for _, win := range wins {
			out.Windows = append(out.Windows, WindowEntry[J]{Start: win.Start, Value: value(win.Value)})
		}
		writeJSON(w, http.StatusOK, out)
		return nil
	})
}

// Session serves a session store, mounted as KeyValue:
//
//	GET /keys/{key}/sessions   every session of the key the store keeps
func Session[K, V, J any](srv Server, view *stream.SessionView[K, V], parseKey func(string) (K, error), value func(V) J) http.Handler {
	return keyed(srv, "sessions", parseKey, func(w http.ResponseWriter, r *http.Request, key K) error {
		v := view
		if r.URL.Query().Get("stale") == "true" {
			v = v.AllowStale()
		}
		ss, served, err := v.Sessions(key)
		if err != nil {
			return err
		}
		out := SessionsAnswer[K, J]{Key: key, Sessions: []SessionEntry[J]{}, Served: served}
		for _, s := range ss {
			out.Sessions = append(out.Sessions, SessionEntry[J]{Start: s.Start, End: s.End, Value: value(s.Value)})
		}
		writeJSON(w, http.StatusOK, out)
		return nil
	})
}

// keyed serves GET /keys/{key}/{what}: it parses the key and answers a
// read's error as KeyValue does (forwarding a key another instance holds).
func keyed[K any](srv Server, what string, parseKey func(string) (K, error), read func(http.ResponseWriter, *http.Request, K) error) http.Handler {
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
		path := r.URL.EscapedPath()
		raw, ok := strings.CutPrefix(path, "/keys/")
		if ok {
			raw, ok = strings.CutSuffix(raw, "/"+what)
		}
		if !ok || raw == "" || strings.Contains(raw, "/") {
			WriteError(w, http.StatusNotFound, ErrorAnswer{Error: fmt.Sprintf("no such path in a %s store: %q (keys/{key}/%s)", strings.TrimSuffix(what, "s"), path, what)})
			return
		}
		key, ok := pathKey(w, raw, parseKey)
		if !ok {
			return
		}
		if err := read(w, r, key); err != nil {
			readError(w, r, client, err, srv.App.InstanceID())
		}
	})
}

// timeParam reads a time bound: milliseconds since the epoch or RFC 3339;
// def when absent. False when it wrote a 400.
func timeParam(w http.ResponseWriter, r *http.Request, name string, def int64) (int64, bool) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, true
	}
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return ms, true
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UnixMilli(), true
	}
	WriteError(w, http.StatusBadRequest, ErrorAnswer{Error: fmt.Sprintf("%s %q: want milliseconds since the epoch or an RFC 3339 time", name, s)})
	return 0, false
}
