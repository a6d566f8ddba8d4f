package faults

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// monitor polls the group's committed offsets and the input's end offsets,
// and measures after each kill how long the group takes to make progress on
// every input partition again: the time until the killed instance's tasks
// process elsewhere (or in its restarted self).
type monitor struct {
	adm          *kadm.Client
	group, topic string

	mu      sync.Mutex
	pending map[int]*killWatch // by kill index
	took    map[int]time.Duration
}

type killWatch struct {
	at       time.Time
	baseline map[int32]int64 // committed offsets right after the kill
}

func newMonitor(adm *kadm.Client, group, topic string) *monitor {
	return &monitor{adm: adm, group: group, topic: topic, pending: map[int]*killWatch{}, took: map[int]time.Duration{}}
}

// offsets returns the group's committed offset and the end offset of every
// input partition.
func (m *monitor) offsets(ctx context.Context) (committed, ends map[int32]int64, err error) {
	offs, err := m.adm.FetchOffsets(ctx, m.group)
	if err != nil {
		return nil, nil, err
	}
	listed, err := m.adm.ListEndOffsets(ctx, m.topic)
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		return nil, nil, err
	}
	committed, ends = map[int32]int64{}, map[int32]int64{}
	listed.Each(func(o kadm.ListedOffset) {
		ends[o.Partition] = o.Offset
		committed[o.Partition] = 0
		if c, ok := offs.Lookup(o.Topic, o.Partition); ok && c.Err == nil && c.At > 0 {
			committed[o.Partition] = c.At
		}
	})
	return committed, ends, nil
}

// killed starts measuring the recovery from kill idx, which has just
// happened: the baseline is the committed offsets now, when the killed
// process can commit nothing more.
func (m *monitor) killed(ctx context.Context, idx int) {
	at := time.Now()
	var base map[int32]int64
	deadline := time.Now().Add(5 * time.Second)
	for {
		committed, _, err := m.offsets(ctx)
		if err == nil {
			base = committed
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return // not measured
		}
		time.Sleep(50 * time.Millisecond) // a retry pause, not a wait on a condition
	}
	m.mu.Lock()
	m.pending[idx] = &killWatch{at: at, baseline: base}
	m.mu.Unlock()
}

func (m *monitor) run(ctx context.Context) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		committed, ends, err := m.offsets(ctx)
		if err != nil {
			continue // the broker may be down for an outage
		}
		now := time.Now()
		m.mu.Lock()
		for idx, w := range m.pending {
			if recovered(w.baseline, committed, ends) {
				m.took[idx] = now.Sub(w.at)
				delete(m.pending, idx)
			}
		}
		m.mu.Unlock()
	}
}

// recovered reports whether every partition's committed offset advanced
// past its baseline, or has nothing left to commit.
func recovered(baseline, committed, ends map[int32]int64) bool {
	for p, end := range ends {
		if c := committed[p]; c <= baseline[p] && c < end {
			return false
		}
	}
	return true
}

// recoveries fills in the Took of each kill measured so far.
func (m *monitor) recoveries(rs []Recovery) []Recovery {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range rs {
		rs[i].Took = m.took[i]
	}
	return rs
}
