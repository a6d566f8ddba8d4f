package faults

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Config configures a fault-injection run.
type Config struct {
	// Brokers are the seed brokers of the cluster to run against.
	Brokers []string
	// Broker, when set, is the broker the driver started itself; only then
	// can it stage an outage.
	Broker *Broker

	Guarantee  stream.GuaranteeKind
	Workload   Workload
	Partitions int32 // of the input and output topics
	Instances  int   // app processes
	Kills      int   // SIGKILLs over the run
	// Outage stops the broker for OutageMin to OutageMax in the middle of
	// the run and starts it again with the same data. Needs Broker.
	Outage               bool
	OutageMin, OutageMax time.Duration
	// ProduceTime is how long producing the input takes: records are
	// produced at an even rate while instances are killed and restarted.
	ProduceTime time.Duration
	// RestartDelay bounds the random pause between a kill and the restart.
	RestartDelay time.Duration

	// CommitInterval and SessionTimeout are passed to the instances; zero
	// leaves the runtime's and the client's defaults (see
	// DefaultCommitInterval).
	CommitInterval time.Duration
	SessionTimeout time.Duration
	Parallelism    int // processing units per instance
	// AppLogLevel is the instances' log level (debug, info, warn, error);
	// empty means info. At debug, franz-go's own info lines are logged too.
	AppLogLevel string

	// AppBinary is the faultapp program (see Build).
	AppBinary string
	// WorkDir holds the instances' state directories and logs.
	WorkDir string
	// Settle bounds the wait, after the last fault and the last input, for
	// the instances to consume and commit everything.
	Settle time.Duration
	// Keep leaves the run's topics and group on the cluster; otherwise they
	// are deleted after a run whose guarantee held.
	Keep bool
	// Log receives progress lines.
	Log io.Writer
}

// Recovery is what followed one kill.
type Recovery struct {
	Instance  string
	At        time.Duration // since the run began
	WithState bool          // the instance restarted with its state directory
	// Took is the time from the SIGKILL until the group's committed offset
	// of every input partition with records left had advanced; zero when
	// that was not seen before the end.
	Took time.Duration
	// SpansOutage is set when the broker outage began before the recovery
	// was seen: Took then measures the outage too.
	SpansOutage bool
}

// Summary is the outcome of a run.
type Summary struct {
	Guarantee            stream.GuaranteeKind
	Seed                 uint64
	AppID                string
	RecordsIn            int
	Kills                int
	RestartsWithState    int
	RestartsWithoutState int
	Recoveries           []Recovery
	// OutageDown is how long the broker process was stopped; OutageFrom
	// and OutageTo bound the time it did not answer (from the stop to the
	// end of the start), since the run began.
	OutageDown           time.Duration
	OutageFrom, OutageTo time.Duration
	// Crashes are instance exits the driver did not cause, with their logs'
	// last lines; such an instance is restarted with its state.
	Crashes []string
	// OpenTransactions lists transactions of the app still open at the end.
	OpenTransactions []string
	// Unstable lists output partitions whose last stable offset stayed
	// below the high watermark.
	Unstable []string
	// StopErrors are instances that did not stop cleanly on SIGTERM.
	StopErrors []string
	// Partial says the instances never finished the input: only the
	// PartialRecords inputs below the committed offsets were verified.
	Partial        bool
	PartialRecords int
	Report         *Report
	Elapsed        time.Duration
}

// Held reports whether the guarantee held and the run was clean: no losses
// (and no duplicates under exactly-once), no transaction left open, no
// instance crashing or failing to stop.
func (s *Summary) Held() bool {
	return s.Report != nil && s.Report.Held() && !s.Partial && len(s.OpenTransactions) == 0 &&
		len(s.Unstable) == 0 && len(s.Crashes) == 0 && len(s.StopErrors) == 0
}

// LastLine is the summary's last line, for scripts.
func (s *Summary) LastLine() string {
	d, l := 0, 0
	if s.Report != nil {
		d, l = s.Report.Duplicates(), s.Report.Losses()
	}
	return fmt.Sprintf("faults: %d kills, %d duplicates, %d losses, guarantee %s", s.Kills, d, l, s.Guarantee)
}

