// Package track counts a Go contender's progress against what its workload
// must do, and stamps the moments the harness measures: first and last input
// record, first output acknowledged, and the acknowledgement that completed
// the expected output. It is safe for concurrent use; the hot path is one
// atomic add per event, and the clock is read only at the stamped moments.
package track

import (
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/kgen-dev/kgen/bench/internal/protocol"
)

// Tracker follows one contender run.
type Tracker struct {
	inputs int64
	exp    protocol.Expect

	consumed, sink, changelog atomic.Int64

	firstRecord, lastRecord, firstOutput, lastOutput, doneAt atomic.Int64
	cpuFirst, cpuDone                                        atomic.Int64

	left atomic.Int32 // conditions not met yet
	done chan struct{}
	once sync.Once
}

// New returns a tracker expecting inputs input records and exp outputs,
// acknowledged by the broker.
func New(inputs int64, exp protocol.Expect) *Tracker {
	t := &Tracker{inputs: inputs, exp: exp, done: make(chan struct{})}
	n := int32(1)
	if exp.Sink > 0 {
		n++
	}
	if exp.Changelog > 0 {
		n++
	}
	t.left.Store(n)
	return t
}

// NewTransactional returns a tracker for exactly-once runs: counts and
// first times are kept as by New (they may include work of aborted
// transactions), but the work is done only when Committed is called, once
// the group has committed the whole source.
func NewTransactional() *Tracker {
	t := &Tracker{inputs: -1, done: make(chan struct{})}
	t.left.Store(1)
	return t
}

// Committed marks the work done: every input's offset is committed, and
// with it, in the same transactions, every output.
func (t *Tracker) Committed() {
	ts := now()
	t.lastRecord.CompareAndSwap(0, ts)
	t.lastOutput.Store(ts)
	t.met()
}

func now() int64 { return time.Now().UnixNano() }

// Input counts one input record processed.
func (t *Tracker) Input() {
	switch n := t.consumed.Add(1); n {
	case 1:
		t.cpuFirst.Store(cpuNow())
		t.firstRecord.CompareAndSwap(0, now())
		if t.inputs == 1 {
			t.lastRecord.Store(now())
			t.met()
		}
	case t.inputs:
		t.lastRecord.Store(now())
		t.met()
	}
}

// Begin stamps the start of the work where it begins before the first
// input is counted (a restore: when it starts, not when its first batch is
// counted). Input and Add stamp it otherwise.
func (t *Tracker) Begin() {
	if t.firstRecord.CompareAndSwap(0, now()) {
		t.cpuFirst.Store(cpuNow())
	}
}

// Add counts n inputs at once (a restore's batch of changelog records).
func (t *Tracker) Add(n int64) {
	if n <= 0 {
		return
	}
	was := t.consumed.Add(n) - n
	if was == 0 {
		t.Begin()
	}
	if was < t.inputs && was+n >= t.inputs {
		t.lastRecord.Store(now())
		t.met()
	}
}

// SinkAck counts one sink record acknowledged by the broker.
func (t *Tracker) SinkAck() { t.ack(&t.sink, t.exp.Sink) }

// ChangelogAck counts one changelog record acknowledged by the broker.
func (t *Tracker) ChangelogAck() { t.ack(&t.changelog, t.exp.Changelog) }

func (t *Tracker) ack(c *atomic.Int64, want int64) {
	n := c.Add(1)
	if n == 1 {
		t.firstOutput.CompareAndSwap(0, now())
	}
	if n == want {
		ts := now()
		for {
			old := t.lastOutput.Load()
			if ts <= old || t.lastOutput.CompareAndSwap(old, ts) {
				break
			}
		}
		t.met()
	}
}

func (t *Tracker) met() {
	if t.left.Add(-1) == 0 {
		t.once.Do(func() {
			t.doneAt.Store(now())
			t.cpuDone.Store(cpuNow())
			close(t.done)
		})
	}
}

// Done is closed once every input is processed and every expected output
// acknowledged.
func (t *Tracker) Done() <-chan struct{} { return t.done }

// Fill copies the counts and times into r.
func (t *Tracker) Fill(r *protocol.Result) {
	r.Consumed = t.consumed.Load()
	r.SinkAcked = t.sink.Load()
	r.ChangelogAck = t.changelog.Load()
	r.FirstRecordNs = t.firstRecord.Load()
	r.LastRecordNs = t.lastRecord.Load()
	r.FirstOutputNs = t.firstOutput.Load()
	r.LastOutputNs = t.lastOutput.Load()
	r.DoneNs = t.doneAt.Load()
	r.CPUAtFirstRecordNs = t.cpuFirst.Load()
	r.CPUAtDoneNs = t.cpuDone.Load()
}

// cpuNow is the process's user+sys CPU time so far, in nanoseconds.
func cpuNow() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
