package stream_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/twmb/franz-go/pkg/kgo"
)

// applyLog records, for every store a test opens, the restore's writes
// in order: "apply N" for a batch of N changes, "position P".
type applyLog struct {
	mu     sync.Mutex
	events map[string][]string
}

func (l *applyLog) add(dir, ev string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events[dir] = append(l.events[dir], ev)
}

// loggingStore is a Pebble store that logs its batches and positions.
type loggingStore struct {
	state.Backend
	dir string
	log *applyLog
}

func (s *loggingStore) ApplyBatch(changes []state.Change) error {
	s.log.add(s.dir, fmt.Sprintf("apply %d", len(changes)))
	return s.Backend.(state.Restorer).ApplyBatch(changes)
}

func (s *loggingStore) Position() (int64, bool, error) {
	return s.Backend.(state.Positioned).Position()
}

func (s *loggingStore) SetPosition(offset int64) error {
	s.log.add(s.dir, fmt.Sprintf("position %d", offset))
	return s.Backend.(state.Positioned).SetPosition(offset)
}

// TestRestoreAppliesInChunks restores a changelog in chunks much smaller
// than it: each chunk is one batch followed by the position it reaches,
// the positions grow to the changelog's end, and the state restored is the
// one logged (the counts go on from it), whether the changelog's batches
// are compressed or not (the keys and values a chunk copies come from the
// fetched bytes or from buffers franz-go decompresses into).
func TestRestoreAppliesInChunks(t *testing.T) {
	for _, tc := range []struct {
		name  string
		codec kgo.CompressionCodec
	}{{"uncompressed", kgo.NoCompression()}, {"lz4", kgo.Lz4Compression()}} {
		t.Run(tc.name, func(t *testing.T) { testRestoreAppliesInChunks(t, tc.codec) })
	}
}

func testRestoreAppliesInChunks(t *testing.T, codec kgo.CompressionCodec) {
	stream.SetRestoreChunks(t, 4<<10, 16<<10)
	c := kafkatest.New(t)
	in, out := c.CreateTopic(t, 1, nil), c.CreateTopic(t, 1, nil)
	appID := "chunks-" + in
	recs, truth := keyedRecords(in, 3000, 1000, 5)
	cl := c.Client(t)
	log := &applyLog{events: map[string][]string{}}
	opener := func(dir string) (state.Backend, error) {
		b, err := onDisk(dir)
		if err != nil {
			return nil, err
		}
		return &loggingStore{Backend: b, dir: dir, log: log}, nil
	}
	run := func() *stream.App {
		t.Helper()
		// Small batches of changelog records and small fetches: a chunk is
		// read in several.
		app, err := runApp(t, countTopology(in, out, opener), stream.Brokers(c.Seeds()...), stream.AppID(appID),
			stream.StateDir(t.TempDir()), stream.Parallelism(1), stream.Logger(testLogger(t)), stream.ExitWhenCaughtUp(),
			stream.ClientOpts(kgo.ProducerBatchMaxBytes(1<<10), kgo.FetchMaxPartitionBytes(512), kgo.ProducerBatchCompression(codec)))
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		return app
	}
	produceAll(t, cl, recs[:2000])
	run() // builds the changelog
	changelog := appID + "-counts-changelog"
	ends, err := c.Admin(t).ListEndOffsets(context.Background(), changelog)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(changelog, 0)
	produceAll(t, cl, recs[2000:])
	log.mu.Lock()
	log.events = map[string][]string{}
	log.mu.Unlock()
	app := run() // a new state directory: restores the whole changelog, then counts on
	if got := app.Stats().Restored; got != uint64(end.Offset) {
		t.Fatalf("restored %d records, want %d", got, end.Offset)
	}
	if len(log.events) != 1 {
		t.Fatalf("%d stores written, want 1", len(log.events))
	}
	for _, events := range log.events {
		var positions []int64
		applied, batches, batchFirst := 0, 0, false
		for _, ev := range events {
			var n int64
			if _, err := fmt.Sscanf(ev, "apply %d", &n); err == nil {
				applied += int(n)
				batches++
				batchFirst = true
				continue
			}
			if _, err := fmt.Sscanf(ev, "position %d", &n); err != nil {
				t.Fatalf("event %q", ev)
			}
			if n > end.Offset {
				break // the counting after the restore
			}
			if !batchFirst {
				t.Fatalf("position %d recorded with no batch before it: %v", n, events)
			}
			if len(positions) > 0 && n <= positions[len(positions)-1] {
				t.Fatalf("position %d after %d", n, positions[len(positions)-1])
			}
			positions = append(positions, n)
			batchFirst = false
			if n == end.Offset {
				break
			}
		}
		if applied != int(end.Offset) {
			t.Errorf("restored %d changes, want %d", applied, end.Offset)
		}
		// Changelog records of some 25 bytes (41 with the 16 counted for
		// each), fetched a producer batch of up to 1 KiB at a time (about
		// 40 records), applied 4 KiB at a time (about 100).
		if batches < 3 || batches > applied/80 {
			t.Errorf("restored %d changes in %d batches, want chunks of about 4 KiB", applied, batches)
		}
		if len(positions) == 0 || positions[len(positions)-1] != end.Offset {
			t.Errorf("positions %v, want them to reach the changelog's end %d", positions, end.Offset)
		}
	}
	if got := lastCounts(t, c, out); !mapsEqual(truth, got) {
		t.Fatalf("counts after the restore differ from the truth: %s", mapDiff(truth, got))
	}
}

