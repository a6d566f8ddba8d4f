package appmain_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image/png"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/runtime/appmain"
	"github.com/kgen-dev/kgen/runtime/queryapi"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/stream"
)

var updateScreenshot = flag.Bool("update-screenshot", false, "rewrite docs/live-page.png from TestLivePageInChromium")

// wordCount splits lines into words, repartitions by word and counts them
// in the store "counts": two sub-topologies, as kgen's word count example.
func wordCount(in, out string) func() (*stream.Topology, error) {
	return func() (*stream.Topology, error) {
		t := stream.NewTopology()
		stream.AddSource(t, "lines", in, serde.String{}, serde.String{})
		stream.AddProcessor(t, "split", func() stream.Processor[string, string, string, string] {
			return stream.ProcessorFunc[string, string, string, string](func(ctx *stream.Context[string, string], r stream.Record[string, string]) error {
				for _, w := range strings.Fields(r.Value) {
					ctx.Forward(stream.Record[string, string]{Key: w, Value: w, Timestamp: r.Timestamp})
				}
				return nil
			})
		}, "lines")
		stream.AddRepartition(t, "words", serde.String{}, serde.String{}, stream.RepartitionOptions{}, "split")
		stream.AddProcessor(t, "count", func() stream.Processor[string, string, string, int64] { return &wordCounter{} }, "words")
		stream.AddKeyValueStore(t, "counts", serde.String{}, serde.Int64{}, stream.StoreOptions{Changelog: true}, "count")
		stream.AddSink(t, "word-counts", out, serde.String{}, serde.Int64{}, "count")
		return t, nil
	}
}

type wordCounter struct {
	store state.KeyValueStore[string, int64]
}

func (c *wordCounter) Init(ctx *stream.Context[string, int64]) (err error) {
	c.store, err = stream.GetKeyValueStore[string, int64](ctx, "counts")
	return err
}

func (c *wordCounter) Process(ctx *stream.Context[string, int64], r stream.Record[string, string]) error {
	n, _, err := c.store.Get(r.Key)
	if err != nil {
		return err
	}
	n++
	if err := c.store.Put(r.Key, n); err != nil {
		return err
	}
	ctx.Forward(stream.Record[string, int64]{Key: r.Key, Value: n, Timestamp: r.Timestamp})
	return nil
}

// countsQueries serves the store "counts" with string keys.
// as a generated app's QueryHandlers does.
func countsQueries(a *stream.App, forward *http.Client) (map[string]http.Handler, error) {
	view, err := stream.QueryKeyValue(a, "counts", serde.String{}, serde.Int64{})
	if err != nil {
		return nil, err
	}
	srv := queryapi.Server{App: a, Client: forward}
	return map[string]http.Handler{"counts": queryapi.KeyValue(srv, view, queryapi.ParseKey[string], queryapi.Plain[int64])}, nil
}

// freeAddr is a loopback address nothing listens on now: the instance's
// ops address and the address it advertises must be known before it runs.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// chromiumPath finds a Chromium: a missing one fails the test under CI
// (which installs it) and skips it elsewhere.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no chromium on PATH (CI installs Debian's chromium)")
	}
	t.Skip("no chromium on PATH")
	return ""
}

type lookupAnswer struct {
	Value  int64         `json:"value"`
	Served stream.Served `json:"served"`
}

// getKey asks addr for a word's count over HTTP.
func getKey(addr, word string) (int, lookupAnswer, error) {
	resp, err := http.Get("http://" + addr + "/v1/stores/counts/keys/" + url.PathEscape(word))
	if err != nil {
		return 0, lookupAnswer{}, err
	}
	defer resp.Body.Close()
	var a lookupAnswer
	err = json.NewDecoder(resp.Body).Decode(&a)
	return resp.StatusCode, a, err
}

