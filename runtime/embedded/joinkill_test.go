package embedded_test

import (
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A group member that dies while its JoinGroup waits is removed by Apache
// Kafka at its session timeout, but kept by kfake until the group's
// rebalance timeout (the package doc): the others wait in JoinGroup that
// long. This pins both, on whichever broker the test runs (kfake, or the one
// KGEN_TEST_BROKERS names); if it fails on kfake, kfake has changed and the
// docs should too. It takes some 40 s on kfake, so it runs only with
// KGEN_KFAKE_JOIN_REPRO=1.
func TestMemberKilledInJoinGroup(t *testing.T) {
	if os.Getenv("KGEN_KFAKE_JOIN_REPRO") != "1" {
		t.Skip("takes some 40 s: set KGEN_KFAKE_JOIN_REPRO=1")
	}
	const session, rebalance = 10 * time.Second, 30 * time.Second
	c := kafkatest.New(t)
	topic := c.CreateTopic(t, 4, nil)
	group := "join-kill-" + topic
	opts := func(extra ...kgo.Opt) []kgo.Opt {
		return append([]kgo.Opt{kgo.SeedBrokers(c.Seeds()...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.SessionTimeout(session), kgo.HeartbeatInterval(time.Second), kgo.RebalanceTimeout(rebalance)}, extra...)
	}
	live := c.Client(t, opts()...)
	go func() {
		for !live.PollFetches(context.Background()).IsClientClosed() {
		}
	}()
	adm := c.Admin(t)
	waitStable := func(members int, within time.Duration) time.Duration {
		t.Helper()
		start := time.Now()
		for time.Since(start) < within {
			if gs, err := adm.DescribeGroups(context.Background(), group); err == nil && gs[group].State == "Stable" && len(gs[group].Members) == members {
				return time.Since(start)
			}
			time.Sleep(100 * time.Millisecond) // poll interval
		}
		t.Fatalf("group not stable with %d members within %v", members, within)
		return 0
	}
	waitStable(1, time.Minute)

	// A second member whose connections die right after it sends its
	// JoinGroup with its member id (its second: the first asks for one),
	// which waits for the first member to rejoin: a process killed
	// mid-rebalance.
	d := &dialer{}
	doomed := c.Client(t, opts(kgo.Dialer(d.dial), kgo.WithHooks(d))...)
	go doomed.PollFetches(context.Background())
	for deadline := time.Now().Add(time.Minute); !d.dead.Load(); {
		if time.Now().After(deadline) {
			t.Fatal("the second member never sent its JoinGroup")
		}
		time.Sleep(10 * time.Millisecond) // poll interval
	}
	took := waitStable(1, rebalance+time.Minute)
	t.Logf("stable again %v after the member died in JoinGroup (session timeout %v, rebalance timeout %v, real broker %v)", took, session, rebalance, c.Real())
	switch {
	case c.Real() && took > rebalance-5*time.Second:
		t.Fatalf("stable after %v on Kafka: want about the session timeout", took)
	case !c.Real() && took < rebalance-5*time.Second:
		t.Fatalf("stable after %v: kfake now removes a member killed in JoinGroup before the rebalance timeout; update runtime/embedded's doc and runtime/DESIGN.md", took)
	}
}

// dialer hands out connections until the client writes its second
// JoinGroup, then closes them all and refuses new ones: from the broker's
// side, a process killed just after that request.
type dialer struct {
	mu    sync.Mutex
	conns []net.Conn
	joins atomic.Int32
	dead  atomic.Bool
}

func (d *dialer) dial(ctx context.Context, network, host string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dead.Load() {
		return nil, errors.New("killed")
	}
	c, err := (&net.Dialer{}).DialContext(ctx, network, host)
	if err == nil {
		d.conns = append(d.conns, c)
	}
	return c, err
}

// OnBrokerWrite implements kgo.HookBrokerWrite.
func (d *dialer) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err != nil || key != int16(kmsg.JoinGroup) || d.joins.Add(1) != 2 {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dead.Store(true)
	for _, c := range d.conns {
		c.Close()
	}
}
