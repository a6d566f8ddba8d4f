// Command querybench measures interactive queries over HTTP while the app
// processes input: two instances of a count per key (one unit each, the
// store in Pebble with a changelog, or in memory) in this process, each
// serving /v1/stores/counts/keys/{key} on loopback as the generated main
// does, and wrk (Debian's package) asking instance a for a key a holds
// (a local get), for a key b holds (a forwarded get), and b for that key
// (the same get, not forwarded). It prints wrk's
// requests per second, p50 and p99, and the records the two instances
// processed per second in each window: with no queries, under local gets,
// under forwarded gets, and with no queries again (to see drift).
//
//	go run ./bench/cmd/querybench -brokers 127.0.0.1:9092
//
// The input is loaded first and must outlast every window: the tool says
// so when the app caught up during one (then raise -records).
//
// A last window asks a bare net/http server (-control, on by default) that
// answers every get with the bytes of a local get's answer and does
// nothing else, in the instances' process (or a process of its own with
// -processes), while the app processes as in the other windows: the tail
// any HTTP server in Go shows on this machine under that processing, to
// read the query windows against.
//
// Two other forms: -rate N asks with hey (also Debian's) at N gets a second
// instead of wrk as fast as it can, and -input-rate R lets the app catch up
// with the loaded records and then produces R records a second while the
// windows run, so the queries meet an app that is busy but not saturated.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kgen-dev/kgen/runtime/appmain"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/state/pebblestore"
	"github.com/kgen-dev/kgen/runtime/stream"
)