// Write prints the summary; its last line is LastLine.
func (s *Summary) Write(w io.Writer) {
	fmt.Fprintf(w, "---- faults summary (seed %d, app %s, %s)\n", s.Seed, s.AppID, s.Elapsed.Round(time.Second))
	if s.Partial {
		fmt.Fprintf(w, "RUN INCOMPLETE: the group never committed all %d inputs; verified the %d below its committed offsets\n",
			s.RecordsIn, s.PartialRecords)
	}
	if s.Report != nil {
		io.WriteString(w, s.Report.String())
	} else {
		fmt.Fprintln(w, "output not verified: the run did not complete")
	}
	fmt.Fprintf(w, "kills %d, restarts %d with state and %d without\n", s.Kills, s.RestartsWithState, s.RestartsWithoutState)
	var took []time.Duration
	for i, r := range s.Recoveries {
		state := "without state"
		if r.WithState {
			state = "with state"
		}
		rec := "not seen"
		switch {
		case r.Took > 0 && r.SpansOutage:
			rec = r.Took.Round(10*time.Millisecond).String() + ", across the broker outage"
		case r.Took > 0:
			rec = r.Took.Round(10 * time.Millisecond).String()
			took = append(took, r.Took)
		}
		fmt.Fprintf(w, "  kill %2d at %6s: %s, restarted %s, recovered after %s\n",
			i+1, r.At.Round(100*time.Millisecond), r.Instance, state, rec)
	}
	if len(took) > 0 {
		slices.Sort(took)
		fmt.Fprintf(w, "time to recover: min %s, median %s, max %s (%d of %d kills, outside the outage)\n",
			took[0].Round(10*time.Millisecond), took[len(took)/2].Round(10*time.Millisecond),
			took[len(took)-1].Round(10*time.Millisecond), len(took), len(s.Recoveries))
	}
	if s.OutageTo > 0 {
		fmt.Fprintf(w, "broker outage at %s: stopped for %s, not answering for %s (stop to ready)\n",
			s.OutageFrom.Round(100*time.Millisecond), s.OutageDown.Round(100*time.Millisecond),
			(s.OutageTo - s.OutageFrom).Round(100*time.Millisecond))
	}
	for _, c := range s.Crashes {
		fmt.Fprintf(w, "CRASH: %s\n", c)
	}
	for _, e := range s.StopErrors {
		fmt.Fprintf(w, "STOP: %s\n", e)
	}
	for _, t := range s.OpenTransactions {
		fmt.Fprintf(w, "OPEN TRANSACTION: %s\n", t)
	}
	for _, u := range s.Unstable {
		fmt.Fprintf(w, "UNSTABLE: %s\n", u)
	}
	verdict := "held"
	if !s.Held() {
		verdict = "DID NOT HOLD"
	}
	fmt.Fprintf(w, "guarantee %s %s\n", s.Guarantee, verdict)
	fmt.Fprintln(w, s.LastLine())
}

// DefaultCommitInterval is the commit interval the driver suggests: 1 s
// under at-least-once, where the runtime's default of 30 s would make every
// kill replay up to 30 s of work and delay the committed offsets the driver
// watches; the runtime's own default (0) under exactly-once.
func DefaultCommitInterval(g stream.GuaranteeKind) time.Duration {
	if g == stream.AtLeastOnce {
		return time.Second
	}
	return 0
}

// Build compiles the faultapp program into dir and returns its path. It runs
// go build in the current directory, which must be inside the kgen module.
func Build(ctx context.Context, dir string) (string, error) {
	out := filepath.Join(dir, "faultapp")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "github.com/kgen-dev/kgen/faults/cmd/faultapp")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build faultapp: %w\n%s", err, b)
	}
	return out, nil
}

// connect makes the driver's client and admin client and sets the cluster
// up for a run (setup).
func (d *driver) connect(ctx context.Context) error {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(d.cfg.Brokers...),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond),
	)
	if err != nil {
		return fmt.Errorf("faults: create client: %w", err)
	}
	d.cl, d.adm = cl, kadm.NewClient(cl)
	if err := d.setup(ctx); err != nil {
		cl.Close()
		return err
	}
	return nil
}

