package queryapi_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/internal/testlog"
	"github.com/kgen-dev/kgen/runtime/dsl"
	"github.com/kgen-dev/kgen/runtime/queryapi"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// startVersioned runs an instance of a versioned table "prices" (store
// "prices") on seeds, serving its queries on l, which it advertises.
func startVersioned(t *testing.T, seeds []string, topic, name string, l net.Listener) *stream.App {
	t.Helper()
	topo := stream.NewTopology()
	dsl.VersionedTable(topo, "prices-table", topic, serde.Serde[string](serde.String{}), serde.Serde[int64](serde.Int64{}), "prices", time.Hour,
		stream.StoreOptions{Changelog: true})
	app, err := stream.New(topo, stream.Brokers(seeds...), stream.AppID("qapi-versioned-"+topic), stream.StateDir(t.TempDir()),
		stream.InstanceID(name), stream.AdvertisedAddress(l.Addr().String()), stream.CommitInterval(100*time.Millisecond),
		stream.Logger(testlog.New(t)))
	if err != nil {
		t.Fatal(err)
	}
	view, err := stream.QueryVersioned[string, *int64](app, "prices", serde.String{})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/v1/stores/prices/", http.StripPrefix("/v1/stores/prices",
		queryapi.Versioned(queryapi.Server{App: app}, view, queryapi.ParseKey[string], queryapi.Deref[int64])))
	hs := &http.Server{Handler: mux}
	go hs.Serve(l)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx) }()
	t.Cleanup(func() {
		hs.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("instance %s: %v", name, err)
		}
	})
	return app
}

