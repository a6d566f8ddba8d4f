package stream

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ResetOptions says where a reset moves the input offsets.
type ResetOptions struct {
	// ToTime, if not zero, moves each input partition to its first record
	// at or after this time instead of the earliest.
	ToTime time.Time
}

// Reset does what Kafka Streams' application reset tool does, for an App
// that is not running: it refuses while the consumer group has members,
// deletes the application's internal topics (changelogs and repartition
// topics), moves the group's committed offsets of the input topics to the
// earliest (or to ToTime), drops those of the repartition topics, and wipes
// this instance's local state (StateDir/AppID).
//
// The other instances' local state still holds the old results. They need
// nothing done by hand in the usual case: when a task starts, each store
// whose data came from a changelog that no longer exists is wiped and
// restored from the new one, as Kafka Streams does with a corrupted task.
// A store is taken for stale when its changelog's topic id is not the one
// recorded in its task's checkpoint file (the reset deleted the topic and
// it was created again), or when its position is past the changelog's end.
// Neither can be told for a task directory whose checkpoint file is lost
// or was written before kgen recorded topic ids, once the new changelog
// has grown past the store's position: to be certain, wipe the other
// instances' state directories too (or start them on new ones).
//
// Call it instead of Run, on an App from New.
func (a *App) Reset(ctx context.Context, ro ResetOptions) error {
	if a.State() != Created {
		return errors.New("reset: the App has run; reset with a new one")
	}
	release, err := a.claimStateDir(true)
	if err != nil {
		return fmt.Errorf("reset %s: %w", a.cfg.appID, err)
	}
	defer release()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(a.cfg.brokers...)}, a.cfg.clientOpts...)...)
	if err != nil {
		return fmt.Errorf("reset %s: %w", a.cfg.appID, err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	group := a.cfg.appID

	groups, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return fmt.Errorf("reset %s: describe group: %w", group, err)
	}
	if g, ok := groups[group]; ok && g.Err == nil && len(g.Members) > 0 {
		return fmt.Errorf("reset %s: the consumer group has %d members (state %s): stop every instance first", group, len(g.Members), g.State)
	}

	var internal, inputs []string
	for _, s := range a.topo.subs {
		for _, st := range s.stores {
			if st.opts.Changelog {
				internal = append(internal, changelogTopic(a.cfg.appID, st.name))
			}
		}
	}
	for _, topic := range a.topo.SourceTopics() {
		if a.topo.isRepartitionTopic(topic) {
			internal = append(internal, topic)
		} else {
			inputs = append(inputs, topic)
		}
	}
	slices.Sort(internal)

	// Input offsets first: a reset that fails half way leaves the internal
	// topics, which a second reset deletes.
	var to kadm.ListedOffsets
	if ro.ToTime.IsZero() {
		to, err = adm.ListStartOffsets(ctx, inputs...)
	} else {
		to, err = adm.ListOffsetsAfterMilli(ctx, ro.ToTime.UnixMilli(), inputs...)
	}
	if err != nil {
		return fmt.Errorf("reset %s: list input offsets: %w", group, err)
	}
	if err := to.Error(); err != nil {
		return fmt.Errorf("reset %s: list input offsets: %w", group, err)
	}
	resps, err := adm.CommitOffsets(ctx, group, to.Offsets())
	if err == nil {
		err = resps.Error()
	}
	if err != nil {
		return fmt.Errorf("reset %s: move input offsets: %w", group, err)
	}
	if len(internal) > 0 {
		var repart []string
		for _, topic := range internal {
			if a.topo.isRepartitionTopic(topic) {
				repart = append(repart, topic)
			}
		}
		if len(repart) > 0 {
			details, err := adm.ListTopics(ctx, repart...)
			if err != nil {
				return fmt.Errorf("reset %s: describe repartition topics: %w", group, err)
			}
			set := kadm.TopicsSet{}
			for _, d := range details {
				if d.Err == nil {
					for p := range d.Partitions {
						set.Add(d.Topic, p)
					}
				}
			}
			if len(set) > 0 {
				if _, err := adm.DeleteOffsets(ctx, group, set); err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
					return fmt.Errorf("reset %s: drop repartition offsets: %w", group, err)
				}
			}
		}
		dresps, err := adm.DeleteTopics(ctx, internal...)
		if err != nil {
			return fmt.Errorf("reset %s: delete internal topics: %w", group, err)
		}
		for _, r := range dresps.Sorted() {
			if r.Err != nil && !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
				return fmt.Errorf("reset %s: delete internal topic %q: %w", group, r.Topic, r.Err)
			}
			if r.Err == nil {
				a.cfg.logger.Info("deleted internal topic", "app", group, "topic", r.Topic)
			}
		}
	}
	dir := filepath.Join(a.cfg.stateDir, a.cfg.appID)
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("reset %s: local state: %w", group, err)
	}
	for _, e := range entries {
		// The lock and the instance id stay: the instance is the same one.
		if e.Name() == "LOCK" || e.Name() == ".instance-id" {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("reset %s: wipe local state: %w", group, err)
		}
	}
	a.cfg.logger.Info("application reset", "app", group, "inputs", inputs, "to", resetTarget(ro), "internal_topics_deleted", internal, "state_dir_wiped", dir)
	return nil
}

func resetTarget(ro ResetOptions) string {
	if ro.ToTime.IsZero() {
		return "earliest"
	}
	return ro.ToTime.UTC().Format(time.RFC3339Nano)
}
