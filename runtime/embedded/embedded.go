// Package embedded starts an in-process Kafka cluster for development and
// tests: franz-go's kfake, speaking the real Kafka protocol on loopback, with
// the topics an application needs. Generated mains use it when no brokers are
// given, so an application runs with zero setup. It is not for production:
// data lives in memory and is gone when the process exits.
//
// One difference from Apache Kafka shows when instances are killed: a member
// that dies while its JoinGroup waits is kept until the group's rebalance
// timeout (franz-go's default, 60 s, which kgen keeps) instead of its session
// timeout (10 s), because kfake starts a member's session timer only when the
// join response reaches it. The others wait in JoinGroup meanwhile; several
// kills in a row can keep them there for minutes, where Kafka takes seconds.
package embedded

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Config says what the embedded broker starts with.
type Config struct {
	// Topics maps topic names to partition counts; they exist when Start
	// returns.
	Topics map[string]int32
	// TopicConfigs are configs (cleanup.policy, ...) of some of Topics, by
	// topic, which they are created with.
	TopicConfigs map[string]map[string]string
	// Port to listen on, on 127.0.0.1; 0 picks a free one.
	Port int
}

// Broker is a running embedded cluster.
type Broker struct {
	c *kfake.Cluster
}

// Start starts a single-broker cluster on loopback and creates cfg.Topics.
func Start(cfg Config) (*Broker, error) {
	opts := []kfake.Opt{kfake.NumBrokers(1)}
	if cfg.Port != 0 {
		opts = append(opts, kfake.Ports(cfg.Port))
	} else {
		opts = append(opts, kfake.ListenFn(func(network, _ string) (net.Listener, error) {
			return net.Listen(network, "127.0.0.1:0")
		}))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return nil, fmt.Errorf("start embedded broker: %w", err)
	}
	b := &Broker{c: c}
	if err := b.createTopics(cfg.Topics, cfg.TopicConfigs); err != nil {
		c.Close()
		return nil, err
	}
	return b, nil
}

// Addrs are the seed addresses of the cluster.
func (b *Broker) Addrs() []string { return b.c.ListenAddrs() }

// CreateTopics creates topics (name to partition count) that do not exist yet.
func (b *Broker) CreateTopics(topics map[string]int32) error {
	return b.createTopics(topics, nil)
}

func (b *Broker) createTopics(topics map[string]int32, configs map[string]map[string]string) error {
	if len(topics) == 0 {
		return nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...))
	if err != nil {
		return fmt.Errorf("embedded broker: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	sort.Strings(names)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, t := range names {
		var cfg map[string]*string
		for k, v := range configs[t] {
			if cfg == nil {
				cfg = map[string]*string{}
			}
			cfg[k] = &v
		}
		resp, err := adm.CreateTopic(ctx, topics[t], 1, cfg, t)
		if err == nil {
			err = resp.Err
		}
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("embedded broker: create topic %q: %w", t, err)
		}
	}
	return nil
}

// Close stops the cluster; its data is gone.
func (b *Broker) Close() { b.c.Close() }
