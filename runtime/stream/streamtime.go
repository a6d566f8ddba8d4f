package stream

import (
	"cmp"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Stream time, as Kafka Streams keeps it: each input partition of a task has
// a partition time (the largest timestamp taken from it), the task's stream
// time is the largest of them, and each operator that closes windows keeps
// the time it has observed itself (ObservedTime). All of them are written
// into the metadata of the offsets a commit writes, and read back from the
// group's committed offsets when a task is created, so a restart or a task
// moving to another instance resumes them instead of starting from nothing.

// ObservedTime is the stream time one operator keeps for itself: the largest
// timestamp it was given through Observe. A window or a join closes by it, so
// that only the records that reached the operator move it: a window behind a
// filter does not close because of a record the filter dropped, as it would
// by the task's StreamTime.
//
// It is committed with the task's input offsets and restored when the task is
// created again (after a crash, a clean restart or on another instance after
// a rebalance) from the last commit, before the processor's Init runs. Get it
// from the Context in Init and keep it. It belongs to its task's goroutine.
type ObservedTime struct {
	t       *task
	key     opKey
	ms      int64 // -1 before anything was observed
	claimed bool  // asked for by a processor of the running topology
}

// opKey names an observed time: its node and the name the node gave it.
type opKey struct{ node, name string }

// Observe moves the observed time to ts if ts is later.
func (o *ObservedTime) Observe(ts time.Time) { o.ObserveMillis(ts.UnixMilli()) }

// ObserveMillis is Observe with a timestamp in epoch milliseconds.
func (o *ObservedTime) ObserveMillis(ms int64) {
	if ms > o.ms {
		o.ms = ms
		o.t.timesDirty = true
	}
}

// Get is the observed time; the zero time before anything was observed.
func (o *ObservedTime) Get() time.Time { return fromMillis(o.ms) }

// Millis is the observed time in epoch milliseconds; -1 before anything was
// observed.
func (o *ObservedTime) Millis() int64 { return o.ms }

// ObservedTime returns this processor's observed time called name (a
// processor may keep several, e.g. one per side of a join): the largest
// timestamp it has passed to ObservedTime.Observe, restored from the last
// commit. The same name returns the same handle. Call it in Init.
func (c *nodeContext) ObservedTime(name string) *ObservedTime {
	o := c.t.observedTime(opKey{c.name, name})
	if !o.claimed {
		o.claimed = true
		c.t.claimedTimes = append(c.t.claimedTimes, o)
		c.t.claimedSorted = false
	}
	return o
}

// observedTime returns the task's entry for k, made on first use.
func (t *task) observedTime(k opKey) *ObservedTime {
	o := t.observed[k]
	if o == nil {
		if t.observed == nil {
			t.observed = map[opKey]*ObservedTime{}
		}
		o = &ObservedTime{t: t, key: k, ms: -1}
		t.observed[k] = o
	}
	return o
}

// restoreTimes sets the task's partition, stream and observed times from the
// metadata of its inputs' committed offsets (meta by input topic; a topic
// missing or with no metadata has none), then runs the processors' Init if it
// waited for them. Metadata kgen did not write (another client's, Kafka
// Streams' own) is ignored.
func (t *task) restoreTimes(meta map[string]string) error {
	for _, in := range t.inputs {
		m := meta[in.topic()]
		if m == "" {
			continue
		}
		ct, err := decodeTimes(m)
		if err != nil {
			t.env.config().logger.Debug("ignoring committed offset metadata kgen did not write",
				"task", t.id.String(), "topic", in.topic(), "partition", t.id.Partition, "reason", err)
			continue
		}
		st := in.state()
		st.time = max(st.time, ct.partition)
		t.streamTime = max(t.streamTime, ct.partition)
		for _, op := range ct.ops {
			o := t.observedTime(op.key)
			o.ms = max(o.ms, op.ms)
		}
	}
	t.timesPending = false
	if t.initDeferred {
		t.initDeferred = false
		return t.initProcessors()
	}
	return nil
}

// commitMetadata is what a commit writes beside in's offset: its partition
// time and the task's observed times. Every input of the task carries the
// observed times (a commit may move only some of them) and a reader takes
// the largest of each, since they only grow.
func (t *task) commitMetadata(in input) string {
	if !t.claimedSorted {
		slices.SortFunc(t.claimedTimes, func(a, b *ObservedTime) int {
			return cmp.Or(strings.Compare(a.key.node, b.key.node), strings.Compare(a.key.name, b.key.name))
		})
		t.claimedSorted = true
	}
	ops := make([]opTime, 0, len(t.claimedTimes))
	for _, o := range t.claimedTimes {
		if o.ms >= 0 {
			ops = append(ops, opTime{o.key, o.ms})
		}
	}
	pt := in.state().time
	if pt < 0 && len(ops) == 0 {
		return ""
	}
	meta, n := encodeTimes(pt, ops, offsetMetadataMax)
	if n < len(ops) && !t.timesTruncated {
		t.timesTruncated = true
		t.env.config().logger.Warn("observed times do not fit in the commit's offset metadata; the ones left out start afresh after a restart",
			"task", t.id.String(), "kept", n, "left_out", len(ops)-n, "limit_bytes", offsetMetadataMax)
	}
	return meta
}

// The committed form of a task input's times, in the metadata string of its
// offset commit:
//
//	"kgen1:" base64(varint partition_time, uvarint n,
//	                n × (uvarint len, node, uvarint len, name, varint time − partition_time))
//
// base64 (standard alphabet, no padding) because Kafka keeps metadata as a
// UTF-8 string; varints, and times relative to the partition time (they are
// close to it), to stay small: Kafka refuses metadata over
// offset.metadata.max.bytes (4096 by default), so the encoder leaves out the
// observed times that would not fit (a warning says so) rather than have the
// commit fail. The version is in the prefix: a reader that does not know it
// ignores the metadata, as it ignores any other client's.
const timesPrefix = "kgen1:"

// offsetMetadataMax is Kafka's default offset.metadata.max.bytes.
const offsetMetadataMax = 4096

// committedTimes is one input's decoded metadata.
type committedTimes struct {
	partition int64 // -1: none
	ops       []opTime
}

type opTime struct {
	key opKey
	ms  int64
}

// errForeignMetadata is metadata that does not start with kgen's prefix.
var errForeignMetadata = errors.New("not kgen's stream times")

// encodeTimes encodes a partition time and observed times (sorted, each
// written once) into at most limit bytes, leaving out the observed times
// from the first that does not fit; n is how many it kept.
func encodeTimes(partition int64, ops []opTime, limit int) (meta string, n int) {
	maxBlob := base64.RawStdEncoding.DecodedLen(limit - len(timesPrefix))
	var body []byte
	for _, op := range ops {
		before := len(body)
		body = binary.AppendUvarint(body, uint64(len(op.key.node)))
		body = append(body, op.key.node...)
		body = binary.AppendUvarint(body, uint64(len(op.key.name)))
		body = append(body, op.key.name...)
		body = binary.AppendVarint(body, op.ms-partition)
		if head := binary.MaxVarintLen64 + binary.MaxVarintLen64; head+len(body) > maxBlob {
			// The head's real size is smaller, but the count is only known
			// once the body is: a bound keeps this one pass.
			body = body[:before]
			break
		}
		n++
	}
	blob := binary.AppendVarint(make([]byte, 0, 2*binary.MaxVarintLen64+len(body)), partition)
	blob = binary.AppendUvarint(blob, uint64(n))
	blob = append(blob, body...)
	return timesPrefix + base64.RawStdEncoding.EncodeToString(blob), n
}

// decodeTimes reads metadata written by encodeTimes. It reads untrusted
// bytes (any client may commit the group's offsets with any metadata): it
// never panics and returns an error for anything it did not write.
func decodeTimes(meta string) (committedTimes, error) {
	ct := committedTimes{partition: -1}
	rest, ok := strings.CutPrefix(meta, timesPrefix)
	if !ok {
		return ct, errForeignMetadata
	}
	if len(rest) > offsetMetadataMax {
		return ct, fmt.Errorf("stream times: %d bytes, more than the %d written", len(rest), offsetMetadataMax)
	}
	blob, err := base64.RawStdEncoding.DecodeString(rest)
	if err != nil {
		return ct, fmt.Errorf("stream times: %w", err)
	}
	r := timesReader{b: blob}
	pt := r.varint()
	n := r.uvarint()
	// Each entry takes at least three bytes: a bound before allocating.
	if r.err == nil && n > uint64(len(r.b))/3 {
		r.err = fmt.Errorf("%d observed times in %d bytes", n, len(r.b))
	}
	if r.err == nil {
		ct.ops = make([]opTime, 0, n)
	}
	for i := uint64(0); r.err == nil && i < n; i++ {
		node := r.str()
		name := r.str()
		d := r.varint()
		ct.ops = append(ct.ops, opTime{opKey{node, name}, pt + d})
	}
	if r.err == nil && len(r.b) > 0 {
		r.err = fmt.Errorf("%d bytes after the observed times", len(r.b))
	}
	if r.err != nil {
		return committedTimes{partition: -1}, fmt.Errorf("stream times: %w", r.err)
	}
	// A negative time means none; anything below -1 is not ours either.
	if pt < -1 {
		return committedTimes{partition: -1}, fmt.Errorf("stream times: partition time %d", pt)
	}
	ct.partition = pt
	ct.ops = slices.DeleteFunc(ct.ops, func(op opTime) bool { return op.ms < 0 })
	return ct, nil
}

// timesReader reads varints and strings, keeping the first error.
type timesReader struct {
	b   []byte
	err error
}

func (r *timesReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errors.New("truncated or overlong varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *timesReader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errors.New("truncated or overlong varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *timesReader) str() string {
	n := r.uvarint()
	if r.err != nil {
		return ""
	}
	if n > uint64(len(r.b)) {
		r.err = fmt.Errorf("a name of %d bytes in %d", n, len(r.b))
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}
