package queryapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/kgen-dev/kgen/runtime/stream"
)

// ClientOptions configure a Client.
type ClientOptions struct {
	// HTTP is the client requests go through; nil is http.DefaultClient.
	// Give it a TLS configuration trusting the ops certificate for https.
	HTTP *http.Client
	// Token is the ops token (-ops-token), sent as a bearer token.
	Token string
	// Stale lets answers come from standbys and restoring copies.
	Stale bool
	// Everywhere makes reads of many keys (Range, Prefix, All) also ask
	// the instances holding the partitions the asked one lacks (its
	// answer's Missing owners, at their advertised addresses, with the
	// base URL's scheme) and merge their answers: Entries are then in no
	// particular order, the limit applies per instance, and Missing lists
	// only partitions no instance answered for.
	Everywhere bool
}

// Client asks an application's instance for its stores' contents; the
// instance forwards a key it does not hold to the one that does. The
// generated client wraps it with one typed accessor per queryable store.
type Client struct {
	base string
	opts ClientOptions
}

// NewClient returns a client of the instance whose ops endpoints are at
// baseURL (e.g. http://localhost:9090).
func NewClient(baseURL string, opts ClientOptions) *Client {
	if opts.HTTP == nil {
		opts.HTTP = http.DefaultClient
	}
	return &Client{base: strings.TrimRight(baseURL, "/"), opts: opts}
}

// ErrNotFound is what an Error for a key the store holds no value for
// matches (errors.Is).
var ErrNotFound = errors.New("no value for the key")

// Error is an answer other than 200.
type Error struct {
	Status int
	ErrorAnswer
	// RetryAfter is the server's Retry-After (503): when asking again may
	// succeed.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Status, http.StatusText(e.Status), e.ErrorAnswer.Error)
}

// Is makes a 404 for a key match ErrNotFound.
func (e *Error) Is(target error) bool {
	return target == ErrNotFound && e.Status == http.StatusNotFound
}

// KeyValueClient reads one key-value store with keys K and values J.
type KeyValueClient[K, J any] struct {
	c     *Client
	store string
}

// KeyValueStore returns a client of the key-value store named store.
func KeyValueStore[K, J any](c *Client, store string) *KeyValueClient[K, J] {
	return &KeyValueClient[K, J]{c: c, store: store}
}

// Get returns the value of key and who served it; an error matching
// ErrNotFound when the store holds none.
func (s *KeyValueClient[K, J]) Get(ctx context.Context, key K) (J, stream.Served, error) {
	ans, err := s.Lookup(ctx, key)
	return ans.Value, ans.Served, err
}

// Lookup is Get returning the whole answer: with the value, for a store
// that keeps one (a table's, an aggregation's), the time of its last
// update (Timestamp).
func (s *KeyValueClient[K, J]) Lookup(ctx context.Context, key K) (ValueAnswer[K, J], error) {
	var ans ValueAnswer[K, J]
	text, err := FormatKey(key)
	if err != nil {
		return ans, err
	}
	err = s.c.get(ctx, "/v1/stores/"+url.PathEscape(s.store)+"/keys/"+url.PathEscape(text), nil, &ans)
	return ans, err
}

// Range returns the entries with keys in [from, to) (by serialized key)
// that the asked instance holds, at most limit (0: the server's default).
func (s *KeyValueClient[K, J]) Range(ctx context.Context, from, to K, limit int) (EntriesAnswer[K, J], error) {
	q := url.Values{}
	for name, k := range map[string]K{"from": from, "to": to} {
		text, err := FormatKey(k)
		if err != nil {
			return EntriesAnswer[K, J]{}, err
		}
		q.Set(name, text)
	}
	return s.entries(ctx, q, limit)
}

// Prefix returns the entries whose serialized keys begin with prefix's.
func (s *KeyValueClient[K, J]) Prefix(ctx context.Context, prefix K, limit int) (EntriesAnswer[K, J], error) {
	text, err := FormatKey(prefix)
	if err != nil {
		return EntriesAnswer[K, J]{}, err
	}
	return s.entries(ctx, url.Values{"prefix": {text}}, limit)
}

// All returns the entries the asked instance holds; Missing names the
// instances holding the others.
func (s *KeyValueClient[K, J]) All(ctx context.Context, limit int) (EntriesAnswer[K, J], error) {
	return s.entries(ctx, url.Values{}, limit)
}

