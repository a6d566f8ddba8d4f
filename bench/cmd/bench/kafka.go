package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kgen-dev/kgen/bench/internal/protocol"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// cluster is the harness's admin view of the broker.
type cluster struct {
	brokers []string
	cl      *kgo.Client
	adm     *kadm.Client
}

func dial(brokers []string) (*cluster, error) {
	// kadm answers metadata (topic lists, leaders) from the client's cache
	// for up to MetadataMinAge (5 s by default): too long for a harness
	// that creates, checks and deletes topics every few seconds.
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.MetadataMinAge(10*time.Millisecond))
	if err != nil {
		return nil, err
	}
	c := &cluster{brokers: brokers, cl: cl, adm: kadm.NewClient(cl)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.adm.BrokerMetadata(ctx); err != nil {
		cl.Close()
		return nil, fmt.Errorf("no broker answers at %s: %w", strings.Join(brokers, ","), err)
	}
	return c, nil
}

func (c *cluster) close() { c.cl.Close() }

// createTopic creates a topic and waits until every partition has a leader
// that answers a list-offsets request.
func (c *cluster) createTopic(ctx context.Context, name string, partitions int32, configs map[string]*string) error {
	resp, err := c.adm.CreateTopic(ctx, partitions, -1, configs, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %q: %w", name, err)
	}
	for {
		ends, err := c.adm.ListEndOffsets(ctx, name)
		if err == nil {
			ready := 0
			ends.Each(func(o kadm.ListedOffset) {
				if o.Err == nil {
					ready++
				}
			})
			if ready == int(partitions) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %q: partitions not ready: %w", name, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// endOffsets sums the end offsets of a topic; a topic that does not exist
// has none (ok false).
func (c *cluster) endOffsets(ctx context.Context, topic string) (sum int64, ok bool, err error) {
	ends, err := c.adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, false, err
	}
	var errs []error
	ends.Each(func(o kadm.ListedOffset) {
		switch {
		case errors.Is(o.Err, kerr.UnknownTopicOrPartition):
		case o.Err != nil:
			errs = append(errs, fmt.Errorf("%s/%d: %w", o.Topic, o.Partition, o.Err))
		default:
			ok = true
			sum += o.Offset
		}
	})
	return sum, ok, errors.Join(errs...)
}

// committedMatchesEnds checks that group has committed, for every partition
// of topic, the partition's end offset: it consumed the whole topic.
func (c *cluster) committedMatchesEnds(ctx context.Context, group, topic string) error {
	ends, err := c.adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return err
	}
	committed, err := c.adm.FetchOffsets(ctx, group)
	if err != nil {
		return fmt.Errorf("fetch offsets of group %q: %w", group, err)
	}
	var errs []error
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			errs = append(errs, o.Err)
			return
		}
		got, ok := committed.Lookup(topic, o.Partition)
		switch {
		case !ok && o.Offset == 0:
		case !ok:
			errs = append(errs, fmt.Errorf("partition %d: nothing committed, end offset %d", o.Partition, o.Offset))
		case got.Err != nil:
			errs = append(errs, fmt.Errorf("partition %d: %w", o.Partition, got.Err))
		case got.At != o.Offset:
			errs = append(errs, fmt.Errorf("partition %d: committed %d, end offset %d", o.Partition, got.At, o.Offset))
		}
	})
	return errors.Join(errs...)
}

// cleanup deletes the topics named in known, every topic named prefix or
// starting with prefix+"-", and the consumer group prefix.
func (c *cluster) cleanup(ctx context.Context, prefix string, known ...string) error {
	topics, err := c.adm.ListTopics(ctx)
	if err != nil {
		return fmt.Errorf("list topics: %w", err)
	}
	var doomed []string
	for _, t := range known {
		if t != "" && !slices.Contains(doomed, t) {
			doomed = append(doomed, t)
		}
	}
	for _, t := range topics.Names() {
		if (t == prefix || strings.HasPrefix(t, prefix+"-")) && !slices.Contains(doomed, t) {
			doomed = append(doomed, t)
		}
	}
	var errs []error
	if len(doomed) > 0 {
		resps, err := c.adm.DeleteTopics(ctx, doomed...)
		if err != nil {
			errs = append(errs, fmt.Errorf("delete topics: %w", err))
		}
		for _, r := range resps.Sorted() {
			if r.Err != nil && !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
				errs = append(errs, fmt.Errorf("delete topic %q: %w", r.Topic, r.Err))
			}
		}
	}
	resps, err := c.adm.DeleteGroups(ctx, prefix)
	if err != nil {
		errs = append(errs, fmt.Errorf("delete group: %w", err))
	}
	for _, r := range resps {
		if r.Err != nil && !errors.Is(r.Err, kerr.GroupIDNotFound) {
			errs = append(errs, fmt.Errorf("delete group %q: %w", r.Group, r.Err))
		}
	}
	return errors.Join(errs...)
}

