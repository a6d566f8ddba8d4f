// Package kafkatest gives tests a Kafka cluster to talk to: an in-process kfake
// cluster per test by default, or the real broker named by the environment
// variable KGEN_TEST_BROKERS (started with scripts/kafka.sh), so the same test
// runs on both. It also has the helpers tests keep needing: clients closed at
// cleanup, uniquely named topics, and reading a topic to its end.
package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// EnvBrokers is the environment variable naming a real broker for tests, as
// comma separated host:port seeds, for example "127.0.0.1:9092". When it is
// set, New uses that broker and fails the test if it does not answer; it never
// falls back to kfake.
const EnvBrokers = "KGEN_TEST_BROKERS"

const (
	// pingTimeout bounds the reachability check of the broker named by EnvBrokers.
	pingTimeout = 10 * time.Second
	// pingRetry is the pause between two metadata requests of Ping.
	pingRetry = 200 * time.Millisecond
)

// Brokers returns the seed brokers named by KGEN_TEST_BROKERS, or nil when the
// variable is unset or empty. It suits code outside tests too, such as
// benchmarks that choose between a real broker and an embedded one.
func Brokers() []string {
	var seeds []string
	for s := range strings.SplitSeq(os.Getenv(EnvBrokers), ",") {
		if s = strings.TrimSpace(s); s != "" {
			seeds = append(seeds, s)
		}
	}
	return seeds
}

// Ping sends metadata requests to seeds until a broker answers with a
// non-empty broker list, and returns nil then. When ctx ends first, the error
// names the seeds and the last failure, such as a refused connection.
func Ping(ctx context.Context, seeds ...string) error {
	if len(seeds) == 0 {
		return errors.New("ping kafka: no seed brokers given")
	}
	addrs := strings.Join(seeds, ",")
	hook := &connectHook{}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.WithHooks(hook))
	if err != nil {
		return fmt.Errorf("ping kafka at %s: create client: %w", addrs, err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for {
		md, err := adm.BrokerMetadata(ctx)
		if err == nil && len(md.Brokers) > 0 {
			return nil
		}
		if err == nil {
			err = errors.New("the answer lists no brokers")
		}
		// A request cut short by ctx says only "deadline exceeded": the
		// last connection error says why.
		if last := hook.last(); last != nil && !strings.Contains(err.Error(), last.Error()) {
			err = fmt.Errorf("%w (last connection error: %v)", err, last)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("metadata request to %s: %w", addrs, err)
		case <-time.After(pingRetry):
		}
	}
}

// connectHook remembers the last failed connection, so that a ping that times
// out can say why (refused, unknown host) instead of only "deadline exceeded".
type connectHook struct {
	mu  sync.Mutex
	err error
}

// OnBrokerConnect implements kgo.HookBrokerConnect.
func (h *connectHook) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err == nil {
		return
	}
	h.mu.Lock()
	h.err = err
	h.mu.Unlock()
}

func (h *connectHook) last() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// realPing checks the broker named by EnvBrokers once per test binary, so that
// a missing broker fails every test quickly rather than after a timeout each.
var realPing = sync.OnceValue(func() error {
	ctx, cancel := context.WithTimeout(context.Background(), pingTimeout)
	defer cancel()
	return Ping(ctx, Brokers()...)
})

// Cluster is the Kafka cluster one test talks to.
type Cluster struct {
	seeds []string
	real  bool
}

// New returns the cluster for the test t. When KGEN_TEST_BROKERS is set it is
// that broker, checked with a metadata request (up to 10 s); if it does not
// answer, the test fails. Otherwise New starts a single-broker kfake cluster
// that is closed when the test ends.
func New(t testing.TB) *Cluster {
	t.Helper()
	if seeds := Brokers(); len(seeds) > 0 {
		if err := realPing(); err != nil {
			t.Fatalf("kafkatest: %s=%s names a broker that does not answer: %v; "+
				"start it with scripts/kafka.sh start (or make kafka-start), or unset %s to test on kfake",
				EnvBrokers, os.Getenv(EnvBrokers), err, EnvBrokers)
		}
		return &Cluster{seeds: seeds, real: true}
	}
	fake, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatalf("kafkatest: start kfake cluster: %v", err)
	}
	t.Cleanup(fake.Close)
	return &Cluster{seeds: fake.ListenAddrs()}
}

// Seeds returns the addresses of the cluster's brokers, for kgo.SeedBrokers.
func (c *Cluster) Seeds() []string { return append([]string(nil), c.seeds...) }

// Real reports whether the cluster is a real broker named by KGEN_TEST_BROKERS
// rather than an in-process kfake cluster.
func (c *Cluster) Real() bool { return c.real }

// Client returns a client seeded with the cluster's brokers and configured by
// opts, closed when the test ends.
func (c *Cluster) Client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.seeds...)}, opts...)...)
	if err != nil {
		t.Fatalf("kafkatest: create client: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// Admin returns an admin client for the cluster, closed when the test ends.
func (c *Cluster) Admin(t testing.TB) *kadm.Client {
	t.Helper()
	return kadm.NewClient(c.Client(t))
}