func main() {
	var (
		brokers    = flag.String("brokers", "127.0.0.1:9092", "seed brokers, comma separated")
		records    = flag.Int("records", 3_000_000, "input records to load")
		keys       = flag.Int("keys", 10_000, "distinct keys")
		valueSize  = flag.Int("value-size", 100, "bytes of each input value")
		partitions = flag.Int("partitions", 4, "input partitions")
		window     = flag.Duration("window", 5*time.Second, "length of each measured window")
		threads    = flag.Int("threads", 1, "wrk threads")
		conns      = flag.Int("connections", 4, "wrk connections")
		store      = flag.String("store", "pebble", "pebble or memory")
		wrk        = flag.String("wrk", "wrk", "the wrk binary")
		rate       = flag.Float64("rate", 0, "gets per second asked by hey (Debian's package) over -connections workers; 0: wrk as fast as it can")
		hey        = flag.String("hey", "hey", "the hey binary (with -rate)")
		allocProf  = flag.String("allocprofile", "", "write the allocations of the whole run (sampled, by where they were made) to this file")
		mutexProf  = flag.String("mutexprofile", "", "write a mutex contention profile (where the lock holders let go) to this file")
		processes  = flag.Bool("processes", false, "run each instance in a process of its own, as deployed, rather than both in this one")
		child      = flag.String("child", "", "internal: run instance NAME of -child-app on -child-in and -child-out, print its address, stop at the end of stdin")
		childApp   = flag.String("child-app", "", "internal")
		childIn    = flag.String("child-in", "", "internal")
		childOut   = flag.String("child-out", "", "internal")
		control    = flag.Bool("control", true, "end with a window that asks a bare net/http server answering a local get's bytes (in the instances' process, or its own with -processes), while the app processes as before")
		childBody  = flag.String("child-control", "", "internal: run the control server answering this body, print its address, stop at the end of stdin")
	)
	flag.StringVar(&traceFile, "trace", "", "write an execution trace of the first local-gets window to this file (instances in this process)")
	cpuProf := flag.String("cpuprofile", "", "write a CPU profile of the whole run (both instances when in this process) to this file")
	flag.Float64Var(&inputRate, "input-rate", 0, "records a second produced to the input while the windows run, the app working on them live (0: the app works through the -records backlog as fast as it can)")
	flag.BoolVar(&queryable, "queryable", true, "mark the store StoreOptions.Queryable (queries read it while the app processes); false: queries wait for the unit's processing lock")
	heapFloor := flag.Int("heap-floor", appmain.DefaultHeapFloorMiB, "MiB of Go heap below which the collector does not run (appmain.SetHeapFloor), as a generated main serving store queries keeps by default (-heap-floor); 0: none")
	flag.Parse()
	// Each instance's process (with -processes) parses the same flag.
	appmain.SetHeapFloor(*heapFloor)
	if *childBody != "" {
		if err := runControlChild(*childBody); err != nil {
			fmt.Fprintln(os.Stderr, "querybench control:", err)
			os.Exit(1)
		}
		return
	}
	if *child != "" {
		if err := runChild(strings.Split(*brokers, ","), *childApp, *childIn, *childOut, *child, *store); err != nil {
			fmt.Fprintln(os.Stderr, "querybench child:", err)
			os.Exit(1)
		}
		return
	}
	if *cpuProf != "" {
		f, err := os.Create(*cpuProf)
		if err != nil {
			fmt.Fprintln(os.Stderr, "querybench:", err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "querybench:", err)
			os.Exit(1)
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}
	if *allocProf != "" {
		defer func() {
			f, err := os.Create(*allocProf)
			if err == nil {
				pprof.Lookup("allocs").WriteTo(f, 0)
				f.Close()
			}
		}()
	}
	if *mutexProf != "" {
		runtime.SetMutexProfileFraction(1)
		defer func() {
			f, err := os.Create(*mutexProf)
			if err == nil {
				pprof.Lookup("mutex").WriteTo(f, 0)
				f.Close()
			}
		}()
	}
	load := func(d time.Duration, url string) (wrkResult, error) { return runWrk(*wrk, *threads, *conns, d, url) }
	loadName, loadBin := fmt.Sprintf("wrk -t%d -c%d", *threads, *conns), *wrk
	if *rate > 0 {
		load = func(d time.Duration, url string) (wrkResult, error) { return runHey(*hey, *conns, *rate, d, url) }
		loadName, loadBin = fmt.Sprintf("hey -c%d at %.0f gets/s", *conns, *rate), *hey
	}
	if _, err := exec.LookPath(loadBin); err != nil {
		fmt.Fprintf(os.Stderr, "querybench: %s not found (apt-get install wrk hey): %v\n", loadBin, err)
		os.Exit(1)
	}
	withControl = *control
	if err := run(strings.Split(*brokers, ","), *records, *keys, *valueSize, int32(*partitions), *window, loadName, load, *store, *processes); err != nil {
		fmt.Fprintln(os.Stderr, "querybench:", err)
		os.Exit(1) // no profile is written on failure
	}
}

// queryable is the store's StoreOptions.Queryable (-queryable).
var queryable bool

// withControl is -control.
var withControl bool

// traceFile is -trace.
var traceFile string

// inputRate is -input-rate: input produced at a steady rate during the
// windows, so that the queries meet an app that is busy but not saturated.
var inputRate float64

type instance struct {
	app  *stream.App
	addr string
	done chan error
}

func run(seeds []string, records, keys, valueSize int, partitions int32, window time.Duration, loadName string, load func(time.Duration, string) (wrkResult, error), store string, processes bool) error {
	ctx := context.Background()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	stamp := time.Now().Format("20060102-150405")
	in, out := "querybench-in-"+stamp, "querybench-out-"+stamp
	if _, err := adm.CreateTopics(ctx, partitions, 1, nil, in, out); err != nil {
		return err
	}
	defer adm.DeleteTopics(context.Background(), in, out)
	t0 := time.Now()
	value := make([]byte, valueSize)
	const batch = 50_000
	for i := 0; i < records; i += batch {
		recs := make([]*kgo.Record, 0, batch)
		for j := i; j < min(i+batch, records); j++ {
			recs = append(recs, &kgo.Record{Topic: in, Key: fmt.Appendf(nil, "key-%d", j%keys), Value: value})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			return err
		}
	}
	fmt.Printf("loaded %d records over %d keys into %d partitions in %s\n", records, keys, partitions, time.Since(t0).Round(time.Millisecond))

	appID := "querybench-" + stamp
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	addrs := map[string]string{}
	for _, name := range []string{"a", "b"} {
		var addr string
		var stop func()
		var err error
		if processes {
			addr, stop, err = startChild(seeds, appID, in, out, name, store)
		} else {
			var inst *instance
			inst, err = start(ctx, seeds, appID, in, out, name, opener(store))
			if inst != nil {
				addr, stop = inst.addr, func() { cancel(); <-inst.done }
			}
		}
		if err != nil {
			return err
		}
		defer stop()
		addrs[name] = addr
	}
	a, b := addrs["a"], addrs["b"]

	// A key each instance's tasks hold, once both run and hold a count.
	var local, remote string
	for deadline := time.Now().Add(2 * time.Minute); local == "" || remote == ""; {
		if time.Now().After(deadline) {
			return fmt.Errorf("no key of a and of b answered within 2 minutes")
		}
		time.Sleep(200 * time.Millisecond)
		for k := 0; k < keys && (local == "" || remote == ""); k++ {
			key := fmt.Sprintf("key-%d", k)
			here, err := isLocal(a, key)
			if err != nil {
				break
			}
			if code, _, _ := get(a, key); code != http.StatusOK {
				continue
			}
			if here && local == "" {
				local = key
			} else if !here && remote == "" {
				remote = key
			}
		}
	}
	mode := "both instances in this process"
	if processes {
		mode = "an instance per process"
	}
	fmt.Printf("local key %s (a), forwarded key %s (b); %s, windows of %s, store %s, %s, GOMAXPROCS %d\n\n", local, remote, loadName, window, store, mode, runtime.GOMAXPROCS(0))

	processed := func() uint64 {
		var n uint64
		for _, addr := range addrs {
			st, _ := stats(addr)
			n += st.Processed
		}
		return n
	}
	lag := func() int64 {
		var n int64
		for _, addr := range addrs {
			st, _ := stats(addr)
			n += st.Lag
		}
		return n
	}
	if inputRate > 0 {
		// Let the app work off the loaded records first: from here on it
		// processes what arrives, at the rate it arrives.
		for deadline := time.Now().Add(5 * time.Minute); lag() > 0; time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				return fmt.Errorf("the app did not catch up with the %d loaded records within 5 minutes", records)
			}
		}
		stopInput, inputErr := produceSteadily(cl, in, keys, value, inputRate)
		defer func() {
			stopInput()
			if err := inputErr(); err != nil {
				fmt.Fprintln(os.Stderr, "querybench: input:", err)
			}
		}()
		fmt.Printf("input produced at %.0f records/s while the windows run\n\n", inputRate)
	}
	windows := []struct{ name, addr, key string }{{"no queries", "", ""}, {"local gets (a)", a, local},
		{"forwarded gets (a→b)", a, remote}, {"no queries again", "", ""}, {"local gets (b)", b, remote}}
	if withControl {
		code, body, err := get(a, local)
		if err != nil {
			return err
		}
		if code != http.StatusOK {
			return fmt.Errorf("the local get for the control answered %d: %s", code, body)
		}
		addr, stop, err := startControl(body, processes)
		if err != nil {
			return err
		}
		defer stop()
		windows = append(windows, struct{ name, addr, key string }{"bare server (control)", addr, local})
	}
	fmt.Printf("%-22s %12s %10s %10s %16s\n", "window", "requests/s", "p50", "p99", "records/s (a+b)")
	for _, w := range windows {
		before, t := processed(), time.Now()
		var res wrkResult
		if w.key == "" {
			time.Sleep(window)
		} else {
			url := "http://" + w.addr + "/v1/stores/counts/keys/" + w.key
			stopTrace := func() {}
			if traceFile != "" && w.name == "local gets (a)" {
				if stopTrace, err = startTrace(traceFile); err != nil {
					return err
				}
			}
			res, err = load(window, url)
			stopTrace()
			if err != nil {
				return err
			}
		}
		rate := float64(processed()-before) / time.Since(t).Seconds()
		note := ""
		if l := lag(); inputRate > 0 {
			note = fmt.Sprintf("  (lag at the end: %d)", l)
		} else if l == 0 {
			note = "  (caught up during the window: raise -records)"
		}
		if w.key == "" {
			fmt.Printf("%-22s %12s %10s %10s %16.0f%s\n", w.name, "-", "-", "-", rate, note)
		} else {
			fmt.Printf("%-22s %12.0f %10s %10s %16.0f%s\n", w.name, res.rps, res.p50, res.p99, rate, note)
			if res.errors != "" {
				fmt.Printf("  load generator: %s\n", res.errors)
			}
		}
	}
	return nil
}

