package queries

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kgen-dev/kgen/runtime/queryapi"
)

const token = "s3cret"

// freeAddr is a loopback address no one listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startInstance runs the generated application with its ops endpoints at
// ops ("" for none), advertising advertised.
func startInstance(t *testing.T, seeds []string, name, ops, advertised string) {
	t.Helper()
	cfg := Config{Brokers: seeds, AppID: "queries-test", StateDir: t.TempDir(), InstanceID: name,
		MetricsAddr: ops, AdvertisedAddress: advertised, OpsToken: token, CommitInterval: 100 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, Factories{}) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("instance %s: %v", name, err)
		}
	})
}

// TestQueriesTwoInstances runs three instances of the word count on kfake:
// a and b serve queries, c advertises an address no one answers at. Every
// word is asked of a, through the generated client and over HTTP: the
// words of b's tasks come back forwarded, those of c's are 503 with
// Retry-After. Every answer validates against openapi.json.
func TestQueriesTwoInstances(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, slices.Collect(maps.Keys(Topics))...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close) // after the instances stop
	seeds := cluster.ListenAddrs()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	truth := map[string]int64{}
	var recs []*kgo.Record
	for i := range 400 {
		w := fmt.Sprintf("w%02d", i%40)
		if i%40 < 10 {
			w = fmt.Sprintf("w%02d", i%10) // some words more often
		}
		truth[w]++
		recs = append(recs, &kgo.Record{Topic: TopicWords, Key: []byte(w), Value: []byte("x")})
	}
	// The global table's rows: a region per word.
	regions := map[string]string{}
	for i := range 40 {
		w := fmt.Sprintf("w%02d", i)
		regions[w] = fmt.Sprintf("r%d", i%3)
		recs = append(recs, &kgo.Record{Topic: TopicRegions, Key: []byte(w), Value: []byte(regions[w])})
	}
	produced := time.Now().UnixMilli()
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	acked := time.Now().UnixMilli()
	addrA, addrB, deadC := freeAddr(t), freeAddr(t), freeAddr(t)
	startInstance(t, seeds, "a", addrA, addrA)
	startInstance(t, seeds, "b", addrB, addrB)
	startInstance(t, seeds, "c", "", deadC)

	doc, err := openapi3.NewLoader().LoadFromFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if embedded, _ := os.ReadFile("openapi.json"); strings.TrimSpace(string(embedded)) != OpenAPIDocument {
		t.Error("openapi.json and OpenAPIDocument differ")
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	// get asks instance a over HTTP and checks the answer against the
	// document.
	get := func(path string, auth bool) (int, http.Header, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, "http://"+addrA+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if auth {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, nil, err.Error() // not listening yet
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		// The document's paths have no host: match on the path alone.
		vreq := req.Clone(context.Background())
		vreq.URL.Scheme, vreq.URL.Host, vreq.Host = "", "", ""
		if route, params, err := router.FindRoute(vreq); err == nil {
			in := &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: route,
				Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
			out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header,
				Body: io.NopCloser(bytes.NewReader(body)), Options: &openapi3filter.Options{IncludeResponseStatus: true}}
			if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
				t.Errorf("GET %s: %d %s does not validate: %v", path, resp.StatusCode, body, err)
			}
		} else if strings.HasPrefix(path, "/v1/stores/") && !strings.HasPrefix(path, "/v1/stores/nope/") {
			t.Errorf("GET %s: not in openapi.json: %v", path, err)
		}
		return resp.StatusCode, resp.Header, string(body)
	}

	client := NewQueryClient("http://"+addrA, queryapi.ClientOptions{Token: token})
	// sweep asks a for every word: each answer is the true count (served
	// by a or, forwarded, by b) or 503 with Retry-After naming c's dead
	// address; anything else means the group has not settled yet.
	var byB, byC int
	sweep := func() (settled bool, problems []string) {
		byB, byC = 0, 0
		for w, want := range truth {
			got, served, err := client.Counts().Get(context.Background(), w)
			var qe *queryapi.Error
			switch {
			case errors.As(err, &qe) && qe.Status == http.StatusServiceUnavailable && strings.Contains(qe.ErrorAnswer.Error, deadC):
				if qe.RetryAfter <= 0 || !qe.Retry {
					t.Errorf("%s: 503 without Retry-After: %+v", w, qe)
				}
				byC++
			case err == nil && got == want:
				if served.Instance.ID == "b" {
					byB++
				}
			default:
				problems = append(problems, fmt.Sprintf("%s: got %d, %+v, %v; want %d", w, got, served, err, want))
			}
		}
		// Three members, each with tasks (c joins last, and cooperative
		// rebalancing moves tasks in two rounds).
		return len(problems) == 0 && byB > 0 && byC > 0 && byB+byC < len(truth), problems
	}
	for deadline := time.Now().Add(90 * time.Second); ; {
		settled, problems := sweep()
		if settled {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never settled: by b %d, c %d of %d; %v", byB, byC, len(truth), problems)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("of %d words: %d answered by b through a, %d owned by the unreachable c", len(truth), byB, byC)
	// A count comes with the time of its last update: its word's last
	// record's, stamped when it was produced.
	for w := range truth {
		ans, err := client.Counts().Lookup(context.Background(), w)
		if err != nil {
			continue // c's
		}
		if ans.Timestamp == nil {
			t.Errorf("%s: no timestamp", w)
		} else if ts := *ans.Timestamp; ts < produced || ts > acked {
			t.Errorf("%s: timestamp %d, want one in [%d, %d]", w, ts, produced, acked)
		}
	}

	// The window and session stores of the same counts, through a: the
	// windows of a word sum to its count (forwarded like the rest); its
	// records are minutes apart at most, so they make one session.
	windowed := 0
	for _, w := range []string{"w00", "w01", "w02", "w03", "w04", "w05"} {
		for deadline := time.Now().Add(60 * time.Second); ; {
			wins, _, werr := client.MinuteCounts().Fetch(context.Background(), w, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
			sess, _, serr := client.VisitCounts().Sessions(context.Background(), w)
			var sum int64
			for _, win := range wins {
				sum += win.Value
			}
			if werr == nil && serr == nil && sum == truth[w] && len(sess) == 1 && sess[0].Value == truth[w] {
				windowed++
				break
			}
			var qe *queryapi.Error
			if errors.As(werr, &qe) && strings.Contains(qe.ErrorAnswer.Error, deadC) {
				break // c's
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: windows %v (%v), sessions %v (%v); want %d in all", w, wins, werr, sess, serr, truth[w])
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if windowed == 0 {
		t.Error("no word's windows and sessions read: all on c?")
	}
	get("/v1/stores/minute-counts/keys/w00/windows?from=0", true)
	get("/v1/stores/visit-counts/keys/w00/sessions", true)
	if status, _, body := get("/v1/stores/minute-counts/keys/w00/windows?to=soon", true); status != 400 || !strings.Contains(body, `to \"soon\"`) {
		t.Errorf("to=soon: %d %s, want 400 naming it", status, body)
	}

	// The global table: a and b each answer every key themselves, c's
	// partitions of the counts notwithstanding (every instance holds all
	// of a global table), and All misses nothing.
	for _, inst := range []struct{ name, addr string }{{"a", addrA}, {"b", addrB}} {
		rc := NewQueryClient("http://"+inst.addr, queryapi.ClientOptions{Token: token}).Regions()
		for w, want := range regions {
			got, served, err := rc.Get(context.Background(), w)
			if err != nil || got != want || served.Instance.ID != inst.name || !served.Global || served.Stale {
				t.Errorf("%s: region of %s: %q, %+v, %v; want %q served by %s as global", inst.name, w, got, served, err, want, inst.name)
			}
		}
		all, err := rc.All(context.Background(), 0)
		if err != nil || len(all.Entries) != len(regions) || len(all.Missing) != 0 || len(all.Served) != 1 || !all.Served[0].Global {
			t.Errorf("%s: all regions: %d entries (want %d), missing %v, served %+v, %v", inst.name, len(all.Entries), len(regions), all.Missing, all.Served, err)
		}
		for _, e := range all.Entries {
			if regions[e.Key] != e.Value {
				t.Errorf("%s: all regions: %s = %q, want %q", inst.name, e.Key, e.Value, regions[e.Key])
			}
		}
	}
	if status, _, body := get("/v1/stores/regions/keys/w07", true); status != 200 || !strings.Contains(body, `"global":true`) || !strings.Contains(body, `"value":"r1"`) {
		t.Errorf("region of w07: %d %s", status, body)
	}
	get("/v1/stores/regions/keys?prefix=w1", true)
	if status, _, body := get("/v1/stores/regions/keys/nope", true); status != 404 {
		t.Errorf("region of nope: %d %s, want 404", status, body)
	}

	// A key the store lacks, of a task a or b holds (c's are 503).
	missing := ""
	for i := 0; missing == ""; i++ {
		k := fmt.Sprintf("nope%d", i)
		if _, _, err := client.Counts().Get(context.Background(), k); errors.Is(err, queryapi.ErrNotFound) {
			missing = k
		} else if i == 100 {
			t.Fatalf("no key found missing from a and b: %v", err)
		}
	}
	// Over HTTP, with the messages a person reads.
	for _, c := range []struct {
		path   string
		auth   bool
		status int
		body   string
	}{
		{"/v1/stores/counts/keys/" + missing, true, 404, `no value for key \"` + missing + `\"`},
		{"/v1/stores/counts/keys/w01", false, 401, "needs the ops token"},
		{"/v1/stores/nope/keys/w01", true, 404, `no queryable store \"nope\"; the queryable stores are: counts`},
		{"/v1/stores/counts/keys?limit=many", true, 400, `limit \"many\": want a number from 1 to 100000`},
		{"/v1/stores/counts/keys?from=a", true, 400, "from and to go together"},
		{"/v1/openapi.json", true, 200, `"openapi": "3.0.3"`},
	} {
		status, _, body := get(c.path, c.auth)
		if status != c.status || !strings.Contains(body, c.body) {
			t.Errorf("GET %s: %d %s, want %d containing %s", c.path, status, body, c.status, c.body)
		}
	}
	req, _ := http.NewRequest(http.MethodDelete, "http://"+addrA+"/v1/stores/counts/keys/w01", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("DELETE: %v %v, want 405", resp, err)
	}

	// All from a and from b: together every word of a's and b's tasks,
	// each once; c's partitions listed as missing with c as the owner.
	seen := map[string]int64{}
	for _, base := range []string{addrA, addrB} {
		all, err := NewQueryClient("http://"+base, queryapi.ClientOptions{Token: token}).Counts().All(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range all.Entries {
			if _, dup := seen[e.Key]; dup {
				t.Errorf("%s answered by both", e.Key)
			}
			seen[e.Key] = e.Value
		}
		if len(all.Missing) == 0 {
			t.Errorf("%s: nothing missing with three instances", base)
		}
	}
	if len(seen) != len(truth)-byC {
		t.Errorf("all: %d words from a and b, want %d", len(seen), len(truth)-byC)
	}
	for w, n := range seen {
		if truth[w] != n {
			t.Errorf("all: %s = %d, want %d", w, n, truth[w])
		}
	}
	// Everywhere, through a: every word of a's and b's tasks, c's
	// partitions still missing (no one answers at c's address).
	every, err := NewQueryClient("http://"+addrA, queryapi.ClientOptions{Token: token, Everywhere: true}).Counts().All(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, e := range every.Entries {
		got[e.Key] = e.Value
	}
	if !maps.Equal(got, seen) || len(every.Missing) == 0 {
		t.Errorf("everywhere: %d words (want %d), missing %v", len(got), len(seen), every.Missing)
	}
	for _, m := range every.Missing {
		if m.Owner == nil || m.Owner.ID != "c" {
			t.Errorf("everywhere: partition %d missing, owner %v; want c", m.Partition, m.Owner)
		}
	}
	// A limit truncates and says where to go on; a range and a prefix
	// validate too.
	if status, _, body := get("/v1/stores/counts/keys?limit=1", true); status != 200 || !strings.Contains(body, `"truncated":true`) {
		t.Errorf("limit=1: %d %s", status, body)
	}
	get("/v1/stores/counts/keys?from=w00&to=w05", true)
	get("/v1/stores/counts/keys?prefix=w0", true)
}