// driver is the state of one run, owned by Run's goroutine except where
// noted.
type driver struct {
	cfg   Config
	rng   *rand.Rand
	began time.Time
	adm   *kadm.Client
	cl    *kgo.Client

	appID, input, output string
	instances            []*instance
	mon                  *monitor
	sum                  *Summary
}

func (d *driver) logf(format string, args ...any) {
	if d.cfg.Log != nil {
		fmt.Fprintf(d.cfg.Log, "faults: %6s "+format+"\n",
			append([]any{time.Since(d.began).Round(100 * time.Millisecond)}, args...)...)
	}
}

// Run runs the fault-injection scenario once and returns its summary. The
// error is for a run that could not be carried out (a broker that does not
// answer, instances that never catch up); a guarantee that did not hold is
// in the summary (Summary.Held).
func Run(ctx context.Context, cfg Config) (*Summary, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	seed := cfg.Workload.Seed
	d := &driver{
		cfg:   cfg,
		rng:   rand.New(rand.NewPCG(seed, seed+1)),
		began: time.Now(),
		sum:   &Summary{Guarantee: cfg.Guarantee, Seed: seed},
	}
	d.logf("seed %d, guarantee %s, %d records over %d keys, %d instances, %d kills, outage %v",
		seed, cfg.Guarantee, cfg.Workload.Records, cfg.Workload.Keys, cfg.Instances, cfg.Kills, cfg.Outage)
	recs, truth, err := cfg.Workload.Generate()
	if err != nil {
		return nil, err
	}
	if err := d.connect(ctx); err != nil {
		return nil, err
	}
	defer d.cl.Close()
	defer d.killAll()

	runErr := d.run(ctx, recs)
	if runErr == nil || errors.Is(runErr, errSettle) {
		partial := errors.Is(runErr, errSettle)
		var err error
		if d.sum.Report, err = d.verify(ctx, recs, truth, partial); err != nil {
			runErr = errors.Join(runErr, err)
		}
	}
	d.sum.Elapsed = time.Since(d.began)
	if runErr == nil && d.sum.Held() && !cfg.Keep {
		d.cleanup()
	} else {
		d.logf("kept topics %s, %s and group %s; instance logs and state in %s", d.input, d.output, d.appID, cfg.WorkDir)
	}
	return d.sum, runErr
}

