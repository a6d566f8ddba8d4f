package stream

import (
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// task runs one sub-topology over one partition number. All its fields are
// owned by the goroutine of the unit that holds the task.
type task struct {
	id   TaskID
	topo *Topology
	sub  *subtopology
	env  taskEnv

	inputs []input // one per source topic, sorted by topic
	procs  []lifecycle
	sm     *stateManager // the task's stores

	schedules []*schedule

	streamTime int64       // largest partition time of its inputs, -1 before any
	current    *kgo.Record // the input record being processed; nil in a punctuation
	// currentTime is the input record's time, or the punctuation's while
	// one runs; a processor's own record context is in its nodeContext.
	currentTime int64
	err         error // first failure while processing the current record
	errNode     string
	running     *nodeContext // the processor being called (store writes take its time; panics its name); nil: none

	// Observed times of its operators (streamtime.go), by node and name;
	// claimedTimes are the ones its processors asked for, which its
	// commits write.
	observed      map[opKey]*ObservedTime
	claimedTimes  []*ObservedTime
	claimedSorted bool
	// timesDirty: an observed time moved since the last commit.
	timesDirty bool
	// timesPending: the committed times are not known yet (a unit's task
	// waits for the group's offsets); Init waits for them (initDeferred).
	timesPending, initDeferred bool
	timesTruncated             bool // warned that the observed times did not fit

	commitRequested bool
	standby         bool // a standby: stores only, following their changelogs
	restoring       bool
	restore         restoreProgress

	// Latencies measured on one record in latencySample, and of every
	// punctuation.
	processLat, punctuateLat, endToEndLat histogram

	processed     uint64
	dropped       map[DropReason]uint64 // by reason; nil until the first drop
	skipped       uint64
	deadLettered  uint64
	punctuations  uint64
	enforcedSteps uint64
}

// taskEnv is what a task needs from the unit (or LocalDriver) that runs it.
type taskEnv interface {
	// send produces a sink's output.
	send(t *task, o *outRecord)
	// deadLetter produces the dead letter of a failed input record.
	deadLetter(topic string, in *kgo.Record, node string, cause error)
	// logChange produces one changelog record of s with the timestamp
	// (milliseconds; state.NoTimestamp: the producer's clock).
	logChange(s *taskStore, key, value []byte, timestamp int64)
	partitions(topic string) int32
	config() *config
	// global returns the global table named name, or nil.
	global(name string) *globalStore
}

type schedule struct {
	ctx       *nodeContext // of the node that scheduled it
	interval  int64
	typ       PunctuationType
	fn        func(time.Time) error
	next      int64 // -1: set from the first stream time seen
	cancelled bool
}

func (t *task) schedule(ctx *nodeContext, interval time.Duration, typ PunctuationType, fn func(time.Time) error) *schedule {
	ms := interval.Milliseconds()
	if ms < 1 {
		ms = 1
	}
	s := &schedule{ctx: ctx, interval: ms, typ: typ, fn: fn, next: -1}
	switch {
	case typ == WallClock:
		s.next = t.env.config().clock().UnixMilli() + ms
	case t.streamTime >= 0:
		s.next = t.streamTime + ms
	}
	t.schedules = append(t.schedules, s)
	return s
}

// fail records the first error of the current record.
func (t *task) fail(node string, err error) {
	if t.err == nil {
		t.err, t.errNode = err, node
	}
}

// outputFailed applies the production error policy to an output refused
// before it reached the producer, with its input record still in hand.
func (t *task) outputFailed(o *outRecord, err error) {
	perr := produceError(&o.rec, &o.src, err)
	cfg := t.env.config()
	policy := cfg.onProduceError
	if policy.action == actionDeadLetter && o.src.in == nil {
		policy = Fail()
		perr.Err = errNoInputToDeadLetter(err)
	}
	switch policy.action {
	case actionContinue:
		cfg.logger.Warn("dropping output that could not be produced", "task", t.id.String(), "node", o.src.node, "error", perr)
		t.skipped++
	case actionDeadLetter:
		cfg.logger.Warn("dead-lettering the input of an output that could not be produced", "task", t.id.String(), "node", o.src.node, "error", perr, "dead_letter_topic", policy.topic)
		t.deadLettered++
		t.env.deadLetter(policy.topic, o.src.in, o.src.node, perr)
	default:
		t.fail(o.src.node, perr)
	}
}

// RecordError is a record that could not be processed, with its coordinates.
type RecordError struct {
	Topic     string
	Partition int32
	Offset    int64
	// Node is the topology node that failed: the source for a record that
	// did not deserialize.
	Node string
	// Deserialize is true when the key or value could not be decoded.
	Deserialize bool
	Err         error
}

// deserializeFailHint follows a deserialization error that stopped the app:
// a bad record on an input is rarely the app's fault, so the message names
// the setting that lets the app go on, and its choices.
const deserializeFailHint = "; the deserialize-error policy is fail: set -on-deserialize-error " +
	"(KGEN_ON_DESERIALIZE_ERROR; stream.OnDeserializeError by hand) to continue to log and skip such records, " +
	"or to dead-letter=TOPIC to send them to TOPIC"

func (e *RecordError) Error() string {
	if e.Deserialize {
		// Only the fail policy returns a RecordError.
		return fmt.Sprintf("deserialize record %s/%d@%d at node %q: %v%s", e.Topic, e.Partition, e.Offset, e.Node, e.Err, deserializeFailHint)
	}
	return fmt.Sprintf("process record %s/%d@%d at node %q: %v", e.Topic, e.Partition, e.Offset, e.Node, e.Err)
}

func (e *RecordError) Unwrap() error { return e.Err }

// panicError is a panic in user code, turned into an error.
type panicError struct {
	value any
	stack []byte
}

func (p *panicError) Error() string { return fmt.Sprintf("panic: %v", p.value) }

// next picks the input whose head is processed next: the buffered head with
// the smallest timestamp. It returns nil when the task has nothing to do or
// must wait for an empty input that may still deliver an earlier record.
func (t *task) next(now time.Time) (input, error) {
	var best input
	var bestTS int64
	holdBack, enforced := false, false
	cfg := t.env.config()
	for _, in := range t.inputs {
		ts, ok, err := in.peek()
		if err != nil {
			if herr := t.handle(in, in.head(), in.topic(), true, err); herr != nil {
				return nil, herr
			}
			in.pop()
			return t.next(now)
		}
		if !ok {
			hold, waitedOut := t.holdsBack(in, now, cfg)
			holdBack = holdBack || hold
			enforced = enforced || waitedOut
			continue
		}
		in.state().idleSince = time.Time{} // it has data: any wait for it is over
		if best == nil || ts < bestTS {
			best, bestTS = in, ts
		}
	}
	if best == nil {
		// Nothing to do at all: the next record starts a fresh wait.
		for _, in := range t.inputs {
			in.state().idleSince = time.Time{}
		}
		return nil, nil
	}
	if holdBack {
		return nil, nil
	}
	if enforced {
		t.enforcedSteps++
	}
	return best, nil
}

// buffered says whether any input has a record waiting.
func (t *task) buffered() bool {
	for _, in := range t.inputs {
		if in.buffered() > 0 {
			return true
		}
	}
	return false
}

// holdsBack says whether an empty input keeps the task from processing the
// others, so that records stay in timestamp order across inputs. As Kafka
// Streams' partition group (KIP-695): an input known to hold records not
// fetched yet is waited for with no deadline, since processing the others
// ahead would reorder records that exist already; an input fetched to its
// end waits MaxTaskIdle for new records. An input whose end no fetch has
// reported yet waits at most max(MaxTaskIdle, FetchGrace): franz-go hands
// over no fetch answer without records, so an input that is empty from the
// start may never report its end. Negative MaxTaskIdle never waits.
// waitedOut says the input was waited for in vain: a record taken now is
// an enforced step, possibly out of order. With the default MaxTaskIdle 0
// an input at its end holds nothing back and is not counted.
func (t *task) holdsBack(in input, now time.Time, cfg *config) (hold, waitedOut bool) {
	if len(t.inputs) == 1 || cfg.maxTaskIdle < 0 {
		return false, false
	}
	st := in.state()
	if st.end >= 0 && st.fetchedTo < st.end {
		// The idle wait starts only once the input is at its end.
		st.idleSince = time.Time{}
		return true, false
	}
	// The wait runs from when the input was first found empty while the
	// others had data, until it has data again, as Kafka Streams' idle
	// deadlines: once waited out, the task goes on processing the others
	// without waiting again before each record.
	if st.idleSince.IsZero() {
		st.idleSince = now
	}
	wait := cfg.maxTaskIdle
	if st.end < 0 {
		wait = max(wait, cfg.fetchGrace)
	}
	if now.Sub(st.idleSince) < wait {
		return true, false
	}
	return false, wait > 0
}

// process runs up to max records, in timestamp order, with stream-time
// punctuation after each. It returns how many it took off the buffers.
func (t *task) process(max int, now time.Time) (int, error) {
	n := 0
	for n < max {
		in, err := t.next(now)
		if err != nil {
			return n, err
		}
		if in == nil {
			break
		}
		var began time.Time
		sample := t.processed%latencySample == 0
		if sample {
			began = time.Now()
		}
		if err := t.processHead(in); err != nil {
			return n, err
		}
		if sample {
			t.processLat.observe(time.Since(began))
		}
		n++
		if err := t.punctuate(StreamTime, t.streamTime); err != nil {
			return n, err
		}
		if t.commitRequested {
			break
		}
	}
	return n, nil
}

func (t *task) processHead(in input) error {
	raw := in.head()
	ts, _, _ := in.peek()
	if st := in.state(); ts > st.time {
		st.time = ts
		t.streamTime = max(t.streamTime, ts)
	}
	t.current, t.currentTime = raw, ts
	t.err, t.errNode, t.running = nil, "", nil
	t.guard(in.forwardHead)
	in.pop()
	t.current = nil
	t.processed++
	if t.err == nil {
		return nil
	}
	err := t.err
	t.err = nil
	return t.handle(in, raw, t.errNode, false, err)
}

// guard runs user code, turning a panic into the task's error.
func (t *task) guard(fn func()) {
	defer func() {
		if v := recover(); v != nil {
			node := ""
			if t.running != nil {
				node = t.running.name
			}
			t.fail(node, &panicError{value: v, stack: debug.Stack()})
		}
	}()
	fn()
}

// handle applies the configured error policy to a failed record.
func (t *task) handle(in input, raw *kgo.Record, node string, deser bool, err error) error {
	if deser {
		node = t.sub.sources[in.topic()].name
	}
	rerr := &RecordError{Topic: raw.Topic, Partition: raw.Partition, Offset: raw.Offset, Node: node, Deserialize: deser, Err: err}
	cfg := t.env.config()
	policy := cfg.onProcessError
	var perr *ProduceError
	switch {
	case deser:
		policy = cfg.onDeserializeError
	case errors.As(err, &perr):
		policy = Fail() // the production policy said so already
	}
	log := cfg.logger.With("task", t.id.String(), "topic", raw.Topic, "partition", raw.Partition, "offset", raw.Offset, "node", node)
	var pe *panicError
	if errors.As(err, &pe) {
		log.Error("panic in processor", "panic", fmt.Sprint(pe.value), "stack", string(pe.stack))
	}
	switch policy.action {
	case actionContinue:
		log.Warn("skipping record", "error", err)
		t.skipped++
		if deser {
			// A record that never reached Process still counts as taken.
			in.state().next = raw.Offset + 1
		}
		return nil
	case actionDeadLetter:
		log.Warn("dead-lettering record", "error", err, "dead_letter_topic", policy.topic)
		t.deadLettered++
		t.env.deadLetter(policy.topic, raw, node, err)
		return nil
	default:
		// The failed record is not done: a restart must begin with it.
		in.state().next = raw.Offset
		return rerr
	}
}

// punctuate fires the due schedules of one clock type.
func (t *task) punctuate(typ PunctuationType, now int64) error {
	if now < 0 {
		return nil
	}
	live := t.schedules[:0]
	var firstErr error
	for _, s := range t.schedules {
		if s.cancelled {
			continue
		}
		live = append(live, s)
		if s.typ != typ || firstErr != nil {
			continue
		}
		if s.next < 0 {
			s.next = now + s.interval
			continue
		}
		if now < s.next {
			continue
		}
		// Fire once, then move past now even if several intervals passed.
		s.next += ((now-s.next)/s.interval + 1) * s.interval
		t.current, t.currentTime = nil, now
		// The punctuation runs as its node, with its time and no headers.
		s.ctx.time, s.ctx.headers = now, nil
		t.err, t.errNode, t.running = nil, "", s.ctx
		at := fromMillis(now)
		began := time.Now()
		t.guard(func() {
			if err := s.fn(at); err != nil {
				t.fail(s.ctx.name, err)
			}
		})
		t.punctuateLat.observe(time.Since(began))
		t.punctuations++
		if t.err != nil {
			firstErr = fmt.Errorf("task %s: %s punctuation of %q at %s: %w", t.id, typ, s.ctx.name, at.UTC().Format(time.RFC3339Nano), t.err)
			t.err = nil
		}
	}
	clear(t.schedules[len(live):])
	t.schedules = live
	return firstErr
}

// initProcessors runs the processors' Init, parents first, once the task's
// stores are restored.
func (t *task) initProcessors() error {
	if t.timesPending {
		// Init sees the restored stream times: it runs once they are read.
		t.initDeferred = true
		return nil
	}
	for _, p := range t.procs {
		if err := t.callUser(p.context(), p.init); err != nil {
			return fmt.Errorf("task %s: init processor %q: %w", t.id, p.nodeName(), err)
		}
	}
	return nil
}

// callUser runs a processor's lifecycle method, turning a panic into an error.
func (t *task) callUser(node *nodeContext, fn func() error) error {
	var err error
	t.running = node
	t.guard(func() { err = fn() })
	if err == nil {
		err = t.err
	}
	t.err = nil
	return err
}

// recordTime is the time of the record context in force: the running
// processor's record, else the input record's or the punctuation's.
func (t *task) recordTime() int64 {
	if c := t.running; c != nil {
		return c.time
	}
	return t.currentTime
}
