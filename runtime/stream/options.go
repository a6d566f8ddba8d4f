package stream

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Option configures an App.
type Option func(*config)

type config struct {
	brokers        []string
	appID          string
	instanceID     string
	stateDir       string
	parallelism    int
	commitInterval time.Duration
	maxTaskIdle    time.Duration
	fetchGrace     time.Duration
	bufferRecords  int
	cacheRecords   int
	standbys       int
	replication    int // replication factor of internal topics; -1: the broker's default
	static         bool
	memoryStores   bool // every store in memory, whatever it asks for (LocalDriver)
	logger         *slog.Logger
	clientOpts     []kgo.Opt
	guarantee      GuaranteeKind
	exitCaughtUp   bool
	startupTimeout time.Duration
	purgeInterval  time.Duration
	onStateChange  func(from, to State)
	now            func() time.Time
	// advertisedAddress is where this instance answers queries, told to
	// the group (querymeta.go).
	advertisedAddress string

	onProcessError     ErrorPolicy
	onDeserializeError ErrorPolicy
	onProduceError     ErrorPolicy

	// changelogMargin is how much longer than its store a changelog with
	// a retention keeps records.
	changelogMargin time.Duration

	// errs are the options' complaints about their values, which New
	// returns: a bad value is an error, not silently clamped.
	errs []error
}

func (c *config) invalid(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf(format, args...))
}

func (c *config) clock() time.Time { return c.now() }

func defaultConfig() config {
	return config{
		stateDir:      filepath.Join(os.TempDir(), "kgen-state"),
		parallelism:   1,
		fetchGrace:    500 * time.Millisecond,
		replication:   -1,
		bufferRecords: 1000,
		// Long enough to wait out a broker's restart or a rolling one.
		startupTimeout: 5 * time.Minute,
		purgeInterval:  30 * time.Second, // Kafka Streams' repartition.purge.interval.ms
		cacheRecords:   10_000,
		logger:         slog.Default(),
		now:            time.Now,

		changelogMargin: state.DefaultChangelogRetentionMargin,
	}
}

// Brokers sets the seed brokers. Required.
func Brokers(addrs ...string) Option { return func(c *config) { c.brokers = addrs } }

// AppID sets the application id: the consumer group, and the prefix of the
// changelog topics and state directories. Required.
func AppID(id string) Option { return func(c *config) { c.appID = id } }

// InstanceID names this instance among the app's instances; it appears in
// client ids and, under exactly-once, in transactional ids, which must be
// stable across restarts. Default: an id created once and kept in the state
// directory, so a restart with the same state directory keeps it.
func InstanceID(id string) Option { return func(c *config) { c.instanceID = id } }

// AdvertisedAddress is the host:port at which this instance answers queries
// of its stores (the generated main's ops server), told to every instance
// of the app through the group, so that any of them can say where a key's
// store lives (App.KeyOwner). Default: none; the instance's tasks are then
// listed without an address. It is not checked: it is for the callers.
func AdvertisedAddress(addr string) Option { return func(c *config) { c.advertisedAddress = addr } }

// StaticMembership makes each unit a static member of the consumer group
// (KIP-345), named by the instance id and the unit's index. A restart within
// the session timeout (10 s unless ClientOpts sets kgo.SessionTimeout) takes
// the instance's tasks back with no rebalance: the other instances keep
// processing. The price: a stopped instance does not leave the group, so its
// tasks wait out the session timeout before they move. Restart with the same
// InstanceID (or state directory) and Parallelism.
func StaticMembership() Option { return func(c *config) { c.static = true } }

// StateDir is where persistent stores live, under StateDir/AppID/TaskID.
// Default: kgen-state in the system's temporary directory.
// An empty dir keeps the default.
func StateDir(dir string) Option {
	return func(c *config) {
		if dir != "" {
			c.stateDir = dir
		}
	}
}

// Parallelism is the number of processing units (each a goroutine with its
// own group member, running a share of the tasks). Default 1, as Kafka
// Streams' num.stream.threads (and a generated main's -parallelism): more
// units share one process's tasks; more instances scale further.
func Parallelism(n int) Option {
	return func(c *config) {
		if n < 1 {
			c.invalid("Parallelism(%d): must be at least 1", n)
		}
		c.parallelism = n
	}
}

