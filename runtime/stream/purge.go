package stream

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// purger deletes the records of a unit's repartition inputs below their
// committed offsets, as Kafka Streams purges its repartition topics: they
// are the app's own intermediate records, done with once committed, and
// would otherwise grow forever (their retention is unlimited, so that no
// record is lost before it is processed).
type purger struct {
	u      *unit
	last   time.Time
	purged map[string]map[int32]int64 // what was deleted up to, per partition
}

// afterCommit purges, at most every PurgeInterval, what the last commit made
// done. It runs on the unit's goroutine; a failure only logs: the next
// purge tries again.
func (p *purger) afterCommit(ctx context.Context) {
	u := p.u
	if len(u.a.topo.repartitions) == 0 || time.Since(p.last) < u.cfg.purgeInterval {
		return
	}
	var os kadm.Offsets
	for _, t := range u.tm.order {
		for _, in := range t.inputs {
			st := in.state()
			if !u.a.topo.isRepartitionTopic(in.topic()) || st.committed <= 0 || st.committed <= p.purged[in.topic()][st.partition] {
				continue
			}
			os.AddOffset(in.topic(), st.partition, st.committed, -1)
		}
	}
	p.last = time.Now()
	if len(os) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resps, err := u.a.adm.DeleteRecords(ctx, os)
	if err != nil {
		u.log.Warn("purge repartition topics", "error", err)
		return
	}
	if p.purged == nil {
		p.purged = map[string]map[int32]int64{}
	}
	resps.Each(func(r kadm.DeleteRecordsResponse) {
		if r.Err != nil {
			u.log.Warn("purge repartition topic", "topic", r.Topic, "partition", r.Partition, "error", r.Err)
			return
		}
		if p.purged[r.Topic] == nil {
			p.purged[r.Topic] = map[int32]int64{}
		}
		p.purged[r.Topic][r.Partition] = r.LowWatermark
	})
}