// sourceSpan is the event time the source's records span: record i of n
// has timestamp first + i·span/n (ms), so that the windowed counts' one
// minute windows close one after the other, the same number of them at any
// size. The first is a whole minute, an hour and a minute before the load
// (in the past: brokers refuse timestamps much ahead of their clock).
const sourceSpan = time.Hour

// source describes the loaded input topic.
type source struct {
	Topic      string  `json:"topic"`
	Records    int64   `json:"records"`
	Partitions int32   `json:"partitions"`
	Keys       int     `json:"keys"`
	ZipfS      float64 `json:"zipf_s"`
	ValueSize  int     `json:"value_size"`
	Bytes      int64   `json:"bytes"` // keys and values
	LoadSec    float64 `json:"load_sec"`
	// FirstTimestampMs and SpanMs: record i of n is stamped
	// FirstTimestampMs + i·SpanMs/n.
	FirstTimestampMs int64 `json:"first_timestamp_ms"`
	SpanMs           int64 `json:"span_ms"`
	// Windows is the number of (key, window) pairs the windowed counts
	// fill; ClosedWindows how many of them close (windowed-count-final's
	// outputs).
	Windows       int64            `json:"windows"`
	ClosedWindows int64            `json:"closed_windows"`
	truth         map[string]int64 // records per key
	groups        map[string]int64 // records per protocol.Group of the value
	windows       map[window]int64 // records per key and window
	closed        map[window]bool  // the windows that close
}

// window is a key's window, by its start (ms).
type window struct {
	key   string
	start int64
}

// windowsOf computes, from where every key went and the largest timestamp
// of every partition, which windows close: a window closes once the stream
// time of its partition's task reaches its end plus the grace.
func (src *source) windowsOf(partOf map[string]int32, maxTs map[int32]int64) {
	size, grace := protocol.WindowSize.Milliseconds(), protocol.WindowGrace.Milliseconds()
	src.closed = map[window]bool{}
	for w := range src.windows {
		if w.start+size <= maxTs[partOf[w.key]]-grace {
			src.closed[w] = true
		}
	}
	src.Windows, src.ClosedWindows = int64(len(src.windows)), int64(len(src.closed))
}

func keyName(i uint64) string { return fmt.Sprintf("key-%05d", i) }

