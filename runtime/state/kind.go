package state

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// StoreKind describes one kind of store as a value: its name, what its
// changelog topic must keep, and how its changelog records are restored over
// a backend. The runtime asks a store's kind and never switches on it, so a
// new kind (window, session, timestamped key-value, versioned) is a new value
// beside its typed store, such as KeyValue beside NewKeyValueStore.
type StoreKind struct {
	// Name names the kind in errors and logs: "key-value".
	Name string
	// Changelog returns what the changelog topic of a store of this kind
	// needs, for a store keeping data for retention (zero for kinds that
	// keep everything) when the changelog is to keep records margin longer
	// than the store does (Kafka Streams'
	// windowstore.changelog.additional.retention.ms).
	Changelog func(retention, margin time.Duration) ChangelogTopic
	// Restore applies changelog records to the backend of a store of this
	// kind, in order and with their timestamps, below the typed store: the
	// writes are not logged again. Restore may rewrite the elements of
	// changes (never the bytes they point to): the caller drops the slice.
	Restore func(b Backend, changes []Change) error
	// ToChangelog, if not nil, turns a write to the backend (as the record
	// cache hands it to the runtime at a commit) into the changelog record
	// Kafka Streams writes for it: a kind whose backend layout is not its
	// changelog's (a window store's segment prefix, a timestamped store's
	// timestamp) converts it here, and ok false logs nothing (a kind's own
	// bookkeeping key). Nil logs writes as they are.
	ToChangelog func(c Change) (logged Change, ok bool)
	// LogsItself says the kind's typed store logs its own changelog
	// records, one per operation, even over a record cache, and the
	// runtime must log none of the backend's writes: a versioned store's
	// put makes several backend writes, and its changelog holds the puts
	// in the order they were made, which a cache's writes cannot tell.
	LogsItself bool
	// WriteBehind is how many entries the write-behind cache of a
	// persistent store of this kind keeps when the runtime has no record
	// cache (CacheRecords(0)); zero is the runtime's default.
	WriteBehind int
}

// KeyValue is the kind of key-value stores (NewKeyValueStore): a compacted
// changelog of each key's last value, kept forever, whose records are
// applied to the backend as they are.
var KeyValue = &StoreKind{
	Name:      "key-value",
	Changelog: func(time.Duration, time.Duration) ChangelogTopic { return ChangelogTopic{} },
	Restore:   ApplyChanges,
}

// DefaultChangelogRetentionMargin is how much longer than its store a
// changelog with a retention keeps records, as Kafka Streams'
// windowstore.changelog.additional.retention.ms: one day.
const DefaultChangelogRetentionMargin = 24 * time.Hour

// RetainedChangelog is the changelog of kinds that keep data for a retention
// period (window and session stores): compacted, and deleted past retention
// plus margin, so the changelog never drops a record its store still keeps,
// even when the clocks of the records and of the broker differ a little.
func RetainedChangelog(retention, margin time.Duration) ChangelogTopic {
	return ChangelogTopic{Retention: retention + margin}
}

// ChangelogTopic is what a store kind needs of its changelog topic, besides
// its partitions (those of the store's sub-topology).
type ChangelogTopic struct {
	// Retention is how long the changelog must keep a record. Zero keeps the
	// last record of each key forever: cleanup.policy=compact. More is
	// cleanup.policy=compact,delete with retention.ms = Retention.
	Retention time.Duration
	// RecordTimes says the kind restores from its records' timestamps (a
	// versioned store's validity times), so the topic must keep the
	// producer's: message.timestamp.type=CreateTime, never the broker's
	// LogAppendTime. Key-value stores do not need it.
	RecordTimes bool
	// MinCompactionLag, if more than zero, is how long compaction must
	// leave every record of a key in place (min.compaction.lag.ms): a
	// versioned store's history is the key's older records.
	MinCompactionLag time.Duration
}

