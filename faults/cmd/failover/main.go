// Command failover measures how long a task with a large store takes to
// process again on another instance after its owner is killed with SIGKILL,
// with and without a warm standby copy of the store.
//
// Each run creates a one-partition input topic (one task) and produces
// -records input records with distinct keys, so that the task's store holds
// that many entries. It starts two faultapp instances, A and B, with the
// same application id and state directories of their own, and -standbys 0
// or 1. When the group has committed the whole input (and, with a standby,
// the changelog has stopped growing and the standby had -standby-settle to
// catch up), it kills the instance that owns the task at t0 and produces one
// record with a fresh key; t1 is when that record's output appears in the
// output topic. It reports t1 - t0, the part of it until the survivor was
// assigned the task (the group noticing the kill: about the session
// timeout), and how many changelog records the survivor replayed on takeover
// (from its "restoring store" log lines).
//
//	go run ./faults/cmd/failover -own-broker -broker-port 19392 -runs 2
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kgen-dev/kgen/faults"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() { os.Exit(run()) }

type options struct {
	brokers         []string
	binary          string
	workDir         string
	records         int
	session         time.Duration
	catchupTimeout  time.Duration
	standbySettle   time.Duration
	takeoverTimeout time.Duration
	keep            bool
}

// result is one measured failover.
type result struct {
	standbys  int
	took      time.Duration // SIGKILL to the fresh record's output
	assigned  time.Duration // SIGKILL to the survivor's "tasks assigned"
	restored  int64         // changelog records the survivor replayed
	restoreIn time.Duration // its first "restoring store" to "restored task"
	promoted  bool          // the survivor logged "promoting standby"
	killed    string        // instance killed
	startTook time.Duration // processing the initial input
}

