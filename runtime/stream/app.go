package stream

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// State is where an App is in its life, as in Kafka Streams: Created →
// Rebalancing → Running, back to Rebalancing whenever a unit is not yet in
// the group (joining, or rejoining after losing its tasks in an outage), is
// inside a rebalance, or has an active task restoring; then Closing →
// Stopped, or Failed.
type State int32

const (
	Created State = iota
	Rebalancing
	Running
	Closing
	Stopped
	Failed
)

func (s State) String() string {
	if s < Created || s > Failed {
		return fmt.Sprintf("state(%d)", int32(s))
	}
	return [...]string{"created", "rebalancing", "running", "closing", "stopped", "failed"}[s]
}

// App runs a Topology against a Kafka cluster: its units join the consumer
// group named by the app id, own the tasks of the partitions they are
// assigned, and process, punctuate and commit until Run's context ends.
// Start more instances of the same app (same AppID) to spread the tasks.
type App struct {
	topo *Topology
	cfg  config

	state atomic.Int32
	// stateMu serializes state changes: the units' phases and the state
	// derived from them change together.
	stateMu sync.Mutex
	phases  []bool // per unit: running (in the group, no rebalance, nothing restoring)

	adm        *kadm.Client
	admClient  *kgo.Client
	partitions map[string]int32 // every topic the app reads or writes
	// topicsKnown is set once partitions is complete and no longer
	// written: queries read it from other goroutines only then.
	topicsKnown atomic.Bool
	topicSub    map[string]int // source topic -> sub-topology
	// maxMessageBytes is the max.message.bytes of each sink and
	// dead-letter topic, read at start: it bounds the producer's batches
	// for the topic, and a dead letter larger is sent truncated.
	maxMessageBytes map[string]int

	// Changelog topics are created while the units join the group; tasks
	// with stores wait for changelogsReady, then read changelogsErr.
	changelogsReady chan struct{}
	changelogsErr   error

	statsMu sync.Mutex
	units   []*unit

	// globals are the global tables by name, filled to their topics' ends
	// before any unit exists and read by every unit's tasks; globalStats
	// are their updater's counters.
	globals     map[string]*globalStore
	globalStats *globalCounters
	// queryGlobals publishes globals to queries, which run on other
	// goroutines, once the tables are loaded; nil before.
	queryGlobals atomic.Pointer[map[string]*globalStore]

	// applySlots bounds the restore chunks written at once, by all units
	// (restoreApplySlots).
	applySlots chan struct{}
}

