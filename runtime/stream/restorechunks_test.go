package stream_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
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
	if most := restoreOverlapped(t, 4, 1, 2000, 200, 7); most < 2 {
		t.Errorf("at most %d store written at once during the restore, want the four chunks side by side", most)
	}
}

// restoreOverlapped counts the first three quarters of records over keys
// keys (keyedRecords, seed) in a topic of partitions partitions, which
// builds the changelogs, then restores them in a new state directory on
// parallelism units, every one read whole by the first fetch, and counts
// the rest. It checks the counts and returns how many stores were written
// at once at most during the restore.
func restoreOverlapped(t *testing.T, partitions, parallelism, records, keys int, seed uint64) int32 {
	t.Helper()
	c := kafkatest.New(t)
	in, out := c.CreateTopic(t, int32(partitions), nil), c.CreateTopic(t, int32(partitions), nil)
	appID := "overlap-" + in
	recs, truth := keyedRecords(in, records, keys, seed)
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
			stream.StateDir(t.TempDir()), stream.Parallelism(parallelism), stream.Logger(testLogger(t)), stream.ExitWhenCaughtUp())
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		return app
	}
	built := records * 3 / 4
	produceAll(t, c.Client(t), recs[:built])
	run() // builds the changelogs
	most.Store(0)
	produceAll(t, c.Client(t), recs[built:])
	app := run() // a new state directory: restores, then counts on
	if app.Stats().Restored == 0 {
		t.Fatal("nothing restored")
	}
	if got := lastCounts(t, c, out); !mapsEqual(truth, got) {
		t.Fatalf("counts after the restore differ from the truth: %s", mapDiff(truth, got))
	}
	return most.Load()
}

// spanStore is a Pebble store that records when each of its batches began
// and ended, and holds the first batch of the stores slow names until a
// batch of another store begins (others closed), or at most slowHold: so
// that a restore writing the others meanwhile is seen doing it however
// long their reading takes, and one that waits for the slow store is seen
// waiting.
type spanStore struct {
	state.Backend
	dir    string
	slow   func(dir string) bool
	spans  *sync.Map // dir -> []span
	mu     *sync.Mutex
	others chan struct{}
	once   *sync.Once
}

// slowHold bounds how long a slow spanStore holds its first batch.
const slowHold = 20 * time.Second

type span struct{ from, to time.Time }

func (s *spanStore) ApplyBatch(changes []state.Change) error {
	from := time.Now()
	s.mu.Lock()
	v, _ := s.spans.Load(s.dir)
	first := v == nil
	s.mu.Unlock()
	switch {
	case !s.slow(s.dir):
		s.once.Do(func() { close(s.others) })
	case first:
		select {
		case <-s.others:
		case <-time.After(slowHold):
		}
	}
	err := s.Backend.(state.Restorer).ApplyBatch(changes)
	s.mu.Lock()
	old, _ := s.spans.Load(s.dir)
	spans, _ := old.([]span)
	s.spans.Store(s.dir, append(spans, span{from, time.Now()}))
	s.mu.Unlock()
	return err
}

func (s *spanStore) Position() (int64, bool, error) {
	return s.Backend.(state.Positioned).Position()
}

func (s *spanStore) SetPosition(offset int64) error {
	return s.Backend.(state.Positioned).SetPosition(offset)
}