// start runs one instance with its query endpoint on a loopback port.
func start(ctx context.Context, seeds []string, appID, in, out, name string, opener state.Opener) (*instance, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	topo := stream.NewTopology()
	stream.AddSource(topo, "in", in, serde.String{}, serde.Bytes{})
	stream.AddProcessor(topo, "count", func() stream.Processor[string, []byte, string, int64] { return &counter{} }, "in")
	stream.AddKeyValueStore(topo, "counts", serde.String{}, serde.Int64{}, stream.StoreOptions{Persistent: opener, Changelog: true, Queryable: queryable}, "count")
	stream.AddSink(topo, "out", out, serde.String{}, serde.Int64{}, "count")
	dir, err := os.MkdirTemp("", "querybench-")
	if err != nil {
		return nil, err
	}
	app, err := stream.New(topo, stream.Brokers(seeds...), stream.AppID(appID), stream.StateDir(dir), stream.InstanceID(name),
		stream.AdvertisedAddress(l.Addr().String()), stream.Parallelism(1),
		stream.Logger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		return nil, err
	}
	view, err := stream.QueryKeyValue(app, "counts", serde.String{}, serde.Int64{})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /v1/stores/counts/keys/{key}", stream.KeyValueHandler(view, func(s string) (string, error) { return s, nil }, nil))
	// What the driver asks of an instance, in or out of its process.
	mux.HandleFunc("GET /bench/stats", func(w http.ResponseWriter, _ *http.Request) {
		st := app.Stats()
		var lag int64
		for _, ts := range st.Tasks {
			lag += ts.Lag
		}
		json.NewEncoder(w).Encode(benchStats{Processed: st.Processed, Lag: lag})
	})
	mux.HandleFunc("GET /bench/local/{key}", func(w http.ResponseWriter, r *http.Request) {
		loc, err := app.KeyOwner("counts", []byte(r.PathValue("key")))
		if err != nil || loc.Active.ID == "" {
			http.Error(w, "not known", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, loc.LocalActive)
	})
	srv := &http.Server{Handler: traced(mux)}
	go srv.Serve(l)
	inst := &instance{app: app, addr: l.Addr().String(), done: make(chan error, 1)}
	go func() {
		err := app.Run(ctx)
		srv.Close()
		os.RemoveAll(dir)
		inst.done <- err
	}()
	return inst, nil
}

// opener is the store's backend: Pebble, or nil (memory).
func opener(store string) state.Opener {
	if store == "pebble" {
		return pebblestore.Opener(pebblestore.Options{})
	}
	return nil
}

type benchStats struct {
	Processed uint64 `json:"processed"`
	Lag       int64  `json:"lag"`
}

func stats(addr string) (benchStats, error) {
	var st benchStats
	resp, err := http.Get("http://" + addr + "/bench/stats")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	err = json.NewDecoder(resp.Body).Decode(&st)
	return st, err
}

// isLocal says whether the instance at addr runs the task of key.
func isLocal(addr, key string) (bool, error) {
	resp, err := http.Get("http://" + addr + "/bench/local/" + key)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("%s", body)
	}
	return string(body) == "true", nil
}