// New checks the topology and the options. It does not connect: Run does.
func New(t *Topology, opts ...Option) (*App, error) {
	if t == nil {
		return nil, errors.New("new app: nil topology")
	}
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.commitInterval <= 0 {
		cfg.commitInterval = 30 * time.Second
		if cfg.guarantee == ExactlyOnce {
			cfg.commitInterval = 100 * time.Millisecond
		}
	}
	errs := cfg.errs
	if err := t.Validate(); err != nil {
		errs = append(errs, err)
	}
	if len(cfg.brokers) == 0 {
		errs = append(errs, errors.New("no brokers: use stream.Brokers"))
	}
	if cfg.appID == "" {
		errs = append(errs, errors.New("no application id: use stream.AppID"))
	} else if strings.ContainsAny(cfg.appID, "/\\ ") {
		errs = append(errs, fmt.Errorf("application id %q: must not contain slashes or spaces", cfg.appID))
	}
	for _, p := range []ErrorPolicy{cfg.onProcessError, cfg.onDeserializeError, cfg.onProduceError} {
		if p.action == actionDeadLetter && p.topic == "" {
			errs = append(errs, errors.New("DeadLetter: the dead-letter topic must not be empty"))
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("new app: %w", errors.Join(errs...))
	}
	topo, err := t.forApp(cfg.appID)
	if err != nil {
		return nil, fmt.Errorf("new app: %w", err)
	}
	a := &App{topo: topo, cfg: cfg, topicSub: map[string]int{}, applySlots: make(chan struct{}, restoreApplySlots())}
	for _, s := range topo.subs {
		for _, topic := range s.topics {
			a.topicSub[topic] = s.id
		}
	}
	return a, nil
}

// Describe describes the topology as this App runs it: its sub-topologies,
// with the App's names for its repartition topics.
func (a *App) Describe() string { return a.topo.Describe() }

// AppID is the application id.
func (a *App) AppID() string { return a.cfg.appID }

// State returns the current state.
func (a *App) State() State { return State(a.state.Load()) }

func (a *App) setState(s State) {
	a.stateMu.Lock()
	defer a.stateMu.Unlock()
	a.setStateLocked(s)
}

func (a *App) setStateLocked(s State) {
	old := State(a.state.Swap(int32(s)))
	if old != s {
		a.cfg.logger.Info("state change", "app", a.cfg.appID, "from", old.String(), "to", s.String())
		if a.cfg.onStateChange != nil {
			a.cfg.onStateChange(old, s)
		}
	}
}

// closing moves a running App to Closing.
func (a *App) closing() {
	a.stateMu.Lock()
	defer a.stateMu.Unlock()
	if st := a.State(); st == Rebalancing || st == Running {
		a.setStateLocked(Closing)
	}
}

// unitPhase records whether unit idx is running, and moves the App between
// Rebalancing and Running to match all units: Running only when every one
// is. Once the App closes, phases no longer change its state.
func (a *App) unitPhase(idx int, running bool) {
	a.stateMu.Lock()
	defer a.stateMu.Unlock()
	if idx >= len(a.phases) {
		return
	}
	a.phases[idx] = running
	st := a.State()
	if st != Rebalancing && st != Running {
		return
	}
	all := true
	for _, r := range a.phases {
		all = all && r
	}
	if all {
		a.setStateLocked(Running)
	} else {
		a.setStateLocked(Rebalancing)
	}
}

// Run connects, processes until ctx ends or a unit fails, then closes
// cleanly: commits, flushes, closes stores and leaves the group. It returns
// nil after a clean stop.
func (a *App) Run(ctx context.Context) (err error) {
	a.stateMu.Lock()
	if a.State() != Created {
		a.stateMu.Unlock()
		return errors.New("run: an App runs once")
	}
	a.phases = make([]bool, a.cfg.parallelism)
	a.setStateLocked(Rebalancing)
	a.stateMu.Unlock()
	defer func() {
		if err != nil {
			a.setState(Failed)
		} else {
			a.setState(Stopped)
		}
	}()
	release, err := a.claimStateDir(false)
	if err != nil {
		return fmt.Errorf("run %s: %w", a.cfg.appID, err)
	}
	defer release()
	// Fresh metadata: changelogs this app just created must be visible at
	// once. franz-go spaces its metadata requests by this age, and the
	// first look at a new topic comes right after the app's first
	// metadata: at 100 ms it was most of the wait for new changelogs.
	// The admin client's requests are few (startup, end offsets), and the
	// retries it makes are mostly of a new topic whose partitions are not
	// served yet, a matter of milliseconds: its backoff starts at 10 ms,
	// not franz-go's 250.
	a.admClient, err = kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(a.cfg.brokers...), kgo.MetadataMinAge(10 * time.Millisecond),
		kgo.RetryBackoffFn(adminBackoff)}, a.cfg.clientOpts...)...)
	if err != nil {
		return fmt.Errorf("run %s: %w", a.cfg.appID, err)
	}
	defer a.admClient.Close()
	a.adm = kadm.NewClient(a.admClient)
	changelogs, err := retryStartup(ctx, a.cfg, "describe topics", a.prepareTopics)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped while starting: a clean stop
		}
		return fmt.Errorf("run %s: %w", a.cfg.appID, err)
	}
	a.topicsKnown.Store(true)
	var ends kadm.ListedOffsets
	if a.cfg.exitCaughtUp {
		if ends, err = a.adm.ListEndOffsets(ctx, a.topo.SourceTopics()...); err != nil {
			return fmt.Errorf("run %s: list end offsets: %w", a.cfg.appID, err)
		}
	}

	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// Creating changelog topics and waiting for their leaders takes as long
	// as joining the group, so both happen at once: it shortens the time to
	// the first output of an app with new stores.
	a.changelogsReady = make(chan struct{})
	go func() {
		defer close(a.changelogsReady)
		if err := a.prepareChangelogs(runCtx, changelogs); err != nil && runCtx.Err() == nil {
			a.changelogsErr = err
			cancel(err)
		}
	}()
	defer func() {
		cancel(nil)         // an early return stops the preparation
		<-a.changelogsReady // it uses the admin client, closed on return
		if err == nil && a.changelogsErr != nil {
			err = fmt.Errorf("run %s: %w", a.cfg.appID, a.changelogsErr)
		}
	}()
	// Global tables are filled before any unit exists, so that no task
	// processes a record before every table holds its topic to the end
	// seen at start (and the App cannot be Running before).
	var updater *globalUpdater
	if len(a.topo.globalOrder) > 0 {
		if updater, err = a.openGlobals(runCtx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("run %s: %w", a.cfg.appID, err)
		}
		if ctx.Err() != nil {
			updater.close()
			return nil
		}
		a.globals = map[string]*globalStore{}
		for _, s := range updater.stores {
			a.globals[s.def.name] = s
		}
		a.statsMu.Lock()
		a.globalStats = &updater.counter
		a.statsMu.Unlock()
		a.queryGlobals.Store(&a.globals)
	}
	units := make([]*unit, a.cfg.parallelism)
	for i := range units {
		if units[i], err = newUnit(a, i); err != nil {
			for _, u := range units[:i] {
				u.cl.Close()
			}
			return fmt.Errorf("run %s: %w", a.cfg.appID, err)
		}
	}
	// Stats reads the units from other goroutines: they are published
	// whole, under its lock.
	a.statsMu.Lock()
	a.units = units
	a.statsMu.Unlock()
	errs := make([]error, len(units))
	var wg sync.WaitGroup
	var globalErr error
	if updater != nil {
		// The stores are closed once the units are done with them.
		defer updater.close()
		wg.Go(func() {
			if globalErr = updater.run(runCtx); globalErr != nil {
				cancel(globalErr)
			}
		})
	}
	for i, u := range units {
		wg.Go(func() {
			for {
				err := u.run(runCtx)
				var restart *restartError
				if !errors.As(err, &restart) || runCtx.Err() != nil {
					errs[i] = err
					if err != nil && !errors.As(err, &restart) {
						cancel(err)
					}
					return
				}
				a.cfg.logger.Warn("restarting unit with a fresh client", "app", a.cfg.appID, "unit", i, "error", restart.err)
				select {
				case <-runCtx.Done():
					return
				case <-time.After(time.Second):
				}
				if u, err = newUnit(a, i); err != nil {
					errs[i] = err
					cancel(err)
					return
				}
				a.statsMu.Lock()
				a.units[i] = u
				a.statsMu.Unlock()
			}
		})
	}
	if a.cfg.exitCaughtUp {
		wg.Go(func() { a.watchCaughtUp(runCtx, cancel, ends) })
	}
	// Closing as soon as the run ends, before the units close their tasks,
	// so that nothing they do on the way out shows as a rebalance.
	wg.Go(func() {
		<-runCtx.Done()
		a.closing()
	})
	wg.Wait()
	return errors.Join(append(errs, globalErr)...)
}