// kafkaDefaultRetention is Kafka's retention.ms default (seven days), for a
// topic whose configs do not say.
const kafkaDefaultRetention = 7 * 24 * time.Hour

// Configs returns the configs a new changelog topic is created with.
func (c ChangelogTopic) Configs() map[string]string {
	configs := map[string]string{"cleanup.policy": "compact"}
	if c.Retention > 0 {
		configs["cleanup.policy"] = "compact,delete"
		configs["retention.ms"] = strconv.FormatInt(c.Retention.Milliseconds(), 10)
	}
	if c.RecordTimes {
		configs["message.timestamp.type"] = "CreateTime"
	}
	if c.MinCompactionLag > 0 {
		configs["min.compaction.lag.ms"] = strconv.FormatInt(c.MinCompactionLag.Milliseconds(), 10)
	}
	return configs
}

// Check tells why the existing changelog topic with configs (as described
// by the broker, defaults included) would lose records its store needs, or
// nil if it keeps them: it must be compacted, and a topic that also deletes
// must keep records at least Retention (forever when Retention is zero), by
// time and by size; a kind that restores record times needs them kept as
// the producer set them; one with a MinCompactionLag needs at least that
// min.compaction.lag.ms.
func (c ChangelogTopic) Check(topic string, configs map[string]string) error {
	var errs []error
	if t, ok := configs["message.timestamp.type"]; ok && c.RecordTimes && t != "CreateTime" {
		errs = append(errs, fmt.Errorf("changelog topic %q has message.timestamp.type=%s, it needs CreateTime: its store restores the times its records carry", topic, t))
	}
	if v, ok := configs["min.compaction.lag.ms"]; ok && c.MinCompactionLag > 0 {
		if ms, err := strconv.ParseInt(v, 10, 64); err != nil || ms < c.MinCompactionLag.Milliseconds() {
			errs = append(errs, fmt.Errorf("changelog topic %q has min.compaction.lag.ms=%s, it needs at least %d: compaction would drop the history its store keeps", topic, v, c.MinCompactionLag.Milliseconds()))
		}
	}
	return errors.Join(append(errs, c.checkRetention(topic, configs))...)
}

// checkRetention is Check's part about what the topic keeps, and how long.
func (c ChangelogTopic) checkRetention(topic string, configs map[string]string) error {
	want := c.Configs()["cleanup.policy"]
	policy, ok := configs["cleanup.policy"]
	if !ok {
		return nil // not described: nothing to say
	}
	var compact, del bool
	for _, p := range strings.Split(policy, ",") {
		switch strings.TrimSpace(p) {
		case "compact":
			compact = true
		case "delete":
			del = true
		}
	}
	if !compact {
		return fmt.Errorf("changelog topic %q has cleanup.policy=%s, it needs %s", topic, policy, want)
	}
	if !del {
		return nil // compacted only: every key's last record is kept
	}
	if b, ok := configs["retention.bytes"]; ok && b != "-1" {
		return fmt.Errorf("changelog topic %q has cleanup.policy=%s and retention.bytes=%s, it needs retention.bytes=-1: a changelog must not lose records by size", topic, policy, b)
	}
	kept := kafkaDefaultRetention
	if v, ok := configs["retention.ms"]; ok {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("changelog topic %q: retention.ms=%q is not a number: %w", topic, v, err)
		}
		if ms < 0 {
			return nil // kept forever
		}
		kept = time.Duration(ms) * time.Millisecond
	}
	if c.Retention <= 0 {
		return fmt.Errorf("changelog topic %q has cleanup.policy=%s and retention.ms=%d, it needs %s (or retention.ms=-1): keys not written for that long would be lost", topic, policy, kept.Milliseconds(), want)
	}
	if kept < c.Retention {
		return fmt.Errorf("changelog topic %q has retention.ms=%d, it needs at least %d (the store's retention and the changelog's margin)", topic, kept.Milliseconds(), c.Retention.Milliseconds())
	}
	return nil
}
