package track

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kgen-dev/kgen/bench/internal/protocol"
)

// WatchCommitted calls t.Committed once group has committed, for every
// partition of topic, the end offset the partition had when the watch
// began. It polls every protocol.CommitWatchInterval until ctx ends.
func WatchCommitted(ctx context.Context, brokers []string, group, topic string, t *Tracker) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return fmt.Errorf("end offsets of %q: %w", topic, err)
	}
	tick := time.NewTicker(protocol.CommitWatchInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		committed, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			continue
		}
		done := true
		ends.Each(func(o kadm.ListedOffset) {
			if o.Offset == 0 {
				return
			}
			c, ok := committed.Lookup(topic, o.Partition)
			if !ok || c.Err != nil || c.At < o.Offset {
				done = false
			}
		})
		if done {
			t.Committed()
			return nil
		}
	}
}