// TestRestoreStartsAChunkWhileOthersAreWritten restores two changelogs on
// one unit: partition 0's is short and read whole by the first fetch, and
// its chunk's write is held until another store's begins (at most 20 s);
// partition 1's is read in many small fetches meanwhile. The chunk that ends partition 1 is written as soon as
// it is read, while partition 0's is still being written, not after it
// (when the unit's next step would have started it), and the state
// restored is the one logged.
func TestRestoreStartsAChunkWhileOthersAreWritten(t *testing.T) {
	c := kafkatest.New(t)
	in, out := c.CreateTopic(t, 2, nil), c.CreateTopic(t, 2, nil)
	appID := "startwhile-" + in
	var recs []*kgo.Record
	truth := map[string]int64{}
	for i := range 1200 {
		p := int32(1)
		if i%100 == 0 {
			p = 0 // a few records
		}
		k := fmt.Sprintf("key-%d-%d", p, i%400) // the cache logs a key once a commit
		truth[k]++
		recs = append(recs, &kgo.Record{Topic: in, Partition: p, Key: []byte(k), Value: []byte("v")})
	}
	produceAll(t, c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner())), recs[:900])
	var spans sync.Map
	var mu sync.Mutex
	var once sync.Once
	others := make(chan struct{})
	slow := func(dir string) bool { return strings.Contains(dir, "0_0") }
	run := func(restoring bool) *stream.App {
		t.Helper()
		opener := func(dir string) (state.Backend, error) {
			b, err := onDisk(dir)
			if err != nil {
				return nil, err
			}
			if !restoring {
				return b, nil
			}
			return &spanStore{Backend: b, dir: dir, slow: slow, spans: &spans, mu: &mu, others: others, once: &once}, nil
		}
		// Small fetches: partition 1's changelog takes many.
		app, err := runApp(t, countTopology(in, out, opener), stream.Brokers(c.Seeds()...), stream.AppID(appID),
			stream.StateDir(t.TempDir()), stream.Parallelism(1), stream.Logger(testLogger(t)), stream.ExitWhenCaughtUp(),
			stream.ClientOpts(kgo.ProducerBatchMaxBytes(1<<10), kgo.FetchMaxPartitionBytes(512)))
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		return app
	}
	run(false) // builds the changelogs
	produceAll(t, c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner())), recs[900:])
	app := run(true) // a new state directory: restores both, then counts on
	if got := app.Stats().Restored; got < 400 {
		t.Fatalf("restored %d records, want some 400", got)
	}
	var slowSpan, last span
	spans.Range(func(k, v any) bool {
		dir, ss := k.(string), v.([]span)
		if slow(dir) {
			slowSpan = ss[0]
		} else {
			last = ss[0] // partition 1's restore: one chunk
		}
		return true
	})
	if slowSpan.from.IsZero() || last.from.IsZero() {
		t.Fatalf("batches seen: slow %v, other %v", slowSpan, last)
	}
	if !last.from.Before(slowSpan.to) {
		t.Errorf("partition 1's chunk began %v after partition 0's (held until another began, at most 20 s) ended, want it written meanwhile",
			last.from.Sub(slowSpan.to))
	}
	if got := lastCounts(t, c, out); !mapsEqual(truth, got) {
		t.Fatalf("counts after the restore differ from the truth: %s", mapDiff(truth, got))
	}
}

// slowStore is a Pebble store whose batches take a while, as long as slow
// is set.
type slowStore struct {
	state.Backend
	slow *atomic.Bool
}

func (s *slowStore) ApplyBatch(changes []state.Change) error {
	if s.slow.Load() {
		time.Sleep(500 * time.Millisecond)
	}
	return s.Backend.(state.Restorer).ApplyBatch(changes)
}

func (s *slowStore) Position() (int64, bool, error) {
	return s.Backend.(state.Positioned).Position()
}

func (s *slowStore) SetPosition(offset int64) error {
	return s.Backend.(state.Positioned).SetPosition(offset)
}

// restoreEvents is a log handler that keeps, besides passing them on, the
// restores begun past the changelog's start (their tasks and first
// offsets) and how many times tasks were revoked.
type restoreEvents struct {
	slog.Handler
	mu      *sync.Mutex
	resumed *[]string
	revoked *int
}

func (h restoreEvents) Handle(ctx context.Context, r slog.Record) error {
	switch r.Message {
	case "restoring store":
		var task string
		var from int64
		r.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "task":
				task = a.Value.String()
			case "from":
				from = a.Value.Int64()
			}
			return true
		})
		if from > 0 {
			h.mu.Lock()
			*h.resumed = append(*h.resumed, fmt.Sprintf("%s from=%d", task, from))
			h.mu.Unlock()
		}
	case "tasks revoked":
		h.mu.Lock()
		*h.revoked++
		h.mu.Unlock()
	}
	return h.Handler.Handle(ctx, r)
}

func (h restoreEvents) WithAttrs(as []slog.Attr) slog.Handler {
	h.Handler = h.Handler.WithAttrs(as)
	return h
}

func (h restoreEvents) WithGroup(name string) slog.Handler {
	h.Handler = h.Handler.WithGroup(name)
	return h
}

