package state_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kgen-dev/kgen/runtime/state"
)

// retained is the changelog of a store kind with a retention, such as a
// window store's: one hour of retention and the default margin.
var retained = state.RetainedChangelog(time.Hour, state.DefaultChangelogRetentionMargin)

// TestChangelogConfigs checks the configs each kind's changelog is created
// with: compacted for key-value stores, compact,delete with the retention
// and its margin for kinds that keep data for a while.
func TestChangelogConfigs(t *testing.T) {
	kv := state.KeyValue.Changelog(0, state.DefaultChangelogRetentionMargin)
	if diff := cmp.Diff(map[string]string{"cleanup.policy": "compact"}, kv.Configs()); diff != "" {
		t.Errorf("key-value changelog configs (-want +got):\n%s", diff)
	}
	want := map[string]string{"cleanup.policy": "compact,delete", "retention.ms": "90000000"} // 1 h + 1 day
	if diff := cmp.Diff(want, retained.Configs()); diff != "" {
		t.Errorf("retained changelog configs (-want +got):\n%s", diff)
	}
	timed := state.ChangelogTopic{RecordTimes: true}
	want = map[string]string{"cleanup.policy": "compact", "message.timestamp.type": "CreateTime"}
	if diff := cmp.Diff(want, timed.Configs()); diff != "" {
		t.Errorf("changelog configs of a kind that restores record times (-want +got):\n%s", diff)
	}
	// Kafka Streams' versioned changelog: compacted, never before the
	// history retention plus a day.
	want = map[string]string{"cleanup.policy": "compact", "message.timestamp.type": "CreateTime", "min.compaction.lag.ms": "90000000"}
	if diff := cmp.Diff(want, state.VersionedKind(time.Hour).Changelog(0, time.Minute).Configs()); diff != "" {
		t.Errorf("versioned changelog configs (-want +got):\n%s", diff)
	}
}

// TestChangelogCheck checks which existing changelogs fit a kind: those
// that keep every record it needs, by cleanup policy, time and size.
func TestChangelogCheck(t *testing.T) {
	kv := state.KeyValue.Changelog(0, state.DefaultChangelogRetentionMargin)
	versioned := state.VersionedKind(time.Hour).Changelog(0, state.DefaultChangelogRetentionMargin)
	for _, c := range []struct {
		name    string
		need    state.ChangelogTopic
		configs map[string]string
		err     string // "" when it fits
	}{
		{"kv compact", kv, map[string]string{"cleanup.policy": "compact", "retention.ms": "604800000"}, ""},
		{"kv delete", kv, map[string]string{"cleanup.policy": "delete"}, `changelog topic "t" has cleanup.policy=delete, it needs compact`},
		{"kv compact,delete", kv, map[string]string{"cleanup.policy": "compact,delete", "retention.ms": "604800000", "retention.bytes": "-1"},
			`changelog topic "t" has cleanup.policy=compact,delete and retention.ms=604800000, it needs compact (or retention.ms=-1)`},
		{"kv compact,delete forever", kv, map[string]string{"cleanup.policy": "delete,compact", "retention.ms": "-1", "retention.bytes": "-1"}, ""},
		{"kv compact,delete default retention", kv, map[string]string{"cleanup.policy": "compact,delete"}, "retention.ms=604800000"},
		{"retained", retained, map[string]string{"cleanup.policy": "compact,delete", "retention.ms": "90000000", "retention.bytes": "-1"}, ""},
		{"retained longer", retained, map[string]string{"cleanup.policy": "compact,delete", "retention.ms": "604800000"}, ""},
		{"retained compact only", retained, map[string]string{"cleanup.policy": "compact"}, ""},
		{"retained too short", retained, map[string]string{"cleanup.policy": "compact,delete", "retention.ms": "3600000"},
			`changelog topic "t" has retention.ms=3600000, it needs at least 90000000`},
		{"retained by size", retained, map[string]string{"cleanup.policy": "compact,delete", "retention.ms": "-1", "retention.bytes": "1000"}, "retention.bytes=1000"},
		{"retained delete", retained, map[string]string{"cleanup.policy": "delete", "retention.ms": "90000000"}, `has cleanup.policy=delete, it needs compact,delete`},
		{"not described", retained, map[string]string{}, ""},
		{"kv log append time", kv, map[string]string{"cleanup.policy": "compact", "message.timestamp.type": "LogAppendTime"}, ""},
		{"record times", state.ChangelogTopic{RecordTimes: true}, map[string]string{"cleanup.policy": "compact", "message.timestamp.type": "CreateTime"}, ""},
		{"record times log append time", state.ChangelogTopic{RecordTimes: true}, map[string]string{"cleanup.policy": "compact", "message.timestamp.type": "LogAppendTime"},
			`changelog topic "t" has message.timestamp.type=LogAppendTime, it needs CreateTime`},
		{"versioned", versioned, map[string]string{"cleanup.policy": "compact", "message.timestamp.type": "CreateTime", "min.compaction.lag.ms": "90000000"}, ""},
		{"versioned longer lag", versioned, map[string]string{"cleanup.policy": "compact", "min.compaction.lag.ms": "100000000"}, ""},
		{"versioned short lag", versioned, map[string]string{"cleanup.policy": "compact", "min.compaction.lag.ms": "0"},
			`changelog topic "t" has min.compaction.lag.ms=0, it needs at least 90000000`},
		{"versioned compact,delete", versioned, map[string]string{"cleanup.policy": "compact,delete", "retention.ms": "604800000", "min.compaction.lag.ms": "90000000"},
			`it needs compact (or retention.ms=-1)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.need.Check("t", c.configs)
			switch {
			case c.err == "" && err != nil:
				t.Errorf("Check = %v, want it to fit", err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Errorf("Check = %v, want an error containing %q", err, c.err)
			}
		})
	}
}

// TestCacheStampsWrites checks that a cache hands out each dirty entry
// with the time of the record that made its last write, as its clock told
// at the write, not at the commit.
func TestCacheStampsWrites(t *testing.T) {
	clock := &fakeClock{}
	c := state.NewCache(state.NewMemory(), 10, func() {})
	c.SetClock(clock)
	write := func(at int64, k, v string) {
		t.Helper()
		clock.now = at
		var err error
		if v == "" {
			err = c.Delete([]byte(k))
		} else {
			err = c.Put([]byte(k), []byte(v))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	write(10, "a", "1")
	write(20, "b", "1")
	write(30, "a", "2")
	write(40, "b", "")
	clock.now = 99 // the commit's time is not the writes'
	want := []state.Change{
		{Key: []byte("a"), Value: []byte("2"), Timestamp: 30},
		{Key: []byte("b"), Timestamp: 40},
	}
	if diff := cmp.Diff(want, c.Dirty()); diff != "" {
		t.Errorf("Dirty (-want +got):\n%s", diff)
	}
}

type fakeClock struct{ now int64 }

func (c *fakeClock) RecordTime() int64 { return c.now }