func (c *Config) check() error {
	var errs []error
	if len(c.Brokers) == 0 {
		errs = append(errs, errors.New("no brokers"))
	}
	if c.Outage && c.Broker == nil {
		errs = append(errs, errors.New("an outage needs a broker the driver started itself"))
	}
	if c.Outage && (c.OutageMin <= 0 || c.OutageMax < c.OutageMin) {
		errs = append(errs, fmt.Errorf("outage duration between %v and %v is not a range", c.OutageMin, c.OutageMax))
	}
	if c.Instances < 1 {
		errs = append(errs, fmt.Errorf("%d instances: want at least 1", c.Instances))
	}
	if c.Partitions < 1 {
		errs = append(errs, fmt.Errorf("%d partitions: want at least 1", c.Partitions))
	}
	if c.ProduceTime <= 0 || c.Settle <= 0 {
		errs = append(errs, errors.New("produce time and settle time must be positive"))
	}
	if c.AppBinary == "" || c.WorkDir == "" {
		errs = append(errs, errors.New("app binary and work directory are required"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("faults: config: %w", errors.Join(errs...))
	}
	return nil
}

// setup creates the run's topics, named after the seed and the time so
// that runs never share them.
func (d *driver) setup(ctx context.Context) error {
	short := "alos"
	if d.cfg.Guarantee == stream.ExactlyOnce {
		short = "eos"
	}
	d.appID = fmt.Sprintf("faults-%s-%d-%x", short, d.cfg.Workload.Seed, time.Now().UnixNano()&0xffffffff)
	d.input, d.output = d.appID+"-in", d.appID+"-out"
	d.sum.AppID = d.appID
	for _, topic := range []string{d.input, d.output} {
		resp, err := d.adm.CreateTopic(ctx, d.cfg.Partitions, -1, nil, topic)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			return fmt.Errorf("faults: create topic %s: %w", topic, err)
		}
	}
	if err := d.waitTopics(ctx, d.input, d.output); err != nil {
		return err
	}
	for _, dir := range []string{"state", "logs"} {
		if err := os.MkdirAll(filepath.Join(d.cfg.WorkDir, dir), 0o755); err != nil {
			return fmt.Errorf("faults: %w", err)
		}
	}
	args := []string{
		"-brokers", strings.Join(d.cfg.Brokers, ","),
		"-app-id", d.appID,
		"-input", d.input,
		"-output", d.output,
		"-guarantee", d.cfg.Guarantee.String(),
		"-parallelism", strconv.Itoa(max(d.cfg.Parallelism, 1)),
	}
	if d.cfg.CommitInterval > 0 {
		args = append(args, "-commit-interval", d.cfg.CommitInterval.String())
	}
	if d.cfg.SessionTimeout > 0 {
		args = append(args, "-session-timeout", d.cfg.SessionTimeout.String())
	}
	if d.cfg.AppLogLevel != "" {
		args = append(args, "-log-level", d.cfg.AppLogLevel)
	}
	if d.cfg.AppLogLevel == "debug" {
		args = append(args, "-client-log-level", "info")
	}
	for i := range d.cfg.Instances {
		d.instances = append(d.instances, newInstance(i+1, d.cfg.WorkDir, args))
	}
	d.mon = newMonitor(d.adm, d.appID, d.input)
	d.logf("app %s: input %s, output %s, %d partitions; work directory %s",
		d.appID, d.input, d.output, d.cfg.Partitions, d.cfg.WorkDir)
	return nil
}

// waitTopics polls until every partition of topics has a leader that
// answers a list offsets request, for up to 30 s.
func (d *driver) waitTopics(ctx context.Context, topics ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		ends, err := d.adm.ListEndOffsets(ctx, topics...)
		if err == nil {
			err = ends.Error()
		}
		if err == nil {
			n := 0
			ends.Each(func(kadm.ListedOffset) { n++ })
			if n != len(topics)*int(d.cfg.Partitions) {
				err = fmt.Errorf("%d of %d partitions listed", n, len(topics)*int(d.cfg.Partitions))
			}
		}
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("faults: topics %v not usable within 30s: %w", topics, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// event is a fault, or a restart after one, at a moment of the run.
type event struct {
	at   time.Duration
	kind int
	inst *instance // restart: which
	keep bool      // restart: with the state directory
}

const (
	evKill = iota
	evRestart
	evOutage
)

// outageMargin keeps kills this far from the outage on either side, so
// that each recovery is measured on its own.
const outageMargin = 15 * time.Second

// schedule draws the moments of the kills and the outage. Kills fall in
// the middle 90% of the production, at least outageMargin away from the
// outage.
func (d *driver) schedule() ([]event, time.Duration, error) {
	total := d.cfg.ProduceTime
	var outageAt, outageFor time.Duration
	if d.cfg.Outage {
		outageAt = total * 6 / 10
		outageFor = d.cfg.OutageMin + time.Duration(d.rng.Int64N(int64(d.cfg.OutageMax-d.cfg.OutageMin)+1))
	}
	var evs []event
	if d.cfg.Outage {
		evs = append(evs, event{at: outageAt, kind: evOutage})
	}
	lo, hi := total/20, total*19/20
	if d.cfg.Outage && outageAt-outageMargin <= lo && outageAt+outageFor+outageMargin >= hi {
		return nil, 0, fmt.Errorf("faults: a produce time of %v leaves no room for kills %v away from a %v outage; produce for longer",
			total, outageMargin, outageFor)
	}
	for len(evs) < d.cfg.Kills+btoi(d.cfg.Outage) {
		at := lo + time.Duration(d.rng.Int64N(int64(hi-lo)))
		if d.cfg.Outage && at > outageAt-outageMargin && at < outageAt+outageFor+outageMargin {
			continue
		}
		evs = append(evs, event{at: at, kind: evKill})
	}
	slices.SortFunc(evs, func(a, b event) int { return cmp.Compare(a.at, b.at) })
	return evs, outageFor, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// run starts the instances, produces the input while killing, restarting
// and possibly stopping the broker, then waits for the instances to finish
// the input and stops them.
func (d *driver) run(ctx context.Context, recs []Record) error {
	for _, in := range d.instances {
		if err := in.start(d.cfg.AppBinary, true); err != nil {
			return err
		}
	}
	monCtx, stopMon := context.WithCancel(ctx)
	defer stopMon()
	go d.mon.run(monCtx)

	evs, outageFor, err := d.schedule()
	if err != nil {
		return err
	}
	// Half of the restarts keep the state directory, half wipe it.
	keeps := make([]bool, d.cfg.Kills)
	for i := range keeps {
		keeps[i] = i%2 == 0
	}
	d.rng.Shuffle(len(keeps), func(i, j int) { keeps[i], keeps[j] = keeps[j], keeps[i] })

	prodCtx, cancelProd := context.WithCancel(ctx)
	defer cancelProd()
	prodDone := make(chan error, 1)
	go func() { prodDone <- d.produce(prodCtx, recs) }()

	kills := 0
	for len(evs) > 0 {
		ev := evs[0]
		evs = evs[1:]
		if err := d.waitUntil(ctx, ev.at); err != nil {
			return err
		}
		if err := d.restartCrashed(); err != nil {
			return err
		}
		switch ev.kind {
		case evKill:
			in := d.pickRunning()
			if in == nil {
				// Every instance is down: try again shortly.
				ev.at = time.Since(d.began) + 200*time.Millisecond
				evs = insertEvent(evs, ev)
				continue
			}
			if err := in.kill(); err != nil {
				return err
			}
			at := time.Since(d.began)
			keep := keeps[kills]
			kills++
			d.sum.Kills = kills
			d.sum.Recoveries = append(d.sum.Recoveries, Recovery{Instance: in.name, At: at, WithState: keep})
			d.mon.killed(ctx, kills-1)
			delay := time.Duration(d.rng.Int64N(int64(d.cfg.RestartDelay) + 1))
			d.logf("kill %d: SIGKILL %s; restart in %s %s", kills, in.name, delay.Round(10*time.Millisecond),
				map[bool]string{true: "with its state", false: "without state"}[keep])
			evs = insertEvent(evs, event{at: at + delay, kind: evRestart, inst: in, keep: keep})
		case evRestart:
			if err := ev.inst.start(d.cfg.AppBinary, !ev.keep); err != nil {
				return err
			}
			if ev.keep {
				d.sum.RestartsWithState++
			} else {
				d.sum.RestartsWithoutState++
			}
			d.logf("restarted %s (%s)", ev.inst.name, map[bool]string{true: "with state", false: "state wiped"}[ev.keep])
		case evOutage:
			if err := d.outage(ctx, outageFor); err != nil {
				return err
			}
		}
	}

	select {
	case err := <-prodDone:
		if err != nil {
			return err
		}
	case <-ctx.Done():
		return ctx.Err()
	}
	d.logf("produced %d records", len(recs))
	d.sum.RecordsIn = len(recs)
	settleErr := d.settle(ctx, int64(len(recs)))
	d.sum.Recoveries = d.mon.recoveries(d.sum.Recoveries)
	for i, r := range d.sum.Recoveries {
		if d.sum.OutageTo > 0 && r.At < d.sum.OutageTo && (r.Took == 0 || r.At+r.Took > d.sum.OutageFrom) {
			d.sum.Recoveries[i].SpansOutage = true
		}
	}
	for _, in := range d.instances {
		if err := in.stop(time.Minute); err != nil {
			d.sum.StopErrors = append(d.sum.StopErrors, err.Error())
		}
	}
	d.logf("stopped the instances")
	return settleErr
}

// errSettle marks a run whose instances did not finish the input: what they
// output is still verified, to show what was lost.
var errSettle = errors.New("settle")

func insertEvent(evs []event, ev event) []event {
	i, _ := slices.BinarySearchFunc(evs, ev, func(a, b event) int { return cmp.Compare(a.at, b.at) })
	return slices.Insert(evs, i, ev)
}

// waitUntil waits for a scheduled moment of the run, restarting any
// instance that exits on its own meanwhile.
func (d *driver) waitUntil(ctx context.Context, at time.Duration) error {
	for {
		left := at - time.Since(d.began)
		if left <= 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(left, 100*time.Millisecond)):
		}
		if err := d.restartCrashed(); err != nil {
			return err
		}
	}
}

// maxCrashes is how many unexpected exits a run tolerates before giving up.
const maxCrashes = 5

// restartCrashed records instances that exited without being told to and
// starts them again with their state.
func (d *driver) restartCrashed() error {
	for _, in := range d.instances {
		if !in.crashed() {
			continue
		}
		msg := fmt.Sprintf("instance %s exited on its own at %s (%v): %s (log %s)",
			in.name, time.Since(d.began).Round(100*time.Millisecond), in.waitErr, in.lastError(), in.logPath)
		d.sum.Crashes = append(d.sum.Crashes, msg)
		d.logf("%s", msg)
		if len(d.sum.Crashes) > maxCrashes {
			return fmt.Errorf("instances exited on their own %d times; giving up", len(d.sum.Crashes))
		}
		if err := in.start(d.cfg.AppBinary, false); err != nil {
			return err
		}
	}
	return nil
}

func (d *driver) pickRunning() *instance {
	var up []*instance
	for _, in := range d.instances {
		if in.running() {
			up = append(up, in)
		}
	}
	if len(up) == 0 {
		return nil
	}
	return up[d.rng.IntN(len(up))]
}

// produce writes recs at an even rate over ProduceTime, in order, each to
// the partition Kafka's Java producer would choose for its key.
func (d *driver) produce(ctx context.Context, recs []Record) error {
	var (
		mu       sync.Mutex
		firstErr error
	)
	promise := func(r *kgo.Record, err error) {
		if err != nil {
			mu.Lock()
			if firstErr == nil {
				firstErr = fmt.Errorf("produce input to %s/%d: %w", r.Topic, r.Partition, err)
			}
			mu.Unlock()
		}
	}
	start := time.Now()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for i := 0; i < len(recs); {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		due := min(len(recs), int(float64(len(recs))*float64(time.Since(start))/float64(d.cfg.ProduceTime))+1)
		for ; i < due; i++ {
			r := recs[i]
			key := []byte(r.Key)
			d.cl.Produce(ctx, &kgo.Record{
				Topic:     d.input,
				Partition: stream.KafkaPartition(key, d.cfg.Partitions),
				Key:       key,
				Value:     AppendInput(make([]byte, 0, inputSize), r.Input),
			}, promise)
		}
	}
	if err := d.cl.Flush(ctx); err != nil {
		return fmt.Errorf("flush input: %w", err)
	}
	mu.Lock()
	defer mu.Unlock()
	return firstErr
}

// outage stops the broker, waits, and starts it again with the same data.
func (d *driver) outage(ctx context.Context, dur time.Duration) error {
	d.logf("outage: stopping the broker for %s", dur.Round(100*time.Millisecond))
	d.sum.OutageFrom = time.Since(d.began)
	if err := d.cfg.Broker.Stop(ctx); err != nil {
		return fmt.Errorf("outage: %w", err)
	}
	stopped := time.Now()
	if err := d.waitUntil(ctx, time.Since(d.began)+dur); err != nil {
		return err
	}
	d.sum.OutageDown = time.Since(stopped)
	if err := d.cfg.Broker.Start(ctx); err != nil {
		return fmt.Errorf("outage: %w", err)
	}
	d.sum.OutageTo = time.Since(d.began)
	d.logf("outage: broker answering again, %s after the stop began", (d.sum.OutageTo - d.sum.OutageFrom).Round(100*time.Millisecond))
	return nil
}

// settle waits until every instance runs, the group has committed every
// input offset, and the output has stopped growing.
func (d *driver) settle(ctx context.Context, records int64) error {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Settle)
	defer cancel()
	ends, err := d.adm.ListEndOffsets(ctx, d.input)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return fmt.Errorf("settle: list input end offsets: %w", err)
	}
	var total int64
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	if total != records {
		return fmt.Errorf("settle: the input holds %d records, %d were produced", total, records)
	}
	d.logf("waiting for the group to commit all %d input offsets", total)
	const quiet = 2 * time.Second
	var lastOut int64 = -1
	var quietSince time.Time
	lastReport := time.Now()
	for {
		if err := d.restartCrashed(); err != nil {
			return err
		}
		behind, committed, err := d.lag(ctx, ends)
		if err == nil && behind == 0 {
			out, err := d.adm.ListEndOffsets(ctx, d.output)
			if err == nil && out.Error() == nil {
				var n int64
				out.Each(func(o kadm.ListedOffset) { n += o.Offset })
				if n != lastOut {
					lastOut, quietSince = n, time.Now()
				} else if time.Since(quietSince) >= quiet {
					d.logf("all input committed; output idle at %d records", n)
					return nil
				}
			}
		}
		if time.Since(lastReport) > 10*time.Second {
			lastReport = time.Now()
			d.logf("settling: %d of %d input offsets committed", committed, total)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: the group did not commit all %d input offsets within %v (%d committed): hang?",
				errSettle, total, d.cfg.Settle, committed)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// lag returns how many input records the group has not committed.
func (d *driver) lag(ctx context.Context, ends kadm.ListedOffsets) (behind, committed int64, err error) {
	offs, err := d.adm.FetchOffsets(ctx, d.appID)
	if err != nil {
		return 0, 0, err
	}
	ends.Each(func(o kadm.ListedOffset) {
		c, ok := offs.Lookup(o.Topic, o.Partition)
		at := int64(0)
		if ok && c.Err == nil && c.At > 0 {
			at = c.At
		}
		committed += at
		behind += max(o.Offset-at, 0)
	})
	return behind, committed, nil
}

// verify checks that no transaction of the app is left open, reads the
// output with read_committed and verifies it against the truth.
//
// partial is for a run whose instances never finished the input: then only
// the inputs below the group's committed offsets are verified (and outputs
// of later inputs ignored), so that what the app claims to have processed
// is checked and the records it never got to are not called losses.
func (d *driver) verify(ctx context.Context, recs []Record, truth Truth, partial bool) (*Report, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := d.checkTransactions(ctx); err != nil {
		return nil, err
	}
	outs, err := readCommitted(ctx, d.cfg.Brokers, d.output)
	if err != nil {
		return nil, err
	}
	d.logf("read %d output records with read_committed", len(outs))
	if partial {
		committed, _, err := d.mon.offsets(ctx)
		if err != nil {
			return nil, fmt.Errorf("verify: committed offsets: %w", err)
		}
		truth, outs = committedPart(recs, d.cfg.Partitions, committed, outs)
		d.sum.Partial, d.sum.PartialRecords = true, truth.Records()
		d.logf("verifying only the %d inputs below the committed offsets", d.sum.PartialRecords)
	}
	return Verify(truth, outs, d.cfg.Guarantee), nil
}

// committedPart returns the truth of the input records below the committed
// offsets, and the outputs of those records. The input's offsets are known:
// one producer wrote recs in order, each partition from offset 0.
func committedPart(recs []Record, partitions int32, committed map[int32]int64, outs []OutputRecord) (Truth, []OutputRecord) {
	truth := Truth{}
	next := map[int32]int64{}
	for _, r := range recs {
		p := stream.KafkaPartition([]byte(r.Key), partitions)
		if next[p] < committed[p] {
			truth[r.Key] = append(truth[r.Key], r.Value)
		}
		next[p]++
	}
	var kept []OutputRecord
	for _, o := range outs {
		if out, err := DecodeOutput(o.Value); err == nil && out.Seq > int64(len(truth[o.Key])) {
			continue
		}
		kept = append(kept, o)
	}
	return truth, kept
}

// checkTransactions waits up to 30 s for the app's topics to have no open
// transaction: last stable offset equal to the high watermark on every
// output and changelog partition, and no transaction of the app listed as
// ongoing or preparing. What stays open is recorded in the summary.
func (d *driver) checkTransactions(ctx context.Context) error {
	topics := []string{d.output, d.appID + "-" + StoreName + "-changelog"}
	deadline := time.Now().Add(30 * time.Second)
	for {
		unstable, err := d.unstable(ctx, topics)
		if err != nil {
			return err
		}
		open, err := d.openTransactions(ctx, topics)
		if err != nil {
			return err
		}
		if len(unstable)+len(open) == 0 || time.Now().After(deadline) {
			d.sum.Unstable, d.sum.OpenTransactions = unstable, open
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("check transactions: %w", ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (d *driver) unstable(ctx context.Context, topics []string) ([]string, error) {
	hw, err := d.adm.ListEndOffsets(ctx, topics...)
	if err == nil {
		err = hw.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("list high watermarks of %v: %w", topics, err)
	}
	ls, err := d.adm.ListCommittedOffsets(ctx, topics...)
	if err == nil {
		err = ls.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("list last stable offsets of %v: %w", topics, err)
	}
	var out []string
	hw.Each(func(o kadm.ListedOffset) {
		if s, ok := ls.Lookup(o.Topic, o.Partition); !ok || s.Offset != o.Offset {
			out = append(out, fmt.Sprintf("%s/%d: last stable offset %d, high watermark %d", o.Topic, o.Partition, s.Offset, o.Offset))
		}
	})
	slices.Sort(out)
	return out, nil
}

var openStates = []string{"Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence"}

// openTransactions lists open transactions whose id names the app or that
// write to one of topics.
func (d *driver) openTransactions(ctx context.Context, topics []string) ([]string, error) {
	listed, err := d.adm.ListTransactions(ctx, nil, openStates)
	if err != nil {
		return nil, fmt.Errorf("list transactions: %w", err)
	}
	if len(listed) == 0 {
		return nil, nil
	}
	described, err := d.adm.DescribeTransactions(ctx, listed.TransactionalIDs()...)
	if err != nil {
		return nil, fmt.Errorf("describe transactions: %w", err)
	}
	mine := regexp.MustCompile(regexp.QuoteMeta(d.appID))
	var out []string
	for _, t := range described.Sorted() {
		touches := mine.MatchString(t.TxnID)
		for _, topic := range topics {
			if _, ok := t.Topics[topic]; ok {
				touches = true
			}
		}
		if touches && slices.Contains(openStates, t.State) {
			out = append(out, fmt.Sprintf("%s: %s since %s, partitions %v", t.TxnID, t.State,
				time.UnixMilli(t.StartTimestamp).UTC().Format(time.RFC3339), t.Topics.Sorted()))
		}
	}
	return out, nil
}

// readCommitted reads every partition of topic from its start to its last
// stable offset with the read_committed isolation level.
func readCommitted(ctx context.Context, brokers []string, topic string) ([]OutputRecord, error) {
	acl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", topic, err)
	}
	defer acl.Close()
	adm := kadm.NewClient(acl)
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: list start offsets: %w", topic, err)
	}
	ends, err := adm.ListCommittedOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: list last stable offsets: %w", topic, err)
	}
	from := map[int32]kgo.Offset{}
	pos := map[int32]int64{}
	end := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		s, _ := starts.Lookup(o.Topic, o.Partition)
		if s.Offset < o.Offset {
			from[o.Partition] = kgo.NewOffset().At(s.Offset)
			pos[o.Partition] = s.Offset
			end[o.Partition] = o.Offset
		}
	})
	if len(from) == 0 {
		return nil, nil
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		// Markers are kept so that the end is seen when the last offsets
		// before it are transaction markers or aborted records.
		kgo.KeepControlRecords(),
	)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", topic, err)
	}
	defer cl.Close()
	var out []OutputRecord
	for {
		done := true
		for p, next := range pos {
			if next < end[p] {
				done = false
			}
		}
		if done {
			return out, nil
		}
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("read %s: end not reached: %w", topic, err)
		}
		if errs := fetches.Errors(); len(errs) > 0 {
			return nil, fmt.Errorf("read %s/%d: %w", errs[0].Topic, errs[0].Partition, errs[0].Err)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			if r.Offset >= end[r.Partition] {
				return
			}
			pos[r.Partition] = r.Offset + 1
			if !r.Attrs.IsControl() {
				out = append(out, OutputRecord{Key: string(r.Key), Value: r.Value, Partition: r.Partition, Offset: r.Offset})
			}
		})
	}
}

// killAll kills every instance still running: the end of a failed run.
func (d *driver) killAll() {
	for _, in := range d.instances {
		if in.running() {
			in.kill()
		}
	}
}

// cleanup deletes the run's topics and group.
func (d *driver) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	topics := []string{d.input, d.output, d.appID + "-" + StoreName + "-changelog"}
	if _, err := d.adm.DeleteTopics(ctx, topics...); err != nil {
		d.logf("delete topics: %v", err)
	}
	if _, err := d.adm.DeleteGroups(ctx, d.appID); err != nil {
		d.logf("delete group %s: %v", d.appID, err)
	}
}