func run() int {
	var (
		brokers    = flag.String("brokers", "", "seed brokers of a running cluster (default: $KGEN_TEST_BROKERS, else 127.0.0.1:9092)")
		ownBroker  = flag.Bool("own-broker", false, "start a private broker with scripts/kafka.sh on -broker-port (or find it running) and stop it at the end")
		brokerPort = flag.Int("broker-port", 19392, "port of the private broker (its controller takes the next one)")
		brokerDir  = flag.String("broker-dir", "", "KGEN_CACHE_DIR of the private broker (default: .cache/failover in the repository)")
		records    = flag.Int("records", 1_000_000, "input records, each with a distinct key: the entries of the task's store")
		runs       = flag.Int("runs", 2, "runs of each mode")
		modes      = flag.String("standbys", "0,1", "comma separated standby replica counts to measure")
		session    = flag.Duration("session-timeout", 0, "instances' group session timeout (0: kgen's default, 10s; brokers refuse less than group.min.session.timeout.ms, 6s by default)")
		catchup    = flag.Duration("catchup-timeout", 10*time.Minute, "how long the instances may take to process the initial input")
		settle     = flag.Duration("standby-settle", 5*time.Second, "extra time the standby gets after the changelog stopped growing")
		takeover   = flag.Duration("takeover-timeout", 5*time.Minute, "how long the survivor may take to process the fresh record")
		app        = flag.String("app", "", "a built faultapp program (default: go build it into the work directory)")
		workDir    = flag.String("work-dir", "", "directory for state and logs (default: a new temporary directory)")
		keep       = flag.Bool("keep", false, "keep topics, groups and the work directory")
	)
	flag.Parse()
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "failover:", err)
		return 2
	}
	var counts []int
	for _, s := range strings.Split(*modes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 0 {
			return fail(fmt.Errorf("flag -standbys: bad count %q", s))
		}
		counts = append(counts, n)
	}
	if *records <= 0 || *runs <= 0 {
		return fail(errors.New("-records and -runs must be > 0"))
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	dir := *workDir
	var err error
	if dir == "" {
		if dir, err = os.MkdirTemp("", "kgen-failover-"); err != nil {
			return fail(err)
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail(err)
	}
	binary := *app
	if binary == "" {
		fmt.Println("failover: building faultapp")
		if binary, err = faults.Build(ctx, dir); err != nil {
			return fail(err)
		}
	}

	o := options{binary: binary, workDir: dir, records: *records, session: *session,
		catchupTimeout: *catchup, standbySettle: *settle, takeoverTimeout: *takeover, keep: *keep}
	if *ownBroker {
		script, err := faults.FindScript(".")
		if err != nil {
			return fail(err)
		}
		cache := *brokerDir
		if cache == "" {
			cache = filepath.Join(filepath.Dir(filepath.Dir(script)), ".cache", "failover")
		}
		b := &faults.Broker{Script: script, CacheDir: cache, Port: *brokerPort, ControllerPort: *brokerPort + 1, Log: os.Stdout}
		if err := b.Start(ctx); err != nil {
			return fail(err)
		}
		defer func() {
			if err := b.Stop(context.Background()); err != nil {
				fmt.Fprintln(os.Stderr, "failover:", err)
			}
		}()
		o.brokers = []string{b.Addr()}
	} else {
		seeds := *brokers
		if seeds == "" {
			seeds = os.Getenv("KGEN_TEST_BROKERS")
		}
		if seeds == "" {
			seeds = "127.0.0.1:9092"
		}
		o.brokers = strings.Split(seeds, ",")
	}

	var results []result
	failed := false
	for r := 1; r <= *runs && ctx.Err() == nil; r++ {
		for _, n := range counts {
			if ctx.Err() != nil {
				break
			}
			name := fmt.Sprintf("failover-s%d-r%d-%x", n, r, time.Now().UnixNano()&0xffffffff)
			fmt.Printf("failover: run %d, %d standby replica(s), app id %s\n", r, n, name)
			res, err := measure(ctx, o, name, n)
			if err != nil {
				fmt.Fprintf(os.Stderr, "failover: run %d with %d standby replica(s): %v (logs in %s)\n", r, n, err, filepath.Join(dir, name))
				failed = true
				continue
			}
			fmt.Printf("failover: killed %s; processing again after %.2fs (task assigned to the survivor after %.2fs), %d changelog records restored in %.2fs, standby promoted: %v\n",
				res.killed, res.took.Seconds(), res.assigned.Seconds(), res.restored, res.restoreIn.Seconds(), res.promoted)
			results = append(results, res)
		}
	}

	sessionText := "10 s (kgen default)"
	if *session > 0 {
		sessionText = session.String()
	}
	fmt.Printf("\nstore of %d entries, one task, two instances\n\n", *records)
	fmt.Println("| mode | time to processing again (s) | of which until reassigned (s) | changelog records restored on takeover | restore took (s) | session timeout |")
	fmt.Println("|---|---:|---:|---:|---:|---|")
	for _, res := range results {
		mode := "no standby"
		if res.standbys > 0 {
			mode = fmt.Sprintf("%d standby", res.standbys)
		}
		fmt.Printf("| %s | %.2f | %.2f | %d | %.2f | %s |\n", mode, res.took.Seconds(), res.assigned.Seconds(), res.restored, res.restoreIn.Seconds(), sessionText)
	}
	if *workDir == "" && !*keep && !failed {
		os.RemoveAll(dir)
	}
	if failed {
		return 1
	}
	return 0
}

// child is one faultapp process.
type child struct {
	name    string
	logPath string
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	exited  chan struct{}
}

func startChild(o options, runDir, appID, in, out, name string, standbys int) (*child, error) {
	stateDir := filepath.Join(runDir, "state", name)
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return nil, err
	}
	logPath := filepath.Join(runDir, name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	args := []string{
		"-brokers", strings.Join(o.brokers, ","),
		"-app-id", appID, "-input", in, "-output", out,
		"-state-dir", stateDir, "-instance-id", name,
		"-standbys", strconv.Itoa(standbys),
		"-log-level", "info", "-exit-on-stdin-eof",
	}
	if o.session > 0 {
		args = append(args, "-session-timeout", o.session.String())
	}
	cmd := exec.Command(o.binary, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// The child stops when this pipe closes, so none outlives the program.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, logPath: logPath, cmd: cmd, stdin: stdin, exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		logf.Close()
		close(c.exited)
	}()
	return c, nil
}

func (c *child) running() bool {
	select {
	case <-c.exited:
		return false
	default:
		return true
	}
}

func (c *child) kill() {
	if c.running() {
		c.cmd.Process.Signal(syscall.SIGKILL)
	}
	<-c.exited
	c.stdin.Close()
}

// stop asks the child to stop (SIGTERM) and kills it after 30 s.
func (c *child) stop() {
	if c.running() {
		c.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.exited:
		case <-time.After(30 * time.Second):
		}
	}
	c.kill()
}