// userTopics are the user's topics among candidates (not the app's own
// repartition topics) and the dead-letter topics of the error policies,
// sorted, each once.
func (a *App) userTopics(candidates []string) []string {
	var topics []string
	for _, topic := range candidates {
		if !a.topo.isRepartitionTopic(topic) {
			topics = append(topics, topic)
		}
	}
	for _, p := range []ErrorPolicy{a.cfg.onProcessError, a.cfg.onDeserializeError, a.cfg.onProduceError} {
		if p.action == actionDeadLetter {
			topics = append(topics, p.topic)
		}
	}
	slices.Sort(topics)
	return slices.Compact(topics)
}

// missingTopic is the error for a user's topic that does not exist: the
// app creates only its own topics, so it says who makes this one.
func (a *App) missingTopic(topic string) error {
	for _, p := range []struct {
		policy ErrorPolicy
		what   string
	}{{a.cfg.onDeserializeError, "deserialize"}, {a.cfg.onProcessError, "process"}, {a.cfg.onProduceError, "produce"}} {
		if p.policy.action == actionDeadLetter && p.policy.topic == topic && !slices.Contains(a.topo.SourceTopics(), topic) && !slices.Contains(a.topo.SinkTopics(), topic) {
			return fmt.Errorf("topic %q does not exist: it is the dead-letter topic of the %s-error policy, which the app does not create; create it first (kgen topics creates it when given the same -on-%s-error setting)", topic, p.what, p.what)
		}
	}
	return fmt.Errorf("topic %q does not exist: the app creates only its changelog and repartition topics; create the others first (kgen topics creates those of kgen.yaml)", topic)
}