// load writes n records with Zipf-distributed keys over keys keys and
// incompressible random values of valueSize bytes, partitioned as Kafka's
// Java producer would.
func (c *cluster) load(ctx context.Context, src *source, seed uint64) error {
	if err := c.createTopic(ctx, src.Topic, src.Partitions, nil); err != nil {
		return err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.brokers...),
		kgo.DefaultProduceTopic(src.Topic),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(1<<20),
	)
	if err != nil {
		return err
	}
	defer cl.Close()
	keyRNG := rand.New(rand.NewPCG(seed, 1))
	zipf := rand.NewZipf(keyRNG, src.ZipfS, 1, uint64(src.Keys-1))
	valRNG := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), 'k', 'g', 'e', 'n'})
	names := make([]string, src.Keys)
	for i := range names {
		names[i] = keyName(uint64(i))
	}
	src.truth = map[string]int64{}
	src.groups = map[string]int64{}
	src.windows = map[window]int64{}
	size := protocol.WindowSize.Milliseconds()
	src.SpanMs = sourceSpan.Milliseconds()
	src.FirstTimestampMs = time.Now().Add(-sourceSpan - time.Minute).Truncate(time.Minute).UnixMilli()
	// Where each key went and each partition's largest timestamp, from the
	// produce callbacks, for which windows close.
	var mu sync.Mutex
	partOf := map[string]int32{}
	maxTs := map[int32]int64{}
	var failed atomic.Pointer[error]
	start := time.Now()
	for i := range src.Records {
		k := names[zipf.Uint64()]
		src.truth[k]++
		v := make([]byte, src.ValueSize)
		_, _ = valRNG.Read(v)
		src.groups[protocol.Group(v)]++
		src.Bytes += int64(len(k) + len(v))
		ts := src.timestamp(i)
		src.windows[window{k, ts - ts%size}]++
		cl.Produce(ctx, &kgo.Record{Key: []byte(k), Value: v, Timestamp: time.UnixMilli(ts)}, func(r *kgo.Record, err error) {
			if err != nil {
				failed.CompareAndSwap(nil, &err)
				return
			}
			mu.Lock()
			partOf[string(r.Key)] = r.Partition
			maxTs[r.Partition] = max(maxTs[r.Partition], r.Timestamp.UnixMilli())
			mu.Unlock()
		})
		if failed.Load() != nil {
			break
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return fmt.Errorf("load %q: flush: %w", src.Topic, err)
	}
	if p := failed.Load(); p != nil {
		return fmt.Errorf("load %q: %w", src.Topic, *p)
	}
	src.LoadSec = time.Since(start).Seconds()
	src.windowsOf(partOf, maxTs)
	got, _, err := c.endOffsets(ctx, src.Topic)
	if err != nil {
		return fmt.Errorf("load %q: %w", src.Topic, err)
	}
	if got != src.Records {
		return fmt.Errorf("load %q: the topic holds %d records, want %d", src.Topic, got, src.Records)
	}
	return nil
}

// writeOther writes the second input of join workload w to topic,
// partitioned by key as the source is. stream-table-join: one row per key
// of the source (protocol.TableRow), each stamped a minute before the
// source's first record, so that a task that reads its inputs in timestamp
// order has its rows before any stream record. stream-stream-join: for each
// mark of protocol.RightMark, one record per key (protocol.RightValue),
// mark by mark, so that timestamps never go back within a partition.
func (c *cluster) writeOther(ctx context.Context, topic, w string, src *source) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.brokers...),
		kgo.DefaultProduceTopic(topic),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
	)
	if err != nil {
		return err
	}
	defer cl.Close()
	var failed atomic.Pointer[error]
	produce := func(k string, v []byte, ts int64) {
		cl.Produce(ctx, &kgo.Record{Key: []byte(k), Value: v, Timestamp: time.UnixMilli(ts)}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.CompareAndSwap(nil, &err)
			}
		})
	}
	switch w {
	case protocol.StreamTableJoin:
		for i := range src.Keys {
			k := keyName(uint64(i))
			produce(k, protocol.TableRow(k), src.FirstTimestampMs-time.Minute.Milliseconds())
		}
	case protocol.StreamStreamJoin:
		for j := range protocol.RightMarks {
			for i := range src.Keys {
				k := keyName(uint64(i))
				produce(k, protocol.RightValue(k), protocol.RightMark(src.FirstTimestampMs, j))
			}
		}
	default:
		return fmt.Errorf("%s joins nothing", w)
	}
	if err := cl.Flush(ctx); err != nil {
		return fmt.Errorf("write %q: flush: %w", topic, err)
	}
	if p := failed.Load(); p != nil {
		return fmt.Errorf("write %q: %w", topic, *p)
	}
	return nil
}

// joinOutputs is the number of pairs stream-stream-join makes of the
// source and the right stream writeOther writes: every key has a right
// record at every mark, so a source record stamped t joins one per mark
// within protocol.JoinWindow of t (both ends included, as Kafka Streams'
// JoinWindows), whatever its key.
func (src *source) joinOutputs() int64 {
	d := protocol.JoinWindow.Milliseconds()
	var n int64
	for i := range src.Records {
		ts := src.timestamp(i)
		for j := range protocol.RightMarks {
			if m := protocol.RightMark(src.FirstTimestampMs, j); ts >= m-d && ts <= m+d {
				n++
			}
		}
	}
	return n
}

// timestamp is the timestamp of source record i.
func (src *source) timestamp(i int64) int64 {
	return src.FirstTimestampMs + int64(float64(i)*float64(src.SpanMs)/float64(src.Records))
}