// measure runs one failover with the given standby count.
func measure(ctx context.Context, o options, appID string, standbys int) (res result, err error) {
	res.standbys = standbys
	runDir := filepath.Join(o.workDir, appID)
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return res, err
	}
	in, out := appID+"-in", appID+"-out"
	changelog := appID + "-" + faults.StoreName + "-changelog"

	cl, err := kgo.NewClient(kgo.SeedBrokers(o.brokers...),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.MaxBufferedRecords(100_000),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return res, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	defer func() {
		if o.keep {
			return
		}
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		adm.DeleteTopics(cctx, in, out, changelog)
		adm.DeleteGroup(cctx, appID)
	}()

	for _, t := range []string{in, out} {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		resp, err := adm.CreateTopic(cctx, 1, -1, nil, t)
		cancel()
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			return res, fmt.Errorf("create topic %s: %w", t, err)
		}
	}

	// The input: distinct keys, each with sequence number 1.
	began := time.Now()
	if err := produceInput(ctx, cl, in, o.records); err != nil {
		return res, err
	}
	fmt.Printf("failover: produced %d records in %.1fs\n", o.records, time.Since(began).Seconds())

	began = time.Now()
	var children []*child
	defer func() {
		for _, c := range children {
			c.stop()
		}
	}()
	for _, name := range []string{"A", "B"} {
		c, err := startChild(o, runDir, appID, in, out, name, standbys)
		if err != nil {
			return res, err
		}
		children = append(children, c)
	}

	// Wait until the group has committed the whole input.
	if err := waitFor(ctx, o.catchupTimeout, "the group to commit the input's end offset", func(ctx context.Context) (bool, error) {
		for _, c := range children {
			if !c.running() {
				return false, fmt.Errorf("instance %s exited", c.name)
			}
		}
		committed, end, err := offsets(ctx, adm, appID, in)
		return err == nil && end > 0 && committed >= end, nil
	}); err != nil {
		return res, err
	}
	res.startTook = time.Since(began)
	fmt.Printf("failover: the input is processed and committed after %.1fs\n", res.startTook.Seconds())

	if standbys > 0 {
		// The changelog is complete once the input is committed; give the
		// standby time to read to its end.
		if err := waitStable(ctx, adm, changelog, 3*time.Second, o.catchupTimeout); err != nil {
			return res, err
		}
		fmt.Printf("failover: changelog stopped growing; giving the standby %v more\n", o.standbySettle)
		select {
		case <-time.After(o.standbySettle):
		case <-ctx.Done():
			return res, ctx.Err()
		}
	}

	// Who owns the task?
	var owner, survivor *child
	for _, c := range children {
		owns, err := ownsTask(c.logPath)
		if err != nil {
			return res, err
		}
		if owns {
			if owner != nil {
				return res, errors.New("both instances claim the task")
			}
			owner = c
		} else {
			survivor = c
		}
	}
	if owner == nil || survivor == nil {
		return res, errors.New("no instance owns the task")
	}
	res.killed = owner.name

	// The output's end before the kill: the fresh record's output comes later.
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	outEnds, err := adm.ListEndOffsets(cctx, out)
	cancel()
	if err == nil {
		err = outEnds.Error()
	}
	if err != nil {
		return res, fmt.Errorf("output end offset: %w", err)
	}
	outEnd, _ := outEnds.Lookup(out, 0)
	st, err := os.Stat(survivor.logPath)
	if err != nil {
		return res, err
	}
	logMark := st.Size()
	consumer, err := kgo.NewClient(kgo.SeedBrokers(o.brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{out: {0: kgo.NewOffset().At(outEnd.Offset)}}),
		kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		return res, err
	}
	defer consumer.Close()

	freshKey := fmt.Sprintf("fresh-%x", time.Now().UnixNano())
	t0 := time.Now()
	owner.kill()
	cctx, cancel = context.WithTimeout(ctx, 30*time.Second)
	err = cl.ProduceSync(cctx, &kgo.Record{Topic: in, Partition: 0, Key: []byte(freshKey),
		Value: faults.AppendInput(nil, faults.Input{Seq: 1, Value: 1})}).FirstErr()
	cancel()
	if err != nil {
		return res, fmt.Errorf("produce the fresh record: %w", err)
	}

	tctx, cancel := context.WithTimeout(ctx, o.takeoverTimeout)
	defer cancel()
	var t1 time.Time
	for t1.IsZero() {
		fs := consumer.PollFetches(tctx)
		if tctx.Err() != nil {
			return res, fmt.Errorf("the fresh record's output did not appear within %v", o.takeoverTimeout)
		}
		now := time.Now()
		fs.EachRecord(func(r *kgo.Record) {
			if t1.IsZero() && string(r.Key) == freshKey {
				t1 = now
			}
		})
		if !survivor.running() {
			return res, fmt.Errorf("survivor %s exited", survivor.name)
		}
	}
	res.took = t1.Sub(t0)

	tk, err := takeover(survivor.logPath, logMark, t0)
	res.restored, res.promoted, res.assigned, res.restoreIn = tk.restored, tk.promoted, tk.assigned, tk.restoreIn
	return res, err
}

func produceInput(ctx context.Context, cl *kgo.Client, topic string, n int) error {
	width := len(strconv.Itoa(n))
	errc := make(chan error, 1)
	for i := range n {
		r := &kgo.Record{Topic: topic, Partition: 0,
			Key:   fmt.Appendf(nil, "k%0*d", width, i),
			Value: faults.AppendInput(make([]byte, 0, 16), faults.Input{Seq: 1, Value: int64(i%1000 + 1)})}
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errc <- err:
				default:
				}
			}
		})
	}
	fctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if err := cl.Flush(fctx); err != nil {
		return fmt.Errorf("produce the input: %w", err)
	}
	select {
	case err := <-errc:
		return fmt.Errorf("produce the input: %w", err)
	default:
		return nil
	}
}

