package stream

import (
	"context"
	"log/slog"
	"sync/atomic"
)

// DropReason says why a record was dropped: taken from its input and
// processed (its offset commits) without reaching the node that dropped
// it, or anything after. It is the reason label of the dropped-records
// counter (Stats.Dropped, kgen_records_dropped_total).
type DropReason string

// The reasons the runtime and runtime/dsl drop a record for, as Kafka
// Streams' dropped-records metric counts them.
const (
	// DropNullKey: a null key where one is needed (a source whose key
	// deserializer does not decode null, an aggregation, a table).
	DropNullKey DropReason = "null-key"
	// DropNullValue: a null value where one is needed (a source whose
	// value deserializer does not decode null, an aggregation).
	DropNullValue DropReason = "null-value"
	// DropLateRecord: a record older than its window's grace allows.
	DropLateRecord DropReason = "late-record"
	// DropExpiredWindow: a record for a window already closed and purged.
	DropExpiredWindow DropReason = "expired-window"
	// DropExpiredVersion: a record older than its versioned table's
	// history retention (Kafka Streams counts it in the store's
	// expired-record sensor).
	DropExpiredVersion DropReason = "expired-version"
)

// DropReasons returns the reasons the runtime knows, in a fixed order, so
// that a metrics exporter can give each a series from the start.
func DropReasons() []DropReason {
	return []DropReason{DropNullKey, DropNullValue, DropLateRecord, DropExpiredWindow, DropExpiredVersion}
}

// RecordDropped counts the current record as dropped by this processor for
// reason, and logs it at debug level with its topic, partition and offset.
// An operator calls it where Kafka Streams records a dropped record (a null
// key before a store, a record too late for its window): a drop is never
// silent. It does not stop the record's other paths: the processor simply
// does not forward it.
func (c *nodeContext) RecordDropped(reason DropReason) { c.t.recordDropped(c.name, reason) }

// recordDropped counts a drop by node of the current record and logs it.
func (t *task) recordDropped(node string, reason DropReason) {
	if t.dropped == nil {
		t.dropped = map[DropReason]uint64{}
	}
	t.dropped[reason]++
	log := t.env.config().logger
	if !log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	attrs := []any{"task", t.id.String(), "node", node, "reason", string(reason)}
	if r := t.current; r != nil {
		attrs = append(attrs, "topic", r.Topic, "partition", r.Partition, "offset", r.Offset)
	}
	log.Debug("dropping record", attrs...)
}

// addDropped adds counts to *into, allocating it on the first count.
func addDropped(into *map[DropReason]uint64, counts map[DropReason]uint64) {
	for r, n := range counts {
		if n == 0 {
			continue
		}
		if *into == nil {
			*into = map[DropReason]uint64{}
		}
		(*into)[r] += n
	}
}

// nullWarnings remembers, for one source of a topology (all its tasks, on
// any unit), that it has warned about a side that cannot say null, so each
// warning is given once.
type nullWarnings struct{ key, value atomic.Bool }

// warn logs, the first time a source drops a null for reason, that the
// side's deserializer does not decode null and how to make it.
func (w *nullWarnings) warn(t *task, source, topic string, reason DropReason) {
	side, flag := "key", &w.key
	if reason == DropNullValue {
		side, flag = "value", &w.value
	}
	if !flag.CompareAndSwap(false, true) {
		return
	}
	t.env.config().logger.Warn("source drops records with a null "+side+": its "+side+" deserializer does not decode null "+
		"(declare the "+side+" nullable to receive them: a dsl.Nullable serde, serde.Bytes, or nullable: in kgen.yaml); "+
		"each drop is counted as "+string(reason)+" and logged at debug level",
		"source", source, "topic", topic, "task", t.id.String())
}