// CommitInterval is how often progress is committed. Default (or 0): 30 s
// under at-least-once, 100 ms under exactly-once.
func CommitInterval(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			c.invalid("CommitInterval(%s): must not be negative", d)
		}
		c.commitInterval = d
	}
}

// MaxTaskIdle is how long a task with several inputs waits for an empty
// input fetched to its end before processing the others, possibly out of
// timestamp order (Kafka Streams' max.task.idle.ms). An empty input known
// to hold records not fetched yet is waited for however long that takes,
// unless MaxTaskIdle is negative; one whose end is not known yet, up to
// FetchGrace. Default 0: wait only for those. Negative: never wait.
func MaxTaskIdle(d time.Duration) Option { return func(c *config) { c.maxTaskIdle = d } }

// FetchGrace bounds how long a task waits for an empty input whose end no
// fetch has reported yet (unless MaxTaskIdle is longer). The client hands
// over no fetch answer without records, so an input empty since the task
// started may never report its end; waiting for it with no deadline would
// stop the task. Default 500 ms, Kafka's fetch max wait.
func FetchGrace(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			c.invalid("FetchGrace(%s): must not be negative", d)
		}
		c.fetchGrace = d
	}
}

// BufferRecords bounds the records a unit buffers per input partition: it
// takes from the client only what fits, and franz-go fetches no more until
// it has handed over what it holds. Default 1000.
func BufferRecords(n int) Option {
	return func(c *config) {
		if n < 1 {
			c.invalid("BufferRecords(%d): must be at least 1", n)
		}
		c.bufferRecords = n
	}
}

// CacheRecords sets how many entries each store task keeps in its write-back
// cache: reads of cached keys and repeated writes of a key stay in memory,
// and only each key's last value reaches the store and the changelog, at the
// next commit; a full cache asks for a commit early. With the cache on, a
// record that fails leaves no trace in the stores. 0 turns caching off under
// at-least-once: every write reaches its store and changelog at once, as in
// Kafka Streams without a record cache (exactly-once then keeps 1,000, since
// it holds every write until its transaction commits). Default 10,000.
func CacheRecords(n int) Option {
	return func(c *config) {
		if n < 0 {
			c.invalid("CacheRecords(%d): must not be negative", n)
		}
		c.cacheRecords = n
	}
}

// StandbyReplicas keeps n warm copies of every task's stores on other
// instances, following the changelogs, so a task that moves is ready after
// replaying only the tail. Only tasks with a changelogged store get them:
// a stateless task's standby would have nothing to follow. Assignment
// prefers the instance holding a task's state. Default 0.
func StandbyReplicas(n int) Option {
	return func(c *config) {
		if n < 0 {
			c.invalid("StandbyReplicas(%d): must not be negative", n)
		}
		c.standbys = n
	}
}

// ReplicationFactor is the replication factor of the topics the app
// creates itself: changelogs and repartition topics (Kafka Streams'
// replication.factor). Default -1: the broker's default.replication.factor,
// as Kafka Streams since 3.0. Run refuses, before creating any topic, a
// factor above the number of brokers in the cluster (a
// *ReplicationFactorError); existing topics keep the factor they have.
func ReplicationFactor(n int) Option {
	return func(c *config) {
		if n == 0 || n < -1 || n > 32767 {
			c.invalid("ReplicationFactor(%d): want -1 (the broker's default) or 1 to 32767", n)
		}
		c.replication = n
	}
}

// ReplicationFactorError is Run's refusal of a ReplicationFactor larger
// than the cluster's broker count: the internal topics could not be
// created.
type ReplicationFactorError struct {
	Factor  int // the configured factor
	Brokers int // brokers in the cluster
}

func (e *ReplicationFactorError) Error() string {
	return fmt.Sprintf("replication factor %d (ReplicationFactor, Kafka Streams' replication.factor) is more than the cluster's %d broker(s): the app's changelog and repartition topics cannot be created; lower it, or -1 for the broker's default", e.Factor, e.Brokers)
}

// ChangelogRetentionMargin is how much longer than its store the changelog
// of a store with a retention period (window and session stores) keeps
// records: its retention.ms is the store's retention plus d, as Kafka
// Streams' windowstore.changelog.additional.retention.ms. Default 24 hours.
// Changelogs of key-value stores are compacted and keep every key.
func ChangelogRetentionMargin(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			c.invalid("ChangelogRetentionMargin(%s): must not be negative", d)
		}
		c.changelogMargin = d
	}
}