// offsets returns the group's committed offset and the end offset of
// partition 0 of topic.
func offsets(ctx context.Context, adm *kadm.Client, group, topic string) (committed, end int64, err error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	offs, err := adm.FetchOffsets(cctx, group)
	if err != nil {
		return 0, 0, err
	}
	ends, err := adm.ListEndOffsets(cctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return 0, 0, err
	}
	e, _ := ends.Lookup(topic, 0)
	if c, ok := offs.Lookup(topic, 0); ok && c.Err == nil {
		committed = c.At
	}
	return committed, e.Offset, nil
}

// waitFor polls cond every 200 ms until it holds, fails, or timeout passes.
func waitFor(ctx context.Context, timeout time.Duration, what string, cond func(context.Context) (bool, error)) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := cond(ctx)
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waiting for %s: timed out after %v", what, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// waitStable waits until topic's partition 0 end offset is positive and has
// not moved for quiet.
func waitStable(ctx context.Context, adm *kadm.Client, topic string, quiet, timeout time.Duration) error {
	last, since := int64(-1), time.Now()
	return waitFor(ctx, timeout, "the changelog to stop growing", func(ctx context.Context) (bool, error) {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		ends, err := adm.ListEndOffsets(cctx, topic)
		if err == nil {
			err = ends.Error()
		}
		if err != nil {
			return false, nil
		}
		e, _ := ends.Lookup(topic, 0)
		if e.Offset != last {
			last, since = e.Offset, time.Now()
			return false, nil
		}
		return last > 0 && time.Since(since) >= quiet, nil
	})
}

// logLine is the part of one slog text line this program reads.
type logLine struct {
	time   time.Time
	msg    string
	fields map[string]string
}

// parseLine reads a line of slog's text handler: key=value pairs, values
// possibly quoted.
func parseLine(s string) (logLine, bool) {
	l := logLine{fields: map[string]string{}}
	for s != "" {
		s = strings.TrimLeft(s, " ")
		eq := strings.IndexByte(s, '=')
		if eq <= 0 {
			break
		}
		key := s[:eq]
		s = s[eq+1:]
		var val string
		if strings.HasPrefix(s, `"`) {
			q, err := strconv.QuotedPrefix(s)
			if err != nil {
				break
			}
			val, _ = strconv.Unquote(q)
			s = s[len(q):]
		} else {
			sp := strings.IndexByte(s, ' ')
			if sp < 0 {
				sp = len(s)
			}
			val, s = s[:sp], s[sp:]
		}
		l.fields[key] = val
	}
	l.msg = l.fields["msg"]
	if l.msg == "" {
		return l, false
	}
	l.time, _ = time.Parse(time.RFC3339Nano, l.fields["time"])
	return l, true
}

func readLines(path string, from int64, each func(logLine)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return err
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		if l, ok := parseLine(sc.Text()); ok {
			each(l)
		}
	}
	return sc.Err()
}

// ownsTask reports whether the instance's log says it holds an active task:
// its last "tasks assigned" comes after its last "tasks revoked".
func ownsTask(path string) (bool, error) {
	owns := false
	err := readLines(path, 0, func(l logLine) {
		switch l.msg {
		case "tasks assigned":
			owns = true
		case "tasks revoked":
			owns = false
		}
	})
	return owns, err
}

// takeoverLog is what the survivor's log tells of the takeover.
type takeoverLog struct {
	restored  int64         // changelog records in its "restoring store" lines
	promoted  bool          // it logged "promoting standby"
	assigned  time.Duration // t0 to its first "tasks assigned"
	restoreIn time.Duration // its first "restoring store" to "restored task"
}

// takeover reads the survivor's log from offset from on.
func takeover(path string, from int64, t0 time.Time) (takeoverLog, error) {
	var tk takeoverLog
	var restoring, restoredAt time.Time
	err := readLines(path, from, func(l logLine) {
		switch l.msg {
		case "restoring store":
			a, err1 := strconv.ParseInt(l.fields["from"], 10, 64)
			b, err2 := strconv.ParseInt(l.fields["to"], 10, 64)
			if err1 == nil && err2 == nil {
				tk.restored += b - a
			}
			if restoring.IsZero() {
				restoring = l.time
			}
		case "restored task":
			restoredAt = l.time
		case "promoting standby":
			tk.promoted = true
		case "tasks assigned":
			if tk.assigned == 0 && !l.time.IsZero() {
				tk.assigned = l.time.Sub(t0)
			}
		}
	})
	if !restoring.IsZero() && restoredAt.After(restoring) {
		tk.restoreIn = restoredAt.Sub(restoring)
	}
	return tk, err
}