// startChild runs an instance in a process of its own (this program with
// -child) and returns its address once it serves.
func startChild(seeds []string, appID, in, out, name, store string) (string, func(), error) {
	return startProcess(exec.Command(os.Args[0], "-child", name, "-child-app", appID, "-child-in", in, "-child-out", out,
		"-brokers", strings.Join(seeds, ","), "-store", store, "-queryable="+strconv.FormatBool(queryable),
		"-heap-floor", flag.Lookup("heap-floor").Value.String()), "instance "+name)
}

// startProcess starts cmd, a child that prints "ready ADDR" once it serves
// and stops when its stdin ends, and returns ADDR.
func startProcess(cmd *exec.Cmd, what string) (string, func(), error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() { stdin.Close(); cmd.Wait() }
	line, err := bufio.NewReader(stdout).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "ready ")
	if err != nil || !ok {
		stop()
		return "", nil, fmt.Errorf("%s did not start: %q %v", what, line, err)
	}
	return addr, stop, nil
}

// runChild is an instance's process: it prints "ready ADDR" and runs until
// its stdin ends.
func runChild(seeds []string, appID, in, out, name, store string) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inst, err := start(ctx, seeds, appID, in, out, name, opener(store))
	if err != nil {
		return err
	}
	fmt.Printf("ready %s\n", inst.addr)
	io.Copy(io.Discard, os.Stdin)
	cancel()
	return <-inst.done
}

