// Package schema is kgen's spec file format: the Go types of a kgen.yaml
// file, parsing it with the line and column of every node, its JSON Schema,
// and positioned errors. It checks what the file alone can tell; resolving
// the spec against record types, and naming generated code, is the
// generator's (package gen).
package schema

import "time"

// Version is the only spec format version this package reads.
const Version = 1

// FileName is the conventional name of a spec file.
const FileName = "kgen.yaml"

// Str is a scalar from the spec with the place it was written.
type Str struct {
	Value string
	Pos   Pos
}

// Spec is one kgen.yaml file. Topics, stores, processors and operators are sorted by
// name so everything derived from a spec is deterministic.
type Spec struct {
	// File is the path the spec was read from, as given to Load.
	File    string
	Version int
	// App is the application id: the consumer group and the prefix of
	// internal topics.
	App Str
	// Package is the Go package name of the generated code; empty means
	// "derive it from the directory".
	Package    Str
	Types      Types
	Topics     []*Topic
	Stores     []*Store
	Processors []*Processor
	Operators  []*Operator
}

// Types says where record types come from.
type Types struct {
	Go   []Str // Go package patterns relative to the spec's directory ("./model")
	Avro []Str // .avsc files or globs relative to the spec's directory
}

// Formats a topic or store may declare.
const (
	FormatString  = "string"
	FormatBytes   = "bytes"
	FormatInt32   = "int32"
	FormatInt64   = "int64"
	FormatFloat64 = "float64"
	FormatJSON    = "json"
	// FormatJSONLenient is json decoded as encoding/json does (unknown
	// members ignored, names in any case, null as the zero value), for
	// producers kgen's strict json refuses.
	FormatJSONLenient   = "json-lenient"
	FormatAvro          = "avro"
	FormatAvroConfluent = "avro-confluent"
)

// Formats lists every known format, sorted.
var Formats = []string{FormatAvro, FormatAvroConfluent, FormatBytes, FormatFloat64, FormatInt32, FormatInt64, FormatJSON, FormatJSONLenient, FormatString}

// Topic is a Kafka topic with its key and value types.
type Topic struct {
	Name Str
	Key  Str
	// Value is the value type; Format applies to it, and to the key too
	// when KeyFormat is empty and the key is not a primitive.
	Value     Str
	Format    Str
	KeyFormat Str
	// Partitions is the partition count, 0 when not given.
	Partitions    int
	PartitionsPos Pos
	// Timestamp names a field of the value whose time is the record's
	// event time; empty means the record's own timestamp.
	Timestamp Str
	// Repartition makes the topic the application's own repartition topic,
	// <app>-<name>-repartition: created and purged by the application, its
	// writers' records re-keyed through it (Kafka Streams' repartition
	// topics). RepartitionPos is where it was said.
	Repartition    bool
	RepartitionPos Pos
	// Nullable says which sides of the topic's records may be null (a
	// null key, a tombstone): key, value or both; empty for neither. A
	// nullable side is carried as a pointer, nil for null.
	Nullable Str
	// Windowed says the topic's keys are windowed (dsl.Windowed of Key),
	// with Kafka Streams' windowed key serde: windowed: true takes the
	// windows from its writers (a windowed aggregation's toStream);
	// windowed: session or windowed: SIZE (time windows of that size, which
	// reading a key needs for its end) says them, for a topic the
	// application reads. WindowedPos is where it was said.
	Windowed    bool
	WindowedPos Pos
	// WindowSession and WindowSize are what windowed: says when not true.
	WindowSession bool
	WindowSize    Dur
	// Configs are topic configs (cleanup.policy, retention.ms, ...) that
	// kgen topics creates the topic with and checks an existing one
	// against; the application itself never creates or alters the user's
	// topics. Values are kept as written.
	Configs []TopicConfig
}

// TopicConfig is one of a topic's configs, at its position in the spec.
type TopicConfig struct {
	Key, Value Str
}

// Values of a topic's nullable.
const (
	NullableKey   = "key"
	NullableValue = "value"
	NullableBoth  = "both"
)

// KeyNullable reports whether the topic's keys may be null.
func (t *Topic) KeyNullable() bool {
	return t.Nullable.Value == NullableKey || t.Nullable.Value == NullableBoth
}