// TestLivePageInChromium runs a word count on two instances, opens
// instance a's live page in headless Chromium, looks up a word whose count
// instance b holds, and checks the page shows its true count, served by b,
// and lists both instances with their tasks.
func TestLivePageInChromium(t *testing.T) {
	chrome := chromiumPath(t)
	c := kafkatest.New(t)
	in, out := c.CreateTopic(t, 4, nil), c.CreateTopic(t, 4, nil)
	appID := "livepage-" + in
	truth := map[string]int64{}
	var recs []*kgo.Record
	for i := range 400 {
		line := fmt.Sprintf("the quick fox %d jumps over word-%d and word-%d", i%7, i%23, i%5)
		for _, w := range strings.Fields(line) {
			truth[w]++
		}
		recs = append(recs, &kgo.Record{Topic: in, Key: []byte(fmt.Sprint(i)), Value: []byte(line)})
	}
	if err := c.Client(t).ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	addrs := map[string]string{}
	for _, name := range []string{"a", "b"} {
		addr := freeAddr(t)
		addrs[name] = addr
		cfg := appmain.Config{Brokers: c.Seeds(), AppID: appID, StateDir: t.TempDir(), InstanceID: name,
			MetricsAddr: addr, AdvertisedAddress: addr, StandbyReplicas: 1}
		app := appmain.App{ID: appID, Topology: wordCount(in, out), Queries: countsQueries}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- appmain.Run(ctx, cfg, app) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("instance %s: %v", name, err)
			}
		})
	}

	// Every word's count, through a, until all are the truth: the input is
	// processed and both instances hold their tasks.
	var other string // a word b serves
	for deadline := time.Now().Add(90 * time.Second); ; {
		settled, b := true, ""
		for w, want := range truth {
			status, a, err := getKey(addrs["a"], w)
			if err != nil || status != http.StatusOK || a.Value != want {
				settled = false
				break
			}
			if a.Served.Instance.ID == "b" {
				b = w
			}
		}
		if settled && b != "" {
			other = b
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the counts did not settle with some served by b (word served by b: %q)", b)
		}
		time.Sleep(100 * time.Millisecond)
	}

	actx, cancel := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.WindowSize(1200, 1000))...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	if err := chromedp.Do(ctx); err != nil { // starts the browser, with no timeout
		t.Fatalf("chromium: %v", err)
	}
	ctx, cancel = context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx,
		chromedp.Navigate("http://"+addrs["a"]+"/"),
		chromedp.WaitVisible(chromedp.CSS("#lookup-counts")),
		chromedp.SendKeys(chromedp.CSS("#key-counts"), other),
		chromedp.Click(chromedp.CSS("#lookup-counts")),
		chromedp.WaitVisible(chromedp.CSS("#answer-counts[data-status]")),
	); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	attr := func(name string) string {
		t.Helper()
		r, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS("#answer-counts"), name))
		if err != nil {
			t.Fatalf("chromium: attribute %s: %v", name, err)
		}
		return r.Value
	}
	count := func(css string) int {
		t.Helper()
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("`+css+`").length`))
		if err != nil {
			t.Fatalf("chromium: counting %s: %v", css, err)
		}
		return n
	}
	status, value, servedBy := attr("data-status"), attr("data-value"), attr("data-served-by")
	// The page lists what the last status said: both instances once both
	// are in the owners map, which the lookup above proved.
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelectorAll("#instances tbody tr").length === 2`)); err != nil {
		t.Fatalf("chromium: waiting for two instances on the page: %v", err)
	}
	instances, tasks := count("#instances tbody tr"), count("#tasks tbody tr")
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("chromium: screenshot: %v", err)
	}
	if status != "200" || value != fmt.Sprint(truth[other]) || servedBy != "b" {
		t.Fatalf("the page's lookup of %q on a: status %s, value %s served by %q; want 200, %d served by b", other, status, value, servedBy, truth[other])
	}
	if instances != 2 || tasks == 0 {
		t.Fatalf("the page lists %d instances and %d tasks of a, want 2 and some", instances, tasks)
	}
	if _, err := png.Decode(bytes.NewReader(shot)); err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if *updateScreenshot {
		path := filepath.Join("..", "..", "docs", "live-page.png")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestStatus: /v1/status of a running one-instance word count names the
// instance, lists every task as active here and the instance as holding
// them, the store as queryable and both sub-topologies; / is the page.
func TestStatus(t *testing.T) {
	c := kafkatest.New(t)
	in, out := c.CreateTopic(t, 2, nil), c.CreateTopic(t, 2, nil)
	appID := "status-" + in
	addr := freeAddr(t)
	cfg := appmain.Config{Brokers: c.Seeds(), AppID: appID, StateDir: t.TempDir(), InstanceID: "solo", MetricsAddr: addr, AdvertisedAddress: addr}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- appmain.Run(ctx, cfg, appmain.App{ID: appID, Topology: wordCount(in, out), Queries: countsQueries})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v", err)
		}
	})
	var s appmain.Status
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("status not running with its 4 tasks within a minute: %+v", s)
		}
		resp, err := http.Get("http://" + addr + "/v1/status")
		if err != nil {
			continue
		}
		s = appmain.Status{}
		err = json.NewDecoder(resp.Body).Decode(&s)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("status: %v", err)
		}
		if s.State == stream.Running.String() && len(s.Tasks) == 4 && len(s.Instances) == 1 && len(s.Instances[0].Active) == 4 {
			break
		}
	}
	if s.App != appID || s.Instance.ID != "solo" || s.Instance.Address != addr || !s.Instances[0].Self {
		t.Errorf("status names %q, %+v, instances %+v; want %q, solo at %s, itself", s.App, s.Instance, s.Instances, appID, addr)
	}
	for _, task := range s.Tasks {
		if task.Role != "active" {
			t.Errorf("task %+v, want active", task)
		}
	}
	if len(s.Stores) != 1 || s.Stores[0].Name != "counts" || !s.Stores[0].Queryable || s.Stores[0].Subtopology != 1 {
		t.Errorf("stores %+v, want counts, queryable, in sub-topology 1", s.Stores)
	}
	if len(s.Topology.Groups) != 2 || len(s.Topology.Edges) == 0 {
		t.Errorf("topology %+v, want 2 sub-topologies and edges", s.Topology)
	}
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var page bytes.Buffer
	page.ReadFrom(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(page.String(), "/v1/status") {
		t.Errorf("GET /: %d %s, want the page", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	// Other paths still reach the ops endpoints.
	if resp, err := http.Get("http://" + addr + "/healthz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("GET /healthz: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
}