// Logger sets the structured logger. Default: slog.Default().
func Logger(l *slog.Logger) Option {
	return func(c *config) {
		if l == nil {
			c.invalid("Logger(nil): give a logger, or leave the option out for slog.Default()")
			return
		}
		c.logger = l
	}
}

// ClientOpts passes extra options (TLS, SASL, tuning) to every franz-go
// client the app creates. They apply after kgen's own, which differ from
// franz-go's defaults in these ways: a 500 ms fetch max wait (Kafka's
// default), and a 10 s session timeout with a 1 s heartbeat, so a crashed
// instance's tasks move within seconds; and, to bound a unit's memory
// (runtime/DESIGN.md, "Memory"), its producer holds at most 10,000 records
// until acknowledged (kgo.MaxBufferedRecords; franz-go's default is 50,000)
// and one fetch response is at most 3 MiB (kgo.FetchMaxBytes; Kafka's and
// franz-go's default is 50 MiB, and kgo.FetchMaxPartitionBytes above it is
// lowered to it); where a task reads several topics (a join), 1.5 MiB, and
// 512 KiB of one partition (kgo.FetchMaxPartitionBytes). Raise the first
// where acknowledgements are slow: a unit cannot produce faster than about
// that many records per acknowledgement.
func ClientOpts(opts ...kgo.Opt) Option {
	return func(c *config) { c.clientOpts = append(c.clientOpts, opts...) }
}

// A unit's memory is mostly records on their way through (runtime/DESIGN.md,
// "Memory"): these bound it, ahead of ClientOpts, which may change them.
const (
	// produceBufferRecords bounds the outputs and changelog records a unit's
	// producer holds until the broker acknowledges them. Each one keeps its
	// input's fetch buffer alive, and its own record costs several times
	// its bytes: at franz-go's 50,000, the producer held most of a
	// passthrough's heap. At 5,000 it could not keep up with passthrough
	// on a local broker (0.69x the raw loop's throughput in make bench).
	produceBufferRecords = 10_000
	// fetchMaxBytes bounds one fetch response of a unit, whatever the
	// number of partitions it reads, so a unit reading many (a repartition
	// topic beside its source) holds no more than one reading three. At
	// 2 MiB source-only slowed.
	fetchMaxBytes = 3 << 20
	// A unit of a topology where a task reads several topics (a join)
	// fetches half as much, and at most 512 KiB of a partition, not
	// Kafka's 1 MiB: its tasks hold back one input's records until the
	// others' times catch up, so what is fetched waits longer, and a
	// fetched record costs several times its bytes until it is polled
	// (franz-go's decoded kgo.Record, some 170 bytes). The stream-stream
	// join's peak RSS fell from about 156 to 137 MiB for the same CPU per
	// record; the stream-table join's from about 124 to 106 MiB, for a few
	// per cent more CPU (runtime/DESIGN.md, "Memory").
	joinFetchMaxBytes          = 3 << 19
	joinFetchMaxPartitionBytes = 512 << 10
)

// unitMemoryOpts are the client options of a unit that bound its memory;
// joins says a task of the topology reads several topics.
func unitMemoryOpts(joins bool) []kgo.Opt {
	if joins {
		return []kgo.Opt{kgo.MaxBufferedRecords(produceBufferRecords),
			kgo.FetchMaxBytes(joinFetchMaxBytes), kgo.FetchMaxPartitionBytes(joinFetchMaxPartitionBytes)}
	}
	return []kgo.Opt{kgo.MaxBufferedRecords(produceBufferRecords), kgo.FetchMaxBytes(fetchMaxBytes)}
}

// GuaranteeKind is a processing guarantee.
type GuaranteeKind int

const (
	// AtLeastOnce commits offsets after outputs are acknowledged: nothing is
	// lost, and a crash may repeat work since the last commit: outputs and
	// dead letters repeat, and state that accumulates (a count, a sum, an
	// aggregation of a table grouped by a new key) counts the repeated
	// records again, so it drifts from the truth with each crash.
	AtLeastOnce GuaranteeKind = iota
	// ExactlyOnce commits outputs, changelogs and offsets in Kafka
	// transactions (KIP-447: one transactional producer per unit, offsets
	// committed in the transaction, inputs read with read_committed).
	ExactlyOnce
)