func (s *KeyValueClient[K, J]) entries(ctx context.Context, q url.Values, limit int) (EntriesAnswer[K, J], error) {
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	path := "/v1/stores/" + url.PathEscape(s.store) + "/keys"
	var ans EntriesAnswer[K, J]
	if err := s.c.get(ctx, path, q, &ans); err != nil || !s.c.opts.Everywhere {
		return ans, err
	}
	// Ask each owner of a missing partition once; keep the first answer
	// for each partition and each key (a key lives in one partition).
	scheme, _, _ := strings.Cut(s.c.base, "://")
	asked := map[string]bool{}
	served := map[int32]bool{}
	keys := map[string]bool{}
	note := func(a EntriesAnswer[K, J]) {
		for _, sv := range a.Served {
			served[sv.Task.Partition] = true
		}
		for _, e := range a.Entries {
			if k, err := FormatKey(e.Key); err == nil {
				keys[k] = true
			}
		}
	}
	note(ans)
	for _, sv := range ans.Served {
		asked[sv.Instance.Address] = true
	}
	for i := 0; i < len(ans.Missing); i++ {
		m := ans.Missing[i]
		if m.Owner == nil || m.Owner.Address == "" || asked[m.Owner.Address] || served[m.Partition] {
			continue
		}
		asked[m.Owner.Address] = true
		var more EntriesAnswer[K, J]
		other := &Client{base: scheme + "://" + m.Owner.Address, opts: s.c.opts}
		if err := other.get(ctx, path, q, &more); err != nil {
			continue // its partitions stay missing
		}
		for _, e := range more.Entries {
			if k, err := FormatKey(e.Key); err == nil && !keys[k] {
				ans.Entries = append(ans.Entries, e)
			}
		}
		ans.Truncated = ans.Truncated || more.Truncated
		note(more)
		ans.Served = append(ans.Served, more.Served...)
		ans.Missing = append(ans.Missing, more.Missing...)
	}
	// Missing: the partitions nobody answered for, once each.
	var still []Missing
	for _, m := range ans.Missing {
		if !served[m.Partition] {
			served[m.Partition] = true
			still = append(still, m)
		}
	}
	ans.Missing = still
	if ans.Missing == nil {
		ans.Missing = []Missing{}
	}
	return ans, nil
}

func (c *Client) get(ctx context.Context, path string, q url.Values, out any) error {
	if c.opts.Stale {
		if q == nil {
			q = url.Values{}
		}
		q.Set("stale", "true")
	}
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	if c.opts.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.opts.Token)
	}
	resp, err := c.opts.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		e := &Error{Status: resp.StatusCode}
		if json.Unmarshal(body, &e.ErrorAnswer) != nil || e.ErrorAnswer.Error == "" {
			e.ErrorAnswer.Error = strings.TrimSpace(string(body))
		}
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
			e.RetryAfter = time.Duration(s) * time.Second
		}
		return e
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("%s: answer: %w", path, err)
	}
	return nil
}

// WindowClient reads one window store with keys K and values J.
type WindowClient[K, J any] struct {
	c     *Client
	store string
}

// WindowStore returns a client of the window store named store.
func WindowStore[K, J any](c *Client, store string) *WindowClient[K, J] {
	return &WindowClient[K, J]{c: c, store: store}
}

// Fetch returns the key's windows starting in [from, to].
func (s *WindowClient[K, J]) Fetch(ctx context.Context, key K, from, to time.Time) ([]WindowEntry[J], stream.Served, error) {
	var ans WindowsAnswer[K, J]
	text, err := FormatKey(key)
	if err != nil {
		return nil, ans.Served, err
	}
	q := url.Values{"from": {strconv.FormatInt(from.UnixMilli(), 10)}, "to": {strconv.FormatInt(to.UnixMilli(), 10)}}
	err = s.c.get(ctx, "/v1/stores/"+url.PathEscape(s.store)+"/keys/"+url.PathEscape(text)+"/windows", q, &ans)
	return ans.Windows, ans.Served, err
}

// SessionClient reads one session store with keys K and values J.
type SessionClient[K, J any] struct {
	c     *Client
	store string
}

// SessionStore returns a client of the session store named store.
func SessionStore[K, J any](c *Client, store string) *SessionClient[K, J] {
	return &SessionClient[K, J]{c: c, store: store}
}

// Sessions returns every session of key the store keeps.
func (s *SessionClient[K, J]) Sessions(ctx context.Context, key K) ([]SessionEntry[J], stream.Served, error) {
	var ans SessionsAnswer[K, J]
	text, err := FormatKey(key)
	if err != nil {
		return nil, ans.Served, err
	}
	err = s.c.get(ctx, "/v1/stores/"+url.PathEscape(s.store)+"/keys/"+url.PathEscape(text)+"/sessions", nil, &ans)
	return ans.Sessions, ans.Served, err
}
