package stream

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicNeeds is what one of the app's own topics needs besides its
// partitions: the configs it is created with, and why an existing one does
// not fit (nil when it does).
type topicNeeds struct {
	configs map[string]string
	check   func(topic string, configs map[string]string) error
}

// repartitionNeeds are a repartition topic's: deleted, with unlimited
// retention, since the app deletes what it has committed.
func repartitionNeeds(string) topicNeeds {
	return topicNeeds{
		configs: map[string]string{"cleanup.policy": "delete", "retention.ms": "-1"},
		check: func(topic string, configs map[string]string) error {
			var errs []error
			if p, ok := configs["cleanup.policy"]; ok && p != "delete" {
				errs = append(errs, fmt.Errorf("repartition topic %q has cleanup.policy=%s, it needs delete", topic, p))
			}
			for _, key := range []string{"retention.ms", "retention.bytes"} {
				if v, ok := configs[key]; ok {
					if err := checkRepartitionRetention(topic, key, &v); err != nil {
						errs = append(errs, err)
					}
				}
			}
			return errors.Join(errs...)
		},
	}
}

// changelogNeeds tells what each changelog topic needs: what its store's
// kind says, for the store's retention and the app's margin.
func (a *App) changelogNeeds() func(topic string) topicNeeds {
	need := map[string]topicNeeds{}
	for _, name := range a.topo.storeOrder {
		def := a.topo.stores[name]
		if !def.opts.Changelog {
			continue
		}
		c := def.kind.Changelog(def.retention, a.cfg.changelogMargin)
		need[changelogTopic(a.cfg.appID, name)] = topicNeeds{
			configs: c.Configs(),
			check: func(topic string, configs map[string]string) error {
				if err := c.Check(topic, configs); err != nil {
					return fmt.Errorf("%w (the changelog of %s store %q)", err, def.kind.Name, name)
				}
				return nil
			},
		}
	}
	return func(topic string) topicNeeds { return need[topic] }
}

// ensureInternalTopics creates the app's own topics of one kind (changelog:
// as its store's kind says; repartition: repartitionNeeds) that are missing
// and checks the ones that exist, with an error naming the topic, what it
// has and what it needs; then it waits for their partitions to have
// leaders. The user's topics are never created or altered here.
func (a *App) ensureInternalTopics(ctx context.Context, kind string, want map[string]int32, needs func(topic string) topicNeeds) error {
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
	var existing, missing []string
	var errs []error
	for _, name := range names {
		if d, ok := details[name]; ok && d.Err == nil {
			if got := int32(len(d.Partitions)); got != want[name] {
				errs = append(errs, fmt.Errorf("%s topic %q has %d partitions, it needs %d (those of the topics it is co-partitioned with); delete it, or reset the application", kind, name, got, want[name]))
			}
			existing = append(existing, name)
			continue
		}
		missing = append(missing, name)
	}
	appeared, cerrs := a.createTopics(ctx, kind, missing, want, needs)
	errs = append(errs, cerrs...)
	if len(errs) == 0 && len(appeared) > 0 {
		// Created meanwhile by someone else (another instance, or a
		// broker's metadata that had not caught up with them): checked,
		// as any existing topic, on the next attempt.
		return &transientError{fmt.Errorf("%s topics %v exist now but were not listed: checking them again", kind, appeared)}
	}
	if len(errs) == 0 {
		a.awaitLeaders(ctx, missing, want)
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
			configs := map[string]string{}
			for _, c := range rc.Configs {
				if c.Value != nil {
					configs[c.Key] = *c.Value
				}
			}
			if err := needs(rc.Name).check(rc.Name, configs); err != nil {
				errs = append(errs, err)
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

// createTopics creates the named topics in one request, each with its
// partitions and configs: the controller commits them together, where a
// request per topic cost a round of the controller's log each (~35 ms on a
// local broker, before the app's first output). A topic that exists by now
// (another instance created it, or the listing missed it) is not an error:
// it is returned in appeared, to be checked as an existing one.
func (a *App) createTopics(ctx context.Context, kind string, names []string, want map[string]int32, needs func(topic string) topicNeeds) (appeared []string, errs []error) {
	if len(names) == 0 {
		return nil, nil
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 15000
	for _, name := range names {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = name, want[name], int16(a.cfg.replication)
		for k, v := range needs(name).configs {
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name, c.Value = k, kmsg.StringPtr(v)
			t.Configs = append(t.Configs, c)
		}
		req.Topics = append(req.Topics, t)
	}
	resp, err := req.RequestWith(ctx, a.admClient)
	if err != nil {
		return nil, []error{fmt.Errorf("create %s topics %v: %w", kind, names, err)}
	}
	for _, t := range resp.Topics {
		err := kerr.ErrorForCode(t.ErrorCode)
		if errors.Is(err, kerr.TopicAlreadyExists) {
			appeared = append(appeared, t.Topic)
			continue
		}
		if err != nil {
			if t.ErrorMessage != nil {
				err = fmt.Errorf("%w: %s", err, *t.ErrorMessage)
			}
			errs = append(errs, fmt.Errorf("create %s topic %q: %w", kind, t.Topic, err))
			continue
		}
		a.cfg.logger.Info("created "+kind+" topic", "topic", t.Topic, "partitions", want[t.Topic])
	}
	return appeared, errs
}

// awaitLeaders waits, briefly, until the brokers' metadata shows every
// partition of topics just created with a leader. The end offsets listed
// next would otherwise meet "unknown topic", which franz-go retries after a
// backoff of a few hundred milliseconds, where the metadata takes a few
// milliseconds to arrive. Past its deadline it leaves the waiting to
// endOffsetsOf.
func (a *App) awaitLeaders(ctx context.Context, topics []string, want map[string]int32) {
	if len(topics) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	for {
		md, err := a.adm.Metadata(ctx, topics...)
		if err == nil && leadersOf(md.Topics, topics, want) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// leadersOf says whether every partition of topics (want of each) has a
// leader in details.
func leadersOf(details kadm.TopicDetails, topics []string, want map[string]int32) bool {
	for _, topic := range topics {
		d, ok := details[topic]
		if !ok || d.Err != nil || int32(len(d.Partitions)) != want[topic] {
			return false
		}
		for _, p := range d.Partitions {
			if p.Err != nil || p.Leader < 0 {
				return false
			}
		}
	}
	return true
}

// checkReplication refuses a replication factor above the cluster's
// broker count before any internal topic is created, so the error names the
// setting rather than coming back from the broker per topic.
func (a *App) checkReplication(ctx context.Context) error {
	if a.cfg.replication <= 1 {
		return nil
	}
	md, err := a.adm.BrokerMetadata(ctx)
	if err != nil {
		return &transientError{fmt.Errorf("describe the cluster: %w", err)}
	}
	if n := len(md.Brokers); a.cfg.replication > n {
		return &ReplicationFactorError{Factor: a.cfg.replication, Brokers: n}
	}
	return nil
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
