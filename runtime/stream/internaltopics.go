package stream

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ensureInternalTopics creates the app's own topics of one kind (changelog:
// compacted; repartition: deleted, unlimited retention) that are missing and
// checks the ones that exist, with an error naming the topic, what it has
// and what it needs; then it waits for their partitions to have leaders.
// The user's topics are never created or altered here.
func (a *App) ensureInternalTopics(ctx context.Context, kind string, want map[string]int32, cleanup string) error {
	if len(want) == 0 {
		return nil
	}
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	details, err := a.adm.ListTopics(ctx, names...)
	if err != nil {
		return &transientError{fmt.Errorf("describe %s topics: %w", kind, err)}
	}
	var existing []string
	var errs []error
	for _, name := range names {
		if d, ok := details[name]; ok && d.Err == nil {
			if got := int32(len(d.Partitions)); got != want[name] {
				errs = append(errs, fmt.Errorf("%s topic %q has %d partitions, it needs %d (those of the topics it is co-partitioned with); delete it, or reset the application", kind, name, got, want[name]))
			}
			existing = append(existing, name)
			continue
		}
		configs := map[string]*string{"cleanup.policy": &cleanup}
		if kind == "repartition" {
			unlimited := "-1" // the app deletes what it has committed
			configs["retention.ms"] = &unlimited
		}
		resp, err := a.adm.CreateTopic(ctx, want[name], -1, configs, name)
		if err == nil {
			err = resp.Err
		}
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			errs = append(errs, fmt.Errorf("create %s topic %q: %w", kind, name, err))
			continue
		}
		a.cfg.logger.Info("created "+kind+" topic", "topic", name, "partitions", want[name])
	}
	if len(existing) > 0 {
		cfgs, err := a.adm.DescribeTopicConfigs(ctx, existing...)
		if err != nil {
			return &transientError{fmt.Errorf("describe %s topic configs: %w", kind, err)}
		}
		for _, rc := range cfgs {
			if rc.Err != nil {
				errs = append(errs, fmt.Errorf("%s topic %q: describe configs: %w", kind, rc.Name, rc.Err))
				continue
			}
			for _, c := range rc.Configs {
				if c.Key == "cleanup.policy" && c.Value != nil && *c.Value != cleanup && !(cleanup == "compact" && *c.Value == "compact,delete") {
					errs = append(errs, fmt.Errorf("%s topic %q has cleanup.policy=%s, it needs %s", kind, rc.Name, *c.Value, cleanup))
				}
				if kind == "repartition" {
					if err := checkRepartitionRetention(rc.Name, c.Key, c.Value); err != nil {
						errs = append(errs, err)
					}
				}
			}
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	// A new topic takes a moment to have leaders everywhere.
	_, err = a.endOffsetsOf(ctx, want)
	return err
}

// minRepartitionRetention is the shortest retention.ms accepted on a
// repartition topic: Kafka's default retention, which deployments already
// plan their outages against. The app deletes what it has committed from
// these topics itself, so retention only matters while the sub-topology
// that reads them is down or behind; a shorter one can delete records
// before they are read.
const minRepartitionRetention = 7 * 24 * time.Hour

// checkRepartitionRetention refuses a repartition topic's config that lets
// the broker delete records the app has not read: retention.ms below
// minRepartitionRetention (other than -1, unlimited, as Kafka Streams makes
// them) or any retention.bytes limit.
func checkRepartitionRetention(topic, key string, value *string) error {
	if value == nil {
		return nil
	}
	v, err := strconv.ParseInt(*value, 10, 64)
	if err != nil {
		return nil // not a number: the broker would not have taken it
	}
	switch {
	case key == "retention.ms" && v >= 0 && v < minRepartitionRetention.Milliseconds():
		return fmt.Errorf("repartition topic %q has retention.ms=%d: the broker may delete records before the sub-topology that reads them commits them; set retention.ms=-1 (the app deletes what it has committed) or at least %d (7 days), or delete the topic for the app to create it", topic, v, minRepartitionRetention.Milliseconds())
	case key == "retention.bytes" && v >= 0:
		return fmt.Errorf("repartition topic %q has retention.bytes=%d: the broker may delete records before the sub-topology that reads them commits them; set retention.bytes=-1 (the app deletes what it has committed), or delete the topic for the app to create it", topic, v)
	}
	return nil
}