// ValueNullable reports whether the topic's values may be null.
func (t *Topic) ValueNullable() bool {
	return t.Nullable.Value == NullableValue || t.Nullable.Value == NullableBoth
}

// Backends a store may use.
const (
	BackendMemory = "memory"
	BackendPebble = "pebble"
)

// Store is a state store.
type Store struct {
	Name      Str
	Kind      Str // "keyvalue" (the default), or "window" or "session" for a windowed aggregation's store
	Key       Str
	Value     Str
	Format    Str // format of non-primitive keys and values in the store
	Backend   Str // memory (default) or pebble
	Changelog bool
	// ChangelogPos is where changelog: is set; zero when it is not (the
	// default: true, false for a global table's store).
	ChangelogPos Pos
	// Queryable serves the store's contents, read-only, on the ops
	// endpoints (/v1/stores/NAME/) and in the generated client.
	Queryable bool
}

// Processor is a node of user code.
type Processor struct {
	Name Str
	// From lists the processor's inputs: topics or other processors.
	From []Str
	// Forward is what the processor forwards; nil means "the types of the
	// topics it writes to".
	Forward *Forward
	// To lists the processor's children: processors or topics.
	To        []Str
	Stores    []Str
	Punctuate []*Punctuation
	// Rekeys says the processor forwards records with keys other than the
	// ones it received (a key type change says so by itself). RekeysPos is
	// where it was said.
	Rekeys    bool
	RekeysPos Pos
}

// Forward declares the key and value types a processor forwards.
type Forward struct {
	Key   Str
	Value Str
	Pos   Pos
}

// Punctuation time kinds.
const (
	StreamTime = "stream-time"
	WallClock  = "wall-clock"
)

// Punctuation is one periodic callback of a processor.
type Punctuation struct {
	Name     Str // optional with one schedule, required with several
	Every    time.Duration
	EveryPos Pos
	Time     Str // stream-time (default) or wall-clock
	Pos      Pos
}

// Versioned is a table's versioned: its store keeps each key's values over
// time, History long (Kafka Streams' history retention).
type Versioned struct {
	History Dur
	Pos     Pos
}

// Operator is a node of Kafka Streams' DSL: the generator writes the wiring
// and one typed function signature per function the operator needs, which
// the user implements.
type Operator struct {
	Name Str
	// Op is the operator kind, Kafka Streams' method name: the generator
	// knows the kinds (package gen, one descriptor each).
	Op Str
	// From lists the inputs: topics, processors or operators (a branch's
	// arms are named <branch>-<arm>).
	From []Str
	// To lists topics (and processors) the operator's output goes to.
	To []Str
	// Key and Value declare output types where the operator changes them
	// (map, selectKey, groupBy...); for aggregate, Value is the aggregate's.
	Key   Str
	Value Str
	// Store names the store of an aggregation or a table; it may be
	// declared under stores, else it is implied with the inferred types.
	Store Str
	// Topic is the topic a table reads.
	Topic Str
	// Branches and Default name a branch's arms.
	Branches []Str
	Default  Str
	// Partitions is the partition count of a grouping's repartition
	// topic, 0 when not given.
	Partitions    int
	PartitionsPos Pos
	// Window makes an aggregation windowed (window:); Emit is its emit:
	// (updates or final, "" for the default, updates); IdleClose its
	// idle-close: (with emit: final, the wall clock closes windows once no
	// record came for that long). A suppress operator takes IdleClose too.
	Window    *Window
	Emit      Str
	IdleClose Dur
	// Grace is a stream-table join's grace: (Kafka Streams'
	// Joined.withGracePeriod): how long stream records wait for a
	// versioned table's late updates.
	Grace Dur
	// Suppress is a suppress operator's until: and buffer:.
	Suppress *Suppress
	// Versioned makes a table's store a versioned store (versioned:
	// {history: D}), nil for a plain one.
	Versioned *Versioned
	// ForeignKey says a table-table join joins by a key extracted from the
	// left row's value (foreign-key: true); ForeignKeyPos is where.
	ForeignKey    bool
	ForeignKeyPos Pos
	// Keys holds where each key of the operator's mapping was written.
	Keys map[string]Pos
	// Pos is where the operator's mapping starts.
	Pos Pos
}