// TestVersionedHandler runs two instances of a versioned table serving
// their store over HTTP and asks one of them for every key, latest and
// as of several times, through the typed client and over HTTP: keys the
// other instance holds come back forwarded, a time a tombstone covers or
// before a key's first version is 404, and every answer validates against
// the OpenAPI document.
func TestVersionedHandler(t *testing.T) {
	c := kafkatest.New(t) // kfake, or the real broker KGEN_TEST_BROKERS names
	topic := c.CreateTopic(t, 4, nil)
	seeds := c.Seeds()
	// Key i: 10+i at base, 20+i at base+1s, deleted at base+2s (every
	// other key), 40+i at base+3s; key i's versions are known by time.
	base := time.Now().Add(-10 * time.Minute).Truncate(time.Second)
	type version struct {
		value    int64
		from, to int64 // to 0: the latest
		tomb     bool
	}
	hist := map[string][]version{}
	var recs []*kgo.Record
	for i := range 16 {
		key := fmt.Sprintf("p%02d", i)
		for v, off := range []int64{0, 1000, 2000, 3000} {
			ts := base.UnixMilli() + off
			val := int64(10*(v+1) + i)
			tomb := v == 2 && i%2 == 0
			rec := &kgo.Record{Topic: topic, Key: []byte(key), Timestamp: time.UnixMilli(ts)}
			if !tomb {
				rec.Value, _ = serde.Int64{}.Serialize(val)
			}
			recs = append(recs, rec)
			if n := len(hist[key]); n > 0 {
				hist[key][n-1].to = ts
			}
			hist[key] = append(hist[key], version{value: val, from: ts, tomb: tomb})
		}
	}
	if err := c.Client(t).ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	la, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lb, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	startVersioned(t, seeds, topic, "a", la)
	startVersioned(t, seeds, topic, "b", lb)

	docBytes, err := queryapi.OpenAPI("qapi", []queryapi.StoreDoc{{Name: "prices", Kind: "versioned",
		Key: map[string]any{"type": "string"}, Value: map[string]any{"type": "integer", "format": "int64"}}})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapi3.NewLoader().LoadFromData(docBytes)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("not valid OpenAPI: %v", err)
	}
	if doc.Paths.Find("/v1/stores/prices/keys/{key}") == nil || doc.Paths.Find("/v1/stores/prices/keys") != nil {
		t.Fatal("want the path of one key, and no reads of many keys, for a versioned store")
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	// get asks instance a over HTTP and validates the answer.
	get := func(path string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, "http://"+la.Addr().String()+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		vreq := req.Clone(context.Background())
		vreq.URL.Scheme, vreq.URL.Host, vreq.Host = "", "", ""
		route, params, err := router.FindRoute(vreq)
		if err != nil {
			t.Fatalf("GET %s: not in the document: %v", path, err)
		}
		in := &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
		if err := openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
			RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header, Body: io.NopCloser(bytes.NewReader(body)),
			Options: &openapi3filter.Options{IncludeResponseStatus: true}}); err != nil {
			t.Errorf("GET %s: %d %s does not validate: %v", path, resp.StatusCode, body, err)
		}
		return resp.StatusCode, string(body)
	}

	client := queryapi.VersionedStore[string, int64](queryapi.NewClient("http://"+la.Addr().String(), queryapi.ClientOptions{}), "prices")
	ctx := context.Background()
	// check asks a for key as of at (the latest with at 0) and says what
	// is wrong with the answer; settled is false while the group moves.
	check := func(key string, at int64) (problem string, byB bool) {
		var ans queryapi.VersionAnswer[string, int64]
		var err error
		if at == 0 {
			ans, err = client.Get(ctx, key)
		} else {
			ans, err = client.GetAsOf(ctx, key, time.UnixMilli(at))
		}
		var want *version
		for i, v := range hist[key] {
			if at == 0 || v.from <= at {
				want = &hist[key][i]
			}
		}
		var qe *queryapi.Error
		switch {
		case errors.As(err, &qe) && qe.Status != http.StatusNotFound:
			return fmt.Sprintf("%s@%d: %v", key, at, err), false
		case err != nil && !errors.Is(err, queryapi.ErrNotFound):
			return fmt.Sprintf("%s@%d: %v", key, at, err), false
		case want == nil || want.tomb:
			if !errors.Is(err, queryapi.ErrNotFound) {
				return fmt.Sprintf("%s@%d = %+v, %v; want not found", key, at, ans, err), false
			}
			return "", false
		case err != nil:
			return fmt.Sprintf("%s@%d: %v; want %+v", key, at, err, *want), false
		}
		var to int64
		if ans.ValidTo != nil {
			to = *ans.ValidTo
		}
		if ans.Key != key || ans.Value != want.value || ans.ValidFrom != want.from || to != want.to {
			return fmt.Sprintf("%s@%d = %+v (validTo %d); want %+v", key, at, ans, to, *want), false
		}
		return "", ans.Served.Instance.ID == "b"
	}
	b0 := base.UnixMilli()
	times := []int64{0, b0 - 1, b0, b0 + 999, b0 + 1000, b0 + 2000, b0 + 2500, b0 + 3000, b0 + 60_000}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var problems []string
		forwarded := 0
		for key := range hist {
			for _, at := range times {
				p, byB := check(key, at)
				if p != "" {
					problems = append(problems, p)
				}
				if byB {
					forwarded++
				}
			}
		}
		if len(problems) == 0 && forwarded > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d forwarded; %d problems, first: %v", forwarded, len(problems), problems[:min(len(problems), 5)])
		}
	}

	// Over HTTP, each answer validated: a version with an end, the latest
	// (no validTo), a tombstone's time, before the history, RFC 3339.
	for path, want := range map[string]struct {
		status int
		body   string
	}{
		fmt.Sprintf("/v1/stores/prices/keys/p01?asOf=%d", b0+1500):                                  {200, fmt.Sprintf(`"value":21,"validFrom":%d,"validTo":%d`, b0+1000, b0+2000)},
		"/v1/stores/prices/keys/p01":                                                                {200, fmt.Sprintf(`"value":41,"validFrom":%d,"served"`, b0+3000)},
		"/v1/stores/prices/keys/p02?asOf=" + time.UnixMilli(b0+2100).UTC().Format(time.RFC3339Nano): {404, "no value for key"},
		fmt.Sprintf("/v1/stores/prices/keys/p03?asOf=%d", b0-1):                                     {404, "no value for key"},
		"/v1/stores/prices/keys/p03?asOf=" + time.UnixMilli(b0).UTC().Format(time.RFC3339):          {200, `"value":13`},
		"/v1/stores/prices/keys/p03?asOf=yesterday":                                                 {400, `asOf \"yesterday\": want milliseconds since the epoch or an RFC 3339 time`},
	} {
		status, body := get(path)
		if status != want.status || !strings.Contains(body, want.body) {
			t.Errorf("GET %s: %d %s; want %d with %s", path, status, body, want.status, want.body)
		}
	}
}
