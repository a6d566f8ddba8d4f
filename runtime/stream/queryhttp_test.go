package stream_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// TestKeyValueHandler runs a count on two instances, each with its handler
// on a server at its advertised address, and asks one of them for every
// key: the keys of the other's tasks are forwarded and its answers relayed.
func TestKeyValueHandler(t *testing.T) {
	c := kafkatest.New(t)
	in, out := c.CreateTopic(t, 4, nil), c.CreateTopic(t, 4, nil)
	appID := "queryhttp-" + in
	recs, truth := keyedRecords(in, 2_000, 100, 5)
	produceAll(t, c.Client(t), recs)
	servers := map[string]*httptest.Server{}
	var apps []*stream.App
	for _, name := range []string{"a", "b"} {
		var h atomic.Pointer[http.Handler]
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if hp := h.Load(); hp != nil {
				(*hp).ServeHTTP(w, r)
				return
			}
			http.Error(w, "not yet", http.StatusServiceUnavailable)
		}))
		t.Cleanup(srv.Close)
		qi := startQueryInstance(t, c, appID, in, out, name, 1, nil, true, stream.AtLeastOnce,
			stream.AdvertisedAddress(srv.Listener.Addr().String()))
		var handler http.Handler = stream.KeyValueHandler(qi.view, func(s string) (string, error) { return s, nil }, nil)
		h.Store(&handler)
		servers[name] = srv
		apps = append(apps, qi.app)
	}
	// Queries start once each instance holds its two tasks: a alone held
	// all four for a moment, and a test that asked then saw no forwarding.
	waitFor(t, "a and b to hold two tasks each", func() bool { return settled(apps[0], 2) && settled(apps[1], 2) })
	waitCaughtUp(t, c.Admin(t), appID, in)

	type answer struct {
		Key    string        `json:"key"`
		Value  int64         `json:"value"`
		Served stream.Served `json:"served"`
		Error  string        `json:"error"`
		Owner  stream.Instance
	}
	get := func(srv *httptest.Server, key string, header http.Header) (int, answer) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/v1/stores/counts/keys/"+url.PathEscape(key), nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var a answer
		if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
			t.Fatalf("GET %s: %d, undecodable: %v", key, resp.StatusCode, err)
		}
		return resp.StatusCode, a
	}
	forwarded := 0
	for k, want := range truth {
		for deadline := time.Now().Add(30 * time.Second); ; {
			status, a := get(servers["a"], k, nil)
			if status == http.StatusServiceUnavailable && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond) // asked to retry
				continue
			}
			if status != http.StatusOK || a.Key != k || a.Value != want {
				t.Fatalf("GET %s from a: %d %+v, want %d", k, status, a, want)
			}
			if a.Served.Instance.ID == "b" {
				forwarded++
			}
			break
		}
	}
	if forwarded == 0 || forwarded == len(truth) {
		t.Fatalf("%d of %d keys served by b, want some but not all", forwarded, len(truth))
	}
	// A key no store holds: 404, from whichever instance owns it.
	if status, a := get(servers["a"], "no such key", nil); status != http.StatusNotFound {
		t.Fatalf("GET of a missing key: %d %+v, want 404", status, a)
	}
	// A query already forwarded goes no further: 421 naming the owner.
	for k := range truth {
		status, a := get(servers["a"], k, http.Header{"Kgen-Forwarded-By": {"x"}})
		if status == http.StatusOK {
			continue // a owns it
		}
		if status != http.StatusMisdirectedRequest || a.Owner.ID != "b" || !strings.Contains(a.Error, `held by instance "b"`) {
			t.Fatalf("forwarded GET %s to the non-owner: %d %+v, want 421 naming b", k, status, a)
		}
		break
	}
	resp, err := http.Post(servers["a"].URL+"/v1/stores/counts/keys/x", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST: %d, want 405", resp.StatusCode)
	}
}
