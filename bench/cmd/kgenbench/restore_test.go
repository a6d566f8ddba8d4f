package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kgen-dev/kgen/bench/internal/protocol"
	"github.com/kgen-dev/kgen/internal/kafkatest"
)

// The restore workloads learn when a restore starts from the runtime's log
// (restoreWatch) and how far it got from App.Stats: if the message changed,
// a run would never see its restore begin. Each workload here restores a changelog the
// test wrote and must report every entry restored and held, with the
// restore's start and end stamped.
func TestRestoreWorkloads(t *testing.T) {
	for _, workload := range []string{protocol.RestoreKV, protocol.RestoreWindow} {
		t.Run(workload, func(t *testing.T) {
			c := kafkatest.New(t)
			input := c.CreateTopic(t, 2, nil)
			app := kafkatest.TopicName(t)
			exp, _ := protocol.Expected(workload, 0, 0)
			changelog := protocol.Changelog(app, exp.Store)
			adm := c.Admin(t)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			compact := "compact"
			if _, err := adm.CreateTopic(ctx, 2, -1, map[string]*string{"cleanup.policy": &compact}, changelog); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _, _ = adm.DeleteTopics(context.Background(), changelog) })
			const entries = 500
			cl := c.Client(t, kgo.DefaultProduceTopic(changelog))
			for i := range entries {
				r := &kgo.Record{Key: fmt.Appendf(nil, "k%04d", i), Value: []byte("v")}
				if workload == protocol.RestoreWindow {
					start := int64(1_700_000_040_000) + int64(i%5)*60_000
					r.Key = binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64(fmt.Appendf(nil, "k%04d", i/5), uint64(start)), 0)
					r.Value = binary.BigEndian.AppendUint64(nil, 1)
					r.Timestamp = time.UnixMilli(start)
				}
				if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			a := &protocol.Args{
				Brokers: strings.Join(c.Seeds(), ","), Workload: workload, Source: input, App: app,
				Expect: entries, Parallelism: 1, StateDir: t.TempDir(), Guarantee: protocol.AtLeastOnce,
				CommitInterval: time.Second, Timeout: 45 * time.Second,
			}
			res, err := run(a, "memory")
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			if res.Consumed != entries || res.FirstRecordNs == 0 || res.LastRecordNs < res.FirstRecordNs {
				t.Errorf("restored %d, stamps %d..%d; want %d restored with a start and an end", res.Consumed, res.FirstRecordNs, res.LastRecordNs, entries)
			}
		})
	}
}