// prepareTopics checks that source and sink topics exist and that the
// sources of each sub-topology are co-partitioned, and returns the changelog
// topics with their partition counts, for prepareChangelogs.
func (a *App) prepareTopics(ctx context.Context) (changelogs map[string]int32, err error) {
	// The user's topics must exist; the app's own (repartition topics,
	// changelogs) are created.
	if err := a.checkReplication(ctx); err != nil {
		return nil, err
	}
	topics := a.userTopics(append(a.topo.SourceTopics(), a.topo.SinkTopics()...))
	details, err := a.adm.ListTopics(ctx, topics...)
	if err != nil {
		return nil, &transientError{fmt.Errorf("describe topics: %w", err)}
	}
	a.partitions = map[string]int32{}
	var errs []error
	for _, topic := range topics {
		d, ok := details[topic]
		if !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
			errs = append(errs, a.missingTopic(topic))
			continue
		}
		if d.Err != nil {
			if kerr.IsRetriable(d.Err) {
				return nil, &transientError{fmt.Errorf("topic %q: %w", topic, d.Err)}
			}
			errs = append(errs, fmt.Errorf("topic %q: %w", topic, d.Err))
			continue
		}
		a.partitions[topic] = int32(len(d.Partitions))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if err := a.readMessageLimits(ctx); err != nil {
		return nil, err
	}
	if len(a.topo.repartitions) > 0 {
		repart := map[string]int32{}
		counts := maps.Clone(a.partitions)
		if err := a.topo.repartitionPartitions(counts); err != nil {
			return nil, err
		}
		for topic, n := range counts {
			if a.topo.isRepartitionTopic(topic) {
				repart[topic] = n
			}
		}
		// The units subscribe to these at once: they exist before.
		if err := a.ensureInternalTopics(ctx, "repartition", repart, repartitionNeeds); err != nil {
			return nil, err
		}
		maps.Copy(a.partitions, repart)
	}
	for _, s := range a.topo.subs {
		var counts []string
		n := a.partitions[s.topics[0]]
		same := true
		for _, topic := range s.topics {
			counts = append(counts, fmt.Sprintf("%s=%d", topic, a.partitions[topic]))
			same = same && a.partitions[topic] == n
		}
		if !same {
			errs = append(errs, fmt.Errorf("sub-topology %d reads co-partitioned topics with different partition counts: %s", s.id, strings.Join(counts, ", ")))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	// A changelog has its sub-topology's partition count; a.partitions
	// takes it now, before the units start reading the map.
	changelogs = map[string]int32{}
	for _, s := range a.topo.subs {
		for _, st := range s.stores {
			if st.opts.Changelog {
				changelogs[changelogTopic(a.cfg.appID, st.name)] = a.partitions[s.topics[0]]
			}
		}
	}
	maps.Copy(a.partitions, changelogs)
	return changelogs, nil
}

// readMessageLimits reads the max.message.bytes of the user's sink topics
// and of the dead-letter topics (the topic's own or the broker's default,
// as the broker applies it). The producer's batches for a topic stay under
// it (batchMaxBytes): batched up to the producer's own limit, records that
// each fit were refused together. And a dead letter that would be too large
// is truncated before the producer instead of refused by the broker.
func (a *App) readMessageLimits(ctx context.Context) error {
	a.maxMessageBytes = map[string]int{}
	topics := a.userTopics(a.topo.SinkTopics())
	if len(topics) == 0 {
		return nil
	}
	// An app may produce to topics whose configs it may not describe (no
	// DescribeConfigs ACL): the producer's own limit then applies to them.
	unread := func(topic string, err error) {
		a.cfg.logger.Warn("cannot read max.message.bytes: the producer's limit bounds this topic's batches and dead letters", "topic", topic, "error", err)
	}
	cfgs, err := a.adm.DescribeTopicConfigs(ctx, topics...)
	if err != nil {
		if !kerr.IsRetriable(err) && (errors.Is(err, kerr.TopicAuthorizationFailed) || errors.Is(err, kerr.ClusterAuthorizationFailed)) {
			unread(strings.Join(topics, ","), err)
			return nil
		}
		return &transientError{fmt.Errorf("describe topic configs: %w", err)}
	}
	for _, rc := range cfgs {
		if rc.Err != nil {
			if kerr.IsRetriable(rc.Err) {
				return &transientError{fmt.Errorf("topic %q: describe configs: %w", rc.Name, rc.Err)}
			}
			unread(rc.Name, rc.Err)
			continue
		}
		for _, c := range rc.Configs {
			if c.Key == "max.message.bytes" && c.Value != nil {
				if n, err := strconv.Atoi(*c.Value); err == nil && n > 0 {
					a.maxMessageBytes[rc.Name] = n
				}
			}
		}
	}
	return nil
}

// defaultBatchMaxBytes is franz-go's default ProducerBatchMaxBytes (and
// Kafka's producer default).
const defaultBatchMaxBytes = 1_000_012

// batchMaxBytes is the unit producer's batch limit for topic: the default,
// or the topic's max.message.bytes if smaller (franz-go takes no less than
// 512).
func (a *App) batchMaxBytes(topic string) int32 {
	limit := defaultBatchMaxBytes
	if m := a.maxMessageBytes[topic]; m > 0 && m < limit {
		limit = max(m, 512)
	}
	return int32(limit)
}

// prepareChangelogs checks the changelog topics that exist and creates the
// others, then waits for their partitions to have leaders, retrying what
// may pass by itself (a topic created meanwhile, checked on the next
// attempt). It must not touch a.partitions: the units read it meanwhile.
func (a *App) prepareChangelogs(ctx context.Context, want map[string]int32) error {
	_, err := retryStartup(ctx, a.cfg, "changelog topics", func(ctx context.Context) (struct{}, error) {
		return struct{}{}, a.ensureInternalTopics(ctx, "changelog", want, a.changelogNeeds())
	})
	return err
}

// endOffsets lists the end offsets (or, if committed, the last stable
// offsets) of topics whose partition counts are in a.partitions, retrying until every partition answers (new topics take a
// moment to get leaders) or 30 s pass.
func (a *App) endOffsets(ctx context.Context, committed bool, topics ...string) (kadm.ListedOffsets, error) {
	return a.endOffsetsIn(ctx, committed, a.partitions, topics)
}

// endOffsetsOf is endOffsets of the topics of counts, with their counts.
func (a *App) endOffsetsOf(ctx context.Context, counts map[string]int32) (kadm.ListedOffsets, error) {
	return a.endOffsetsIn(ctx, false, counts, slices.Collect(maps.Keys(counts)))
}

func (a *App) endOffsetsIn(ctx context.Context, committed bool, counts map[string]int32, topics []string) (kadm.ListedOffsets, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	list := a.adm.ListEndOffsets
	if committed {
		list = a.adm.ListCommittedOffsets // the last stable offset
	}
	for {
		ends, err := list(ctx, topics...)
		missing := ""
		if err == nil {
		check:
			for _, topic := range topics {
				for p := range counts[topic] {
					if o, ok := ends.Lookup(topic, p); !ok || o.Err != nil {
						missing = fmt.Sprintf("%s/%d", topic, p)
						if ok {
							missing += ": " + o.Err.Error()
						}
						break check
					}
				}
			}
			if missing == "" {
				return ends, nil
			}
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = fmt.Errorf("no end offset for %s", missing)
			}
			return nil, fmt.Errorf("list end offsets: %w", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// awaitChangelogs waits until the changelog topics are ready, and returns
// the error that kept them from being so.
func (a *App) awaitChangelogs(ctx context.Context) error {
	if a.changelogsReady == nil {
		return nil // not started by Run (the LocalDriver)
	}
	select {
	case <-a.changelogsReady:
		return a.changelogsErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// changelogEnds returns where restoring topics' changelogs ends. Under
// exactly-once that is the last stable offset, but a transaction the
// previous owner has just committed keeps it back until its markers land,
// a moment after the commit returned; restoring to there would lose that
// transaction's writes while its input offsets count as done. So while
// a stable offset is behind the high watermark, list again until
// deadline: a transaction still open after that belongs to a crashed owner
// and will be aborted, and its writes must not be restored anyway.
func (a *App) changelogEnds(ctx context.Context, deadline time.Time, topics ...string) (kadm.ListedOffsets, error) {
	if a.cfg.guarantee != ExactlyOnce {
		return a.endOffsets(ctx, false, topics...)
	}
	for {
		stable, err := a.endOffsets(ctx, true, topics...)
		if err != nil {
			return nil, err
		}
		highs, err := a.endOffsets(ctx, false, topics...)
		if err != nil {
			return nil, err
		}
		behind := false
		stable.Each(func(o kadm.ListedOffset) {
			if h, ok := highs.Lookup(o.Topic, o.Partition); ok && h.Offset > o.Offset {
				behind = true
			}
		})
		if !behind || time.Now().After(deadline) {
			return stable, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// adminBackoff is the admin client's wait before its try-th retry: 10 ms,
// doubling up to a second.
func adminBackoff(tries int) time.Duration {
	return min(10*time.Millisecond<<min(tries, 7), time.Second)
}

// markerWait bounds how long the restores of one assignment wait for
// transaction markers; they normally land within milliseconds of the commit.
const markerWait = 2 * time.Second

// watchCaughtUp ends the run once the group's committed offsets reach the
// end offsets the input topics had at start, and then the current end of
// every repartition topic. A repartition topic's end at start says nothing
// (a new one is empty), and its records are written by this very run: they
// are all in the log once the inputs that made them are committed (a commit
// flushes the producer first), so its end is read after that and after the
// committed offsets, then must be reached too.
func (a *App) watchCaughtUp(ctx context.Context, cancel context.CancelCauseFunc, ends kadm.ListedOffsets) {
	var repartition []string
	for _, topic := range a.topo.SourceTopics() {
		if a.topo.isRepartitionTopic(topic) {
			repartition = append(repartition, topic)
		}
	}
	inputEnds := kadm.ListedOffsets{}
	for topic, ps := range ends {
		if !a.topo.isRepartitionTopic(topic) {
			inputEnds[topic] = ps
		}
	}
	// Under exactly-once a transaction marker follows the last record, and
	// the committed offset stops just before it.
	var markerSlack int64
	if a.cfg.guarantee == ExactlyOnce {
		markerSlack = 1
	}
	reached := func(committed kadm.OffsetResponses, ends kadm.ListedOffsets, slack int64) bool {
		done := true
		ends.Each(func(o kadm.ListedOffset) {
			if o.Err != nil || o.Offset <= 0 {
				return
			}
			c, ok := committed.Lookup(o.Topic, o.Partition)
			if !ok || c.Err != nil || c.At < o.Offset-slack {
				done = false
			}
		})
		return done
	}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if a.State() != Running {
			continue // restoring or rebalancing: not done, whatever was committed before
		}
		committed, err := a.adm.FetchOffsets(ctx, a.cfg.appID)
		if err != nil || !reached(committed, inputEnds, 0) {
			continue
		}
		if len(repartition) > 0 {
			now, err := a.adm.ListEndOffsets(ctx, repartition...)
			if err != nil || now.Error() != nil || !reached(committed, now, markerSlack) {
				continue
			}
		}
		a.cfg.logger.Info("caught up with the end offsets seen at start; stopping", "app", a.cfg.appID)
		cancel(nil)
		return
	}
}

// Stats is a snapshot of an App's counters.
type Stats struct {
	Processed     uint64 // records taken off input buffers and processed
	Skipped       uint64 // records that failed and were skipped by LogAndContinue
	DeadLettered  uint64 // records sent to a dead-letter topic
	Punctuations  uint64
	Commits       uint64        // commits that succeeded
	Aborts        uint64        // exactly-once transactions that were aborted
	CommitTime    time.Duration // total time spent committing
	ProcessTime   time.Duration // total time tasks spent processing records
	Restored      uint64        // changelog records applied while restoring
	RestoreStalls uint64        // active restores that stood still 15 s and read their changelog again (each logged)
	EnforcedSteps uint64        // records processed past an empty input waited out (MaxTaskIdle, FetchGrace)
	// InputPauses counts the times an input partition of a task of
	// several inputs was paused because it held more than a megabyte of
	// records waiting for the others, and PackedPeak is the most bytes one
	// such input held (flow.go).
	InputPauses uint64
	PackedPeak  int64
	Tasks       map[TaskID]TaskStats
	// Standbys are the standby tasks this instance keeps warm, and
	// StandbyRestored the changelog records they applied.
	Standbys        []TaskID
	StandbyRestored uint64
	// StandbyLag is how many changelog records the standbys have yet to
	// apply, as of their last fetch.
	StandbyLag int64
	// Generation is the newest consumer group generation the units have
	// joined: it grows by one with every rebalance of the group.
	Generation int32
	// TasksCreated and TasksClosed count active tasks since the start.
	TasksCreated, TasksClosed uint64
	// RestoreRemaining is how many changelog records the restoring active
	// tasks have yet to apply.
	RestoreRemaining int64
	// Latencies: of processing a record (through every processor it
	// reaches; one record in 64 is timed), of commits, of punctuations, and
	// end to end (a record's timestamp to its output, at the sink; one in
	// 64).
	ProcessLatency, CommitLatency, PunctuationLatency, EndToEndLatency Histogram
	// Dropped counts the records dropped by reason (a null key where one is
	// needed, and so on: see DropReason); only reasons that happened are
	// present. A dropped record is also counted in Processed.
	Dropped map[DropReason]uint64
	// GlobalApplied counts the records of global topics applied to the
	// global tables (their skipped, dead-lettered and null-key records are
	// in Skipped, DeadLettered and Dropped).
	GlobalApplied uint64
}

// TaskStats is one task's share of Stats.
type TaskStats struct {
	Processed      uint64
	Lag            int64             // records known to exist past what was processed
	ProcessorCount map[string]uint64 // records each processor handled
	Restoring      bool
	// RestoreRemaining is how many changelog records the task has yet to
	// restore.
	RestoreRemaining int64
	// Dropped counts the task's dropped records by reason, as Stats.Dropped.
	Dropped map[DropReason]uint64
}

// Stats returns the current counters. Per-task figures are as of each
// unit's last loop iteration.
func (a *App) Stats() Stats {
	s := Stats{Tasks: map[TaskID]TaskStats{}}
	a.statsMu.Lock()
	units := slices.Clone(a.units)
	a.statsMu.Unlock()
	for _, u := range units {
		if u == nil {
			continue
		}
		us := u.st.snapshot()
		for id, ts := range us.Tasks {
			s.Tasks[id] = ts
		}
		s.Processed += us.Processed
		s.Skipped += us.Skipped
		s.DeadLettered += us.DeadLettered
		addDropped(&s.Dropped, us.Dropped)
		s.Punctuations += us.Punctuations
		s.Commits += us.Commits
		s.Aborts += us.Aborts
		s.CommitTime += us.CommitTime
		s.ProcessTime += us.ProcessTime
		s.Restored += us.Restored
		s.RestoreStalls += us.RestoreStalls
		s.EnforcedSteps += us.EnforcedSteps
		s.InputPauses += us.InputPauses
		s.PackedPeak = max(s.PackedPeak, us.PackedPeak)
		s.Standbys = append(s.Standbys, us.Standbys...)
		s.StandbyRestored += us.StandbyRestored
		s.StandbyLag += us.StandbyLag
		s.TasksCreated += us.TasksCreated
		s.TasksClosed += us.TasksClosed
		s.RestoreRemaining += us.RestoreRemaining
		s.ProcessLatency.merge(us.ProcessLatency)
		s.CommitLatency.merge(us.CommitLatency)
		s.PunctuationLatency.merge(us.PunctuationLatency)
		s.EndToEndLatency.merge(us.EndToEndLatency)
		_, gen := u.cl.GroupMetadata()
		s.Generation = max(s.Generation, gen)
	}
	a.statsMu.Lock()
	gs := a.globalStats
	a.statsMu.Unlock()
	if gs != nil {
		s.Skipped += gs.skipped.Load()
		s.DeadLettered += gs.deadLettered.Load()
		s.GlobalApplied = gs.applied.Load()
		if n := gs.nullKeys.Load(); n > 0 {
			addDropped(&s.Dropped, map[DropReason]uint64{DropNullKey: n})
		}
	}
	return s
}

// InstanceID is this instance's id among the app's instances (InstanceID,
// or the one kept in the state directory, known once Run has started).
func (a *App) InstanceID() string {
	a.stateMu.Lock()
	defer a.stateMu.Unlock()
	return a.cfg.instanceID
}