// readTopic reads topic from the start and calls fn for every record. With
// committed (exactly-once runs) it reads only committed records and, since
// transaction markers take offsets no record is returned for, it stops
// once no record has come for idle; otherwise it stops at the end offsets.
func (c *cluster) readTopic(ctx context.Context, topic string, committed bool, fn func(*kgo.Record)) error {
	const idle = 2 * time.Second
	ends, err := c.adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return fmt.Errorf("end offsets of %q: %w", topic, err)
	}
	offsets := map[string]map[int32]kgo.Offset{topic: {}}
	remaining := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			offsets[topic][o.Partition] = kgo.NewOffset().AtStart()
			remaining[o.Partition] = o.Offset
		}
	})
	if len(remaining) == 0 {
		return nil
	}
	opts := []kgo.Opt{kgo.SeedBrokers(c.brokers...), kgo.ConsumePartitions(offsets)}
	if committed {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	last := time.Now()
	for len(remaining) > 0 {
		pctx, cancel := context.WithTimeout(ctx, 250*time.Millisecond)
		fetches := cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("read %q: %w (%d partitions not read to the end)", topic, err, len(remaining))
		}
		var ferr error
		fetches.EachError(func(_ string, p int32, err error) {
			if ferr == nil && !errors.Is(err, context.DeadlineExceeded) {
				ferr = fmt.Errorf("read %s/%d: %w", topic, p, err)
			}
		})
		if ferr != nil {
			return ferr
		}
		fetches.EachRecord(func(r *kgo.Record) {
			last = time.Now()
			fn(r)
			if r.Offset+1 >= remaining[r.Partition] {
				delete(remaining, r.Partition)
			}
		})
		if time.Since(last) > idle {
			if committed {
				return nil // the rest are transaction markers
			}
			return fmt.Errorf("read %q: nothing new for %v with %d partitions not read to the end", topic, idle, len(remaining))
		}
	}
	return nil
}

// countRecords counts the records of topic a consumer sees.
func (c *cluster) countRecords(ctx context.Context, topic string, committed bool) (int64, error) {
	var n int64
	err := c.readTopic(ctx, topic, committed, func(*kgo.Record) { n++ })
	return n, err
}