type counter struct {
	store state.KeyValueStore[string, int64]
}

func (c *counter) Init(ctx *stream.Context[string, int64]) (err error) {
	c.store, err = stream.GetKeyValueStore[string, int64](ctx, "counts")
	return err
}

func (c *counter) Process(ctx *stream.Context[string, int64], r stream.Record[string, []byte]) error {
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

func get(addr, key string) (int, []byte, error) {
	resp, err := http.Get("http://" + addr + "/v1/stores/counts/keys/" + key)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// startControl serves body as a local get's answer from a bare net/http
// server, in this process or (processes) in a child of its own.
func startControl(body []byte, processes bool) (string, func(), error) {
	if processes {
		return startProcess(exec.Command(os.Args[0], "-child-control", string(body)), "the control server")
	}
	return serveControl(body)
}

// serveControl serves body, as JSON, to every request on a loopback port,
// and does nothing else.
func serveControl(body []byte) (string, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	})}
	go srv.Serve(l)
	return l.Addr().String(), func() { srv.Close() }, nil
}

// runControlChild is the control server's process: it prints "ready ADDR"
// and serves until its stdin ends.
func runControlChild(body string) error {
	addr, stop, err := serveControl([]byte(body))
	if err != nil {
		return err
	}
	fmt.Printf("ready %s\n", addr)
	io.Copy(io.Discard, os.Stdin)
	stop()
	return nil
}

type wrkResult struct {
	rps      float64
	p50, p99 string
	errors   string // wrk's non-2xx and socket error lines, if any
}

var wrkPercentile = regexp.MustCompile(`^\s*(50|99)(?:\.000)?%\s+(\S+)`)

// runWrk runs wrk with its latency distribution and reads the figures.
func runWrk(wrk string, threads, conns int, d time.Duration, url string) (wrkResult, error) {
	cmd := exec.Command(wrk, "-t"+strconv.Itoa(threads), "-c"+strconv.Itoa(conns), "-d"+strconv.Itoa(int(d.Seconds()))+"s", "--latency", url)
	outb, err := cmd.CombinedOutput()
	if err != nil {
		return wrkResult{}, fmt.Errorf("wrk: %v\n%s", err, outb)
	}
	var r wrkResult
	sc := bufio.NewScanner(bytes.NewReader(outb))
	for sc.Scan() {
		line := sc.Text()
		if m := wrkPercentile.FindStringSubmatch(line); m != nil {
			if m[1] == "50" {
				r.p50 = m[2]
			} else {
				r.p99 = m[2]
			}
		}
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "Requests/sec:"); ok {
			r.rps, _ = strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
		if strings.Contains(line, "Non-2xx") || strings.Contains(line, "Socket errors") {
			r.errors += strings.TrimSpace(line) + "; "
		}
	}
	if r.rps == 0 || r.p50 == "" || r.p99 == "" {
		return r, fmt.Errorf("wrk: unreadable output:\n%s", outb)
	}
	return r, nil
}

