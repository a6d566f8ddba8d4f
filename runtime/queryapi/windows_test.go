package queryapi_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kgen-dev/kgen/runtime/queryapi"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// recorder counts each key's records per minute in a window store and
// keeps each record as a session of its own instant.
type recorder struct {
	wins state.WindowStore[string, int64]
	sess state.SessionStore[string, string]
}

func (w *recorder) Init(ctx *stream.Context[string, string]) (err error) {
	if w.wins, err = stream.GetWindowStore[string, int64](ctx, "wins"); err != nil {
		return err
	}
	w.sess, err = stream.GetSessionStore[string, string](ctx, "sess")
	return err
}

func (w *recorder) Process(_ *stream.Context[string, string], r stream.Record[string, string]) error {
	ts := r.Timestamp.UnixMilli()
	start := ts - ts%60_000
	n, _, err := w.wins.Fetch(r.Key, start)
	if err != nil {
		return err
	}
	if err := w.wins.Put(r.Key, n+1, start); err != nil {
		return err
	}
	return w.sess.Put(r.Key, ts, ts, r.Value)
}

// TestWindowAndSessionHandlers serves a window and a session store over
// HTTP and reads them back with the typed clients; bad bounds and paths
// get messages.
func TestWindowAndSessionHandlers(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "in"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	topo := stream.NewTopology()
	stream.AddSource(topo, "in", "in", serde.String{}, serde.String{})
	stream.AddProcessor(topo, "rec", func() stream.Processor[string, string, string, string] { return &recorder{} }, "in")
	opts := stream.StoreOptions{Changelog: true}
	stream.AddWindowStore(topo, "wins", serde.String{}, serde.Int64{}, state.WindowStoreOptions{WindowSize: time.Minute, Retention: time.Hour}, opts, "rec")
	stream.AddSessionStore(topo, "sess", serde.String{}, serde.String{}, time.Hour, opts, "rec")

	base := time.Now().Add(-30 * time.Minute).Truncate(time.Minute)
	var recs []*kgo.Record
	wantWins := []queryapi.WindowEntry[int64]{}
	wantSess := []queryapi.SessionEntry[string]{}
	for i := range 60 {
		ts := base.Add(time.Duration(i) * 10 * time.Second)
		recs = append(recs, &kgo.Record{Topic: "in", Key: []byte("k"), Value: []byte(fmt.Sprint(i)), Timestamp: ts})
		ms := ts.UnixMilli()
		if start := ms - ms%60_000; len(wantWins) == 0 || wantWins[len(wantWins)-1].Start != start {
			wantWins = append(wantWins, queryapi.WindowEntry[int64]{Start: start})
		}
		wantWins[len(wantWins)-1].Value++
		wantSess = append(wantSess, queryapi.SessionEntry[string]{Start: ms, End: ms, Value: fmt.Sprint(i)})
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	app, err := stream.New(topo, stream.Brokers(cluster.ListenAddrs()...), stream.AppID("qapi-win"), stream.StateDir(t.TempDir()),
		stream.CommitInterval(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	wv, err := stream.QueryWindow[string, int64](app, "wins", serde.String{})
	if err != nil {
		t.Fatal(err)
	}
	sv, err := stream.QuerySession[string, string](app, "sess", serde.String{})
	if err != nil {
		t.Fatal(err)
	}
	srv := queryapi.Server{App: app}
	mux := http.NewServeMux()
	mux.Handle("/v1/stores/wins/", http.StripPrefix("/v1/stores/wins", queryapi.Window(srv, wv, queryapi.ParseKey[string], queryapi.Plain[int64])))
	mux.Handle("/v1/stores/sess/", http.StripPrefix("/v1/stores/sess", queryapi.Session(srv, sv, queryapi.ParseKey[string], queryapi.Plain[string])))
	hs := httptest.NewServer(mux)
	defer hs.Close()
	client := queryapi.NewClient(hs.URL, queryapi.ClientOptions{})

	for deadline := time.Now().Add(60 * time.Second); ; {
		wins, _, werr := queryapi.WindowStore[string, int64](client, "wins").Fetch(context.Background(), "k", base.Add(-time.Hour), base.Add(time.Hour))
		sess, _, serr := queryapi.SessionStore[string, string](client, "sess").Sessions(context.Background(), "k")
		if werr == nil && serr == nil && cmp.Equal(wins, wantWins) && cmp.Equal(sess, wantSess) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("windows %v (%v), sessions %d (%v); want %v", wins, werr, len(sess), serr, wantWins)
		}
		time.Sleep(50 * time.Millisecond) // still processing
	}
	// A bounded fetch: two windows.
	wins, _, err := queryapi.WindowStore[string, int64](client, "wins").Fetch(context.Background(), "k", base.Add(time.Minute), base.Add(2*time.Minute))
	if err != nil || !cmp.Equal(wins, wantWins[1:3]) {
		t.Errorf("two windows: %v, %v; want %v", wins, err, wantWins[1:3])
	}
	for path, want := range map[string]string{
		"/v1/stores/wins/keys/k/windows?from=yesterday": `from \"yesterday\": want milliseconds since the epoch or an RFC 3339 time`,
		"/v1/stores/wins/keys/k":                        "no such path in a window store",
		"/v1/stores/sess/keys/k/windows":                "no such path in a session store",
	} {
		resp, err := http.Get(hs.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 != 4 || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %d %s, want 4xx containing %s", path, resp.StatusCode, body, want)
		}
	}
}
