package queryapi

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// VersionAnswer is the answer to GET keys/{key} of a versioned store: the
// version asked for, valid from ValidFrom (milliseconds since the epoch,
// inclusive) to ValidTo (exclusive); ValidTo is absent for the key's
// latest version, valid until further notice.
type VersionAnswer[K, J any] struct {
	Key       K             `json:"key"`
	Value     J             `json:"value"`
	ValidFrom int64         `json:"validFrom"`
	ValidTo   *int64        `json:"validTo,omitempty"`
	Served    stream.Served `json:"served"`
}

// Versioned serves a versioned store (a versioned table's), mounted as
// KeyValue:
//
//	GET /keys/{key}            the key's latest version (404: none, or a tombstone)
//	GET /keys/{key}?asOf=T     the version valid at T (404: none then)
//
// T is milliseconds since the epoch or an RFC 3339 time. A time before the
// key's first version, one a tombstone covers, and one older than the
// store's history retention (unless the latest version was already valid
// then) have no version. Errors, forwarding and ?stale=true are as
// KeyValue's; a versioned store has no reads of many keys.
func Versioned[K, V, J any](srv Server, view *stream.VersionedView[K, V], parseKey func(string) (K, error), value func(V) J) http.Handler {
	client := srv.Client
	if client == nil {
		client = http.DefaultClient
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			WriteError(w, http.StatusMethodNotAllowed, ErrorAnswer{Error: "store queries are read-only: only GET"})
			return
		}
		path := r.URL.EscapedPath()
		raw, ok := strings.CutPrefix(path, "/keys/")
		if !ok || raw == "" || strings.Contains(raw, "/") {
			WriteError(w, http.StatusNotFound, ErrorAnswer{Error: fmt.Sprintf("no such path in a versioned store: %q (keys/{key}, keys/{key}?asOf=T)", path)})
			return
		}
		key, ok := pathKey(w, raw, parseKey)
		if !ok {
			return
		}
		asOf := r.URL.Query().Get("asOf") != ""
		at, ok := timeParam(w, r, "asOf", 0)
		if !ok {
			return
		}
		v := view
		if r.URL.Query().Get("stale") == "true" {
			v = v.AllowStale()
		}
		var rec state.VersionedRecord[V]
		var found bool
		var served stream.Served
		var err error
		if asOf {
			rec, found, served, err = v.GetAsOf(key, at)
		} else {
			rec, found, served, err = v.Get(key)
		}
		if err != nil {
			readError(w, r, client, err, srv.App.InstanceID())
			return
		}
		if !found {
			msg := fmt.Sprintf("no value for key %q", mustUnescape(raw))
			if asOf {
				msg += fmt.Sprintf(" as of %s", time.UnixMilli(at).UTC().Format(time.RFC3339Nano))
			}
			WriteError(w, http.StatusNotFound, ErrorAnswer{Error: msg})
			return
		}
		out := VersionAnswer[K, J]{Key: key, Value: value(rec.Value), ValidFrom: rec.Timestamp, Served: served}
		if rec.ValidTo != state.PutValidToUndefined {
			to := rec.ValidTo
			out.ValidTo = &to
		}
		writeJSON(w, http.StatusOK, out)
	})
}

// Deref is the value function of a versioned table's store, which keeps
// *V values (nil a tombstone, which no answer holds): answers show the
// value.
func Deref[V any](v *V) V {
	if v == nil {
		var zero V
		return zero
	}
	return *v
}

// VersionedClient reads one versioned store with keys K and values J.
type VersionedClient[K, J any] struct {
	c     *Client
	store string
}

// VersionedStore returns a client of the versioned store named store.
func VersionedStore[K, J any](c *Client, store string) *VersionedClient[K, J] {
	return &VersionedClient[K, J]{c: c, store: store}
}

// Get returns key's latest version; an error matching ErrNotFound when
// the key has none (or its latest is a tombstone).
func (s *VersionedClient[K, J]) Get(ctx context.Context, key K) (VersionAnswer[K, J], error) {
	return s.get(ctx, key, nil)
}

// GetAsOf returns the version of key valid at t; an error matching
// ErrNotFound when there is none (a tombstone, before the key's history).
func (s *VersionedClient[K, J]) GetAsOf(ctx context.Context, key K, t time.Time) (VersionAnswer[K, J], error) {
	return s.get(ctx, key, url.Values{"asOf": {strconv.FormatInt(t.UnixMilli(), 10)}})
}

func (s *VersionedClient[K, J]) get(ctx context.Context, key K, q url.Values) (VersionAnswer[K, J], error) {
	var ans VersionAnswer[K, J]
	text, err := FormatKey(key)
	if err != nil {
		return ans, err
	}
	err = s.c.get(ctx, "/v1/stores/"+url.PathEscape(s.store)+"/keys/"+url.PathEscape(text), q, &ans)
	return ans, err
}