// overlapStore is a store whose batches take a while and count how many
// stores are being written at once.
type overlapStore struct {
	state.Backend
	now, most *atomic.Int32
}

func (s *overlapStore) ApplyBatch(changes []state.Change) error {
	n := s.now.Add(1)
	defer s.now.Add(-1)
	for m := s.most.Load(); n > m && !s.most.CompareAndSwap(m, n); m = s.most.Load() {
	}
	time.Sleep(50 * time.Millisecond)
	return s.Backend.(state.Restorer).ApplyBatch(changes)
}

func (s *overlapStore) Position() (int64, bool, error) {
	return s.Backend.(state.Positioned).Position()
}

func (s *overlapStore) SetPosition(offset int64) error {
	return s.Backend.(state.Positioned).SetPosition(offset)
}

// TestRestoreAppliesStoresSideBySide restores four small changelogs on one
// unit, each read to its end by the first fetch: their chunks are ready
// together and written at once, not one after the other, and the state
// restored is the one logged.
func TestRestoreAppliesStoresSideBySide(t *testing.T) {
	c := kafkatest.New(t)
	in, out := c.CreateTopic(t, 4, nil), c.CreateTopic(t, 4, nil)
	appID := "sidebyside-" + in
	recs, truth := keyedRecords(in, 2000, 200, 7)
	var now, most atomic.Int32
	opener := func(dir string) (state.Backend, error) {
		b, err := onDisk(dir)
		if err != nil {
			return nil, err
		}
		return &overlapStore{Backend: b, now: &now, most: &most}, nil
	}
	run := func() *stream.App {
		t.Helper()
		app, err := runApp(t, countTopology(in, out, opener), stream.Brokers(c.Seeds()...), stream.AppID(appID),
			stream.StateDir(t.TempDir()), stream.Parallelism(1), stream.Logger(testLogger(t)), stream.ExitWhenCaughtUp())
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		return app
	}
	produceAll(t, c.Client(t), recs[:1500])
	run() // builds the changelogs
	most.Store(0)
	produceAll(t, c.Client(t), recs[1500:])
	app := run() // a new state directory: restores, then counts on
	if app.Stats().Restored == 0 {
		t.Fatal("nothing restored")
	}
	if m := most.Load(); m < 2 {
		t.Errorf("at most %d store written at once during the restore, want the four chunks side by side", m)
	}
	if got := lastCounts(t, c, out); !mapsEqual(truth, got) {
		t.Fatalf("counts after the restore differ from the truth: %s", mapDiff(truth, got))
	}
}
