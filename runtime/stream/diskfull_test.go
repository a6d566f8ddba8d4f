package stream_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state/pebblestore"
	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/twmb/franz-go/pkg/kgo"
)

// An App whose Pebble stores fill the disk (a small tmpfs) stops with one
// line naming the store, its directory and "no space left on device",
// instead of dying inside Pebble ("sync: unlock of unlocked mutex", exit 2,
// under at-least-once). Once there is room again it starts cleanly: every
// store holds what its changelog holds, and under exactly-once every count
// is exact. Root only (it mounts a tmpfs); pebblestore's
// TestFullDiskInjected covers the store's side without root.
func TestFullDiskStopsTheAppAndRestarts(t *testing.T) {
	for _, g := range []stream.GuaranteeKind{stream.AtLeastOnce, stream.ExactlyOnce} {
		t.Run(g.String(), func(t *testing.T) {
			mnt := t.TempDir()
			if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", mnt).CombinedOutput(); err != nil {
				t.Skipf("cannot mount a tmpfs (%v: %s)", err, strings.TrimSpace(string(out)))
			}
			t.Cleanup(func() {
				if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
					t.Errorf("umount %s: %v: %s", mnt, err, out)
				}
			})
			// 5 MiB left: the reserves of two stores (1.25 MiB each) and
			// less than the keys to store (2 × 4 MiB).
			filler := filepath.Join(mnt, "filler")
			if err := os.WriteFile(filler, make([]byte, 59<<20), 0o644); err != nil {
				t.Fatal(err)
			}
			c := kafkatest.New(t)
			in, out := c.CreateTopic(t, 2, nil), c.CreateTopic(t, 2, nil)
			appID := "diskfull-" + in
			// Keys of 1 KB that do not compress, so the stores' tables are
			// as large as their logs.
			rng := rand.New(rand.NewPCG(7, 7))
			keys := make([]string, 8000)
			for i := range keys {
				k := make([]byte, 500)
				for j := range k {
					k[j] = byte(rng.Uint32())
				}
				keys[i] = fmt.Sprintf("%04d-%x", i, k)
			}
			truth := map[string]int64{}
			var recs []*kgo.Record
			for round := range 2 {
				for _, k := range keys {
					truth[k]++
					recs = append(recs, &kgo.Record{Topic: in, Key: []byte(k), Value: fmt.Appendf(nil, "%d", round)})
				}
			}
			produceAll(t, c.Client(t), recs)
			stateDir := filepath.Join(mnt, "state")
			opener := pebblestore.Opener(pebblestore.Options{CacheSize: 1 << 20, MemTableSize: 256 << 10})
			run := func() error {
				app, err := stream.New(countTopology(in, out, opener), stream.Brokers(c.Seeds()...), stream.AppID(appID),
					stream.StateDir(stateDir), stream.Parallelism(1), stream.Guarantee(g), stream.CommitInterval(100*time.Millisecond),
					stream.ExitWhenCaughtUp(), stream.Logger(testLogger(t)))
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				return app.Run(ctx)
			}

			err := run()
			if err == nil {
				t.Fatal("the run ended without error: the disk never filled")
			}
			msg := err.Error()
			t.Logf("the run stopped with: %s", msg)
			if !strings.Contains(msg, "no space left on device") || !strings.Contains(msg, `store "counts"`) ||
				!strings.Contains(msg, filepath.Join(stateDir, appID)) || strings.Contains(msg, "\n") {
				t.Fatalf("error on a full disk: %q; want one line naming store \"counts\", its directory under %s and \"no space left on device\"", msg, stateDir)
			}

			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
			if err := run(); err != nil {
				t.Fatalf("run once the disk has room: %v", err)
			}
			if g == stream.ExactlyOnce {
				if got := lastCountsOf(t, readCommitted(t, c, out, g)); !mapsEqual(truth, got) {
					t.Fatalf("counts after the restart differ from the input's: %s", mapDiff(truth, got))
				}
			} else {
				for k, n := range lastCountsOf(t, readCommitted(t, c, out, g)) {
					if n < truth[k] {
						t.Fatalf("key %.8s…: counted to %d after the restart, want at least %d", k, n, truth[k])
					}
				}
			}
			// Each store holds exactly what its changelog holds.
			changelog := map[int32]map[string]string{0: {}, 1: {}}
			for _, r := range readCommitted(t, c, appID+"-counts-changelog", g) {
				if r.Value == nil {
					delete(changelog[r.Partition], string(r.Key))
				} else {
					changelog[r.Partition][string(r.Key)] = string(r.Value)
				}
			}
			for p := range int32(2) {
				dir := filepath.Join(stateDir, appID, fmt.Sprintf("0_%d", p), "counts")
				b, err := pebblestore.Open(dir, pebblestore.Options{CacheSize: 1 << 20})
				if err != nil {
					t.Fatal(err)
				}
				got := map[string]string{}
				it, err := b.Range(nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				for it.Next() {
					got[string(it.Key())] = string(it.Value())
				}
				if err := errors.Join(it.Err(), it.Close(), b.Close()); err != nil {
					t.Fatal(err)
				}
				if len(got) != len(changelog[p]) {
					t.Fatalf("store of task 0_%d holds %d keys, its changelog %d", p, len(got), len(changelog[p]))
				}
				for k, v := range changelog[p] {
					if got[k] != v {
						t.Fatalf("store of task 0_%d: key %.8s… holds %x, its changelog %x", p, k, got[k], v)
					}
				}
			}
		})
	}
}

// lastCountsOf keeps, per key, the largest count among records.
func lastCountsOf(t *testing.T, recs []*kgo.Record) map[string]int64 {
	t.Helper()
	got := map[string]int64{}
	for _, r := range recs {
		n, err := serde.Int64{}.Deserialize(r.Value)
		if err != nil {
			t.Fatalf("output %s/%d@%d: %v", r.Topic, r.Partition, r.Offset, err)
		}
		got[string(r.Key)] = max(got[string(r.Key)], n)
	}
	return got
}

// A checkpoint that cannot be written stops the app with an error naming
// the task and the stores whose positions it records: on a full disk it
// may be the first write to fail, before any store's own.
func TestCheckpointWriteFailureNamesTheStore(t *testing.T) {
	c := kafkatest.New(t)
	in, out := c.CreateTopic(t, 2, nil), c.CreateTopic(t, 2, nil)
	produceAll(t, c.Client(t), []*kgo.Record{{Topic: in, Key: []byte("k"), Value: []byte("v"), Partition: 0}})
	appID := "ckfail-" + in
	stateDir := t.TempDir()
	// A non-empty directory where each task's checkpoint goes: the
	// rename over it fails.
	for _, task := range []string{"0_0", "0_1"} {
		blocker := filepath.Join(stateDir, appID, task, ".checkpoint", "x")
		if err := os.MkdirAll(blocker, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	_, err := runApp(t, countTopology(in, out, onDisk), stream.Brokers(c.Seeds()...), stream.AppID(appID),
		stream.StateDir(stateDir), stream.Logger(testLogger(t)), stream.ExitWhenCaughtUp())
	if err == nil || !strings.Contains(err.Error(), `checkpoint of store "counts"`) || !strings.Contains(err.Error(), "task 0_") {
		t.Fatalf("Run: %v, want an error naming the task and store \"counts\"", err)
	}
}