// TestRestoreRevokedMidwayLosesNothing revokes a task in the middle of its
// restore, with records read and not applied, and gives it back: instance
// A restores two stores slowly, a chunk of 2 KiB a step each and as much
// again read ahead (what it may hold, 6 KiB, stops it there), half a
// second a chunk, so that B's join and the rebalance it brings (seconds
// on a busy machine) end well before A's restore would; instance B
// joins once A applied some of each, and takes one of the tasks (A drops
// what it read of it and did not apply); B catches up and leaves; A takes
// the task back and resumes its restore from the position its store
// reached, then counts more records. Every count comes out right: nothing
// was lost or applied twice on the way.
func TestRestoreRevokedMidwayLosesNothing(t *testing.T) {
	stream.SetRestoreChunks(t, 2<<10, 6<<10)
	c := kafkatest.New(t)
	in, out := c.CreateTopic(t, 2, nil), c.CreateTopic(t, 2, nil)
	appID := "revokedmidway-" + in
	recs, truth := keyedRecords(in, 6000, 4000, 9)
	cl := c.Client(t)
	// Small batches and fetches, a batch or two a partition: a
	// partition's limit under its batches' size would starve the second
	// partition, since a broker passes the limit only for the first
	// partition it fills (KIP-74), and kfake fills first the partitions
	// an incremental fetch names (those that moved on, so the first one
	// again), where a broker sends last those that just returned data.
	opts := func(dir string, log *slog.Logger) []stream.Option {
		return []stream.Option{stream.Brokers(c.Seeds()...), stream.AppID(appID), stream.StateDir(dir),
			stream.Parallelism(1), stream.Logger(log), stream.CommitInterval(200 * time.Millisecond),
			stream.ClientOpts(kgo.ProducerBatchMaxBytes(1<<10), kgo.FetchMaxPartitionBytes(2<<10))}
	}
	produceAll(t, cl, recs[:4000])
	if _, err := runApp(t, countTopology(in, out, onDisk), append(opts(t.TempDir(), testLogger(t)), stream.ExitWhenCaughtUp())...); err != nil {
		t.Fatalf("Run: %v", err) // builds the changelogs
	}
	produceAll(t, cl, recs[4000:5000])

	var mu sync.Mutex
	var resumed []string
	var revoked int
	logA := slog.New(restoreEvents{Handler: testLogger(t).Handler(), mu: &mu, resumed: &resumed, revoked: &revoked})
	var slowly atomic.Bool
	slowly.Store(true)
	slow := func(dir string) (state.Backend, error) {
		b, err := onDisk(dir)
		if err != nil {
			return nil, err
		}
		return &slowStore{Backend: b, slow: &slowly}, nil
	}
	appA, err := stream.New(countTopology(in, out, slow), opts(t.TempDir(), logA)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	doneA := make(chan error, 1)
	go func() { doneA <- appA.Run(ctx) }()
	changelog := appID + "-counts-changelog"
	ends, err := c.Admin(t).ListEndOffsets(ctx, changelog)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "A to restore part of each store", func() bool {
		st := appA.Stats()
		for p := range int32(2) {
			end, _ := ends.Lookup(changelog, p)
			ts, ok := st.Tasks[stream.TaskID{Partition: p}]
			if !ok || !ts.Restoring || ts.RestoreRemaining >= end.Offset {
				return false
			}
		}
		return true
	})

	appB, err := stream.New(countTopology(in, out, onDisk), append(opts(t.TempDir(), testLogger(t)), stream.ExitWhenCaughtUp())...)
	if err != nil {
		t.Fatal(err)
	}
	doneB := make(chan error, 1)
	go func() { doneB <- appB.Run(ctx) }()
	waitFor(t, "A to give B a task", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return revoked > 0
	})
	slowly.Store(false)
	if err := <-doneB; err != nil {
		t.Fatalf("Run B: %v", err)
	}
	waitFor(t, "A to hold every task, restored", func() bool {
		st := appA.Stats()
		return len(st.Tasks) == 2 && st.RestoreRemaining == 0
	})
	produceAll(t, cl, recs[5000:])
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		got := lastCounts(t, c, out)
		if mapsEqual(truth, got) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("counts differ from the truth: %s", mapDiff(truth, got))
		}
	}
	cancel()
	if err := <-doneA; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("Run A: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(resumed) == 0 {
		t.Fatalf("A resumed no restore from its store's position: want the revoked task's")
	}
	t.Logf("A resumed %v", resumed)
}