var heyPercentile = regexp.MustCompile(`^\s*(50|99)% in (\S+) secs`)

// runHey runs hey at a fixed rate of gets a second, spread over conns
// workers (hey's -q is per worker), and reads the same figures as runWrk.
// hey paces each worker by a ticker that drops the ticks a slow answer
// misses, so a stall lowers the rate rather than queueing a burst.
func runHey(hey string, conns int, rate float64, d time.Duration, url string) (wrkResult, error) {
	cmd := exec.Command(hey, "-c", strconv.Itoa(conns), "-q", strconv.FormatFloat(rate/float64(conns), 'f', -1, 64),
		"-z", d.String(), url)
	outb, err := cmd.CombinedOutput()
	if err != nil {
		return wrkResult{}, fmt.Errorf("hey: %v\n%s", err, outb)
	}
	var r wrkResult
	sc := bufio.NewScanner(bytes.NewReader(outb))
	inStatus := false
	for sc.Scan() {
		line := sc.Text()
		if m := heyPercentile.FindStringSubmatch(line); m != nil {
			secs, _ := strconv.ParseFloat(m[2], 64)
			v := time.Duration(secs * float64(time.Second)).Round(time.Microsecond).String()
			if m[1] == "50" {
				r.p50 = v
			} else {
				r.p99 = v
			}
		}
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "Requests/sec:"); ok {
			r.rps, _ = strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
		switch {
		case strings.HasPrefix(line, "Status code distribution:"):
			inStatus = true
		case inStatus && strings.Contains(line, "[") && !strings.Contains(line, "[200]"):
			r.errors += strings.TrimSpace(line) + "; "
		case strings.HasPrefix(line, "Error distribution:"):
			inStatus = true
		}
	}
	if r.rps == 0 || r.p50 == "" || r.p99 == "" {
		return r, fmt.Errorf("hey: unreadable output:\n%s", outb)
	}
	return r, nil
}

// produceSteadily produces to topic at rate records a second, in a batch
// every 10 ms, until stop is called. err reports the first failed produce.
func produceSteadily(cl *kgo.Client, topic string, keys int, value []byte, rate float64) (stop func(), err func() error) {
	done := make(chan struct{})
	finished := make(chan struct{})
	var first error
	var mu sync.Mutex
	go func() {
		defer close(finished)
		const tick = 10 * time.Millisecond
		t := time.NewTicker(tick)
		defer t.Stop()
		start, sent := time.Now(), 0
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				// Catch up on ticks lost to a busy machine rather than fall behind the rate.
				due := int(rate * now.Sub(start).Seconds())
				for ; sent < due; sent++ {
					cl.Produce(context.Background(), &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "key-%d", sent%keys), Value: value},
						func(_ *kgo.Record, e error) {
							if e != nil {
								mu.Lock()
								if first == nil {
									first = e
								}
								mu.Unlock()
							}
						})
				}
			}
		}
	}()
	return func() { close(done); <-finished; cl.Flush(context.Background()) }, func() error {
		mu.Lock()
		defer mu.Unlock()
		return first
	}
}

// startTrace writes an execution trace to file until the returned stop.
func startTrace(file string) (stop func(), err error) {
	f, err := os.Create(file)
	if err != nil {
		return nil, err
	}
	if err := trace.Start(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { trace.Stop(); f.Close() }, nil
}

// traced marks each request as a region of the execution trace (-trace), so
// that the trace tells a slow handler from a handler that started late.
func traced(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer trace.StartRegion(r.Context(), "request").End()
		h.ServeHTTP(w, r)
	})
}