func (g GuaranteeKind) String() string {
	if g == ExactlyOnce {
		return "exactly-once"
	}
	return "at-least-once"
}

// Guarantee sets the processing guarantee. Default AtLeastOnce.
func Guarantee(g GuaranteeKind) Option {
	return func(c *config) {
		if g != AtLeastOnce && g != ExactlyOnce {
			c.invalid("Guarantee(%d): unknown guarantee", int(g))
		}
		c.guarantee = g
	}
}

// ExitWhenCaughtUp makes Run return nil once every input partition has been
// processed and committed up to the end offsets it had when Run started: for
// batch jobs, demos and tests.
func ExitWhenCaughtUp() Option { return func(c *config) { c.exitCaughtUp = true } }

// StartupTimeout bounds how long Run retries, with backoff and a warning
// per attempt, while the brokers cannot be reached at startup; then it
// fails. Errors that cannot pass by themselves (a missing topic) fail at
// once. Default 5 minutes.
func StartupTimeout(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.invalid("StartupTimeout(%s): must be positive", d)
		}
		c.startupTimeout = d
	}
}

// PurgeInterval is how often, at most, a unit deletes the records of its
// repartition topics below the committed offsets, after a commit. Default
// 30 s, as Kafka Streams' repartition.purge.interval.ms.
func PurgeInterval(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			c.invalid("PurgeInterval(%s): must not be negative", d)
		}
		c.purgeInterval = d
	}
}

// OnStateChange calls fn on every state transition, from the goroutine
// that made it; fn must not block.
func OnStateChange(fn func(from, to State)) Option { return func(c *config) { c.onStateChange = fn } }

type errorAction int

const (
	actionFail errorAction = iota
	actionContinue
	actionDeadLetter
)

// ErrorPolicy says what happens to a record that fails.
type ErrorPolicy struct {
	action errorAction
	topic  string
}

// Fail stops the app with an error naming the record's topic, partition and
// offset. The default.
func Fail() ErrorPolicy { return ErrorPolicy{action: actionFail} }

// LogAndContinue logs the failure, counts the record as skipped and goes on.
func LogAndContinue() ErrorPolicy { return ErrorPolicy{action: actionContinue} }

// DeadLetter sends the raw input record to topic (its key, value and
// headers, partitioned by its key), with headers kgen.error,
// kgen.error.node, kgen.source.topic, kgen.source.partition and
// kgen.source.offset, counts it and goes on. A dead letter larger than the
// producer's limit (kgo.ProducerBatchMaxBytes) or the topic's
// max.message.bytes (read at start) carries what fits of the input's key,
// headers and value, in that order, with kgen.error cut to 1 KiB and a
// header kgen.truncated, "key=K/K' value=V/V' headers=H/H'": what was kept
// of each out of the input's. One the broker still refuses as too large is
// sent with kgen's headers only. Other failures to send a dead letter stop
// the app with a ProduceError naming the input record.
//
// Dead letters are produced with the outputs: under ExactlyOnce inside the
// transaction, so a restart after a crash leaves one committed dead letter
// per failed record; under AtLeastOnce a record dead-lettered after the
// last commit is dead-lettered again when a crash makes a restart process
// it again.
func DeadLetter(topic string) ErrorPolicy { return ErrorPolicy{action: actionDeadLetter, topic: topic} }

// OnProcessError sets the policy for records whose processing returns an
// error or panics. Default Fail.
func OnProcessError(p ErrorPolicy) Option { return func(c *config) { c.onProcessError = p } }

// OnDeserializeError sets the policy for records whose key or value cannot
// be decoded. Default Fail.
func OnDeserializeError(p ErrorPolicy) Option { return func(c *config) { c.onDeserializeError = p } }

// OnProduceError sets the policy for output records that cannot be produced
// (Kafka Streams' ProductionExceptionHandler): a record too large for the
// producer, a topic that rejects it. Fail stops the app with a
// ProduceError naming the output topic and the input record (topic,
// partition, offset) it came from; LogAndContinue drops the output and
// counts it as skipped; DeadLetter(topic) sends the input record the
// output came from there instead, as for the other policies. Changelog
// records are never dropped: their failure always stops the app, since
// state would be lost. Default Fail.
func OnProduceError(p ErrorPolicy) Option { return func(c *config) { c.onProduceError = p } }