// TestAssignmentWakesThePoll restores a store on a unit whose first poll
// may block for a minute: the assignment that gives it the task ends that
// poll, so the restore (and the run, which exits once caught up) takes
// moments, not the poll's minute. The inputs have nothing new: no record
// would end the poll either.
func TestAssignmentWakesThePoll(t *testing.T) {
	c := kafkatest.New(t)
	in, out := c.CreateTopic(t, 1, nil), c.CreateTopic(t, 1, nil)
	appID := "wake-" + in
	recs, truth := keyedRecords(in, 500, 100, 3)
	produceAll(t, c.Client(t), recs)
	run := func() (*stream.App, time.Duration) {
		t.Helper()
		began := time.Now()
		app, err := runApp(t, countTopology(in, out, onDisk), stream.Brokers(c.Seeds()...), stream.AppID(appID),
			stream.StateDir(t.TempDir()), stream.Parallelism(1), stream.Logger(testLogger(t)), stream.ExitWhenCaughtUp())
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		return app, time.Since(began)
	}
	run() // builds the changelog
	stream.SetFirstPollWait(t, time.Minute)
	app, took := run() // a new state directory: restores, nothing to count
	if app.Stats().Restored == 0 {
		t.Fatal("nothing restored")
	}
	if took > 20*time.Second {
		t.Errorf("the run took %v: the restore waited for the unit's first poll to time out", took.Round(time.Millisecond))
	}
	if got := lastCounts(t, c, out); !mapsEqual(truth, got) {
		t.Fatalf("counts differ from the truth: %s", mapDiff(truth, got))
	}
}

// TestRestoreWritesAtMostItsSlotsAtOnce restores eight changelogs on two
// units, every one read whole by the first fetch, with room for three
// chunks written at once in the App: never more are written together,
// though all are ready together, yet side by side, and the state restored
// is the one logged.
func TestRestoreWritesAtMostItsSlotsAtOnce(t *testing.T) {
	stream.SetRestoreApplySlots(t, 3)
	if m := restoreOverlapped(t, 8, 2, 4000, 400, 11); m > 3 || m < 2 {
		t.Errorf("at most %d stores written at once during the restore, want 2 or 3 (side by side, within the App's 3 slots)", m)
	}
}

// TestStalledRestoreIsReadAgain has the restore client stop fetching one
// changelog partition, as one that dropped it would: once the store's
// restore has stood still for the stall time, the reader reads that
// changelog again from the store's position, counts it, and the restore
// ends with every count right (the counts go on from the restored ones).
// Without it the run would wait for the partition forever.
func TestStalledRestoreIsReadAgain(t *testing.T) {
	stream.SetRestoreStallAfter(t, 2*time.Second)
	c := kafkatest.New(t)
	in, out := c.CreateTopic(t, 2, nil), c.CreateTopic(t, 2, nil)
	appID := "stalled-" + in
	recs, truth := keyedRecords(in, 3000, 500, 13)
	cl := c.Client(t)
	run := func() *stream.App {
		t.Helper()
		app, err := runApp(t, countTopology(in, out, onDisk), stream.Brokers(c.Seeds()...), stream.AppID(appID),
			stream.StateDir(t.TempDir()), stream.Parallelism(1), stream.Logger(testLogger(t)), stream.ExitWhenCaughtUp())
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		return app
	}
	produceAll(t, cl, recs[:2000])
	if st := run().Stats(); st.RestoreStalls != 0 {
		t.Fatalf("%d restore stalls with nothing to restore", st.RestoreStalls)
	}
	produceAll(t, cl, recs[2000:])
	stream.PauseRestoreOnce(t, appID+"-counts-changelog", 1)
	st := run().Stats() // a new state directory: restores both stores
	if st.RestoreStalls != 1 {
		t.Errorf("%d restore stalls, want 1 (the paused partition's)", st.RestoreStalls)
	}
	if st.Restored == 0 {
		t.Error("nothing restored")
	}
	if got := lastCounts(t, c, out); !mapsEqual(truth, got) {
		t.Fatalf("counts differ from the truth: %s", mapDiff(truth, got))
	}
}