// checkCounts reads a count workload's output topic and checks that the
// last count of every key is the number of input records with that key.
func (c *cluster) checkCounts(ctx context.Context, topic string, committed bool, truth map[string]int64) error {
	last := map[string]int64{}
	var bad []string
	err := c.readTopic(ctx, topic, committed, func(r *kgo.Record) {
		if len(r.Value) != 8 {
			if len(bad) < 5 {
				bad = append(bad, fmt.Sprintf("%d/%d: value of %d bytes, want 8", r.Partition, r.Offset, len(r.Value)))
			}
			return
		}
		n := int64(binary.BigEndian.Uint64(r.Value))
		last[string(r.Key)] = max(last[string(r.Key)], n)
	})
	if err != nil {
		return err
	}
	for k, want := range truth {
		if got := last[k]; got != want && len(bad) < 5 {
			bad = append(bad, fmt.Sprintf("key %q: last count %d, want %d", k, got, want))
		}
	}
	for k := range last {
		if _, ok := truth[k]; !ok && len(bad) < 5 {
			bad = append(bad, fmt.Sprintf("key %q: counted but never produced", k))
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		return fmt.Errorf("counts in %q differ from the input: %s", topic, strings.Join(bad, "; "))
	}
	return nil
}

// checkWindowCounts reads a windowed count's output topic (keys: the key
// and the window start, 8 bytes big-endian, as Kafka Streams' time-windowed
// serde; values: 8-byte counts) and checks it against the source. Emitting
// updates (final false), every window of the source must be there and its
// last count be its number of records; emitting final results, exactly the
// windows that close must be there, once each, with that count.
func (c *cluster) checkWindowCounts(ctx context.Context, topic string, committed, final bool, truth map[window]int64, closed map[window]bool) error {
	last := map[window]int64{}
	seen := map[window]int{}
	var bad []string
	note := func(format string, args ...any) {
		if len(bad) < 5 {
			bad = append(bad, fmt.Sprintf(format, args...))
		}
	}
	err := c.readTopic(ctx, topic, committed, func(r *kgo.Record) {
		if len(r.Key) < 8 || len(r.Value) != 8 {
			note("%d/%d: key of %d bytes, value of %d bytes, want a windowed key and 8", r.Partition, r.Offset, len(r.Key), len(r.Value))
			return
		}
		w := window{string(r.Key[:len(r.Key)-8]), int64(binary.BigEndian.Uint64(r.Key[len(r.Key)-8:]))}
		last[w] = max(last[w], int64(binary.BigEndian.Uint64(r.Value)))
		seen[w]++
	})
	if err != nil {
		return err
	}
	bad = append(bad, compareWindows(last, seen, final, truth, closed)...)
	if len(bad) > 0 {
		slices.Sort(bad)
		return fmt.Errorf("windowed counts in %q differ from the input: %s", topic, strings.Join(bad[:min(len(bad), 5)], "; "))
	}
	return nil
}

// compareWindows compares a windowed count's output, the largest count
// and the number of records seen per window, with the source: emitting
// updates, every window with its count; final, exactly the windows that
// close, once each. It returns up to five differences.
func compareWindows(last map[window]int64, seen map[window]int, final bool, truth map[window]int64, closed map[window]bool) []string {
	var bad []string
	note := func(format string, args ...any) {
		if len(bad) < 5 {
			bad = append(bad, fmt.Sprintf(format, args...))
		}
	}
	want := truth
	if final {
		want = map[window]int64{}
		for w := range closed {
			want[w] = truth[w]
		}
	}
	for w, n := range want {
		if got := last[w]; got != n {
			note("key %q window %d: last count %d, want %d", w.key, w.start, got, n)
		}
		if final && seen[w] > 1 {
			note("key %q window %d: emitted %d times, want once", w.key, w.start, seen[w])
		}
	}
	for w := range last {
		if _, ok := want[w]; !ok {
			if final {
				note("key %q window %d: emitted, but not a window of the source that closes", w.key, w.start)
			} else {
				note("key %q window %d: emitted, but not a window of the source", w.key, w.start)
			}
		}
	}
	return bad
}

// restoreWindowKeys is how many keys the window store RestoreWindow
// restores has: its entries are spread over them, a window each per minute.
const restoreWindowKeys = 10_000

// writeChangelog fills a store's changelog topic, for the restore
// workloads, with entries distinct entries in the format the store logs
// (protocol.KVStore: key "rkey-<n>", valueSize random bytes;
// protocol.WindowStore: restoreWindowKeys keys × one-minute windows, key ‖
// start ‖ sequence number 0, an 8-byte count), and returns their bytes
// (keys and values).
func (c *cluster) writeChangelog(ctx context.Context, topic, store string, entries int64, valueSize int, seed uint64) (int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.brokers...),
		kgo.DefaultProduceTopic(topic),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(1<<20),
	)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	valRNG := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), 'r', 'e', 's', 't'})
	first := time.Now().Add(-time.Duration(entries/restoreWindowKeys+1) * time.Minute).Truncate(time.Minute).UnixMilli()
	var failed atomic.Pointer[error]
	var n int64
	for i := range entries {
		var r *kgo.Record
		switch store {
		case protocol.KVStore:
			v := make([]byte, valueSize)
			_, _ = valRNG.Read(v)
			r = &kgo.Record{Key: fmt.Appendf(nil, "rkey-%08d", i), Value: v}
		default:
			start := first + (i/restoreWindowKeys)*protocol.WindowSize.Milliseconds()
			k := fmt.Appendf(make([]byte, 0, 24), "key-%05d", i%restoreWindowKeys)
			k = binary.BigEndian.AppendUint64(k, uint64(start))
			k = binary.BigEndian.AppendUint32(k, 0)
			r = &kgo.Record{Key: k, Value: binary.BigEndian.AppendUint64(nil, uint64(i+1)), Timestamp: time.UnixMilli(start)}
		}
		n += int64(len(r.Key) + len(r.Value))
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.CompareAndSwap(nil, &err)
			}
		})
		if failed.Load() != nil {
			break
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, fmt.Errorf("fill %q: flush: %w", topic, err)
	}
	if p := failed.Load(); p != nil {
		return 0, fmt.Errorf("fill %q: %w", topic, *p)
	}
	return n, nil
}
