package kafkatest_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kgen-dev/kgen/internal/kafkatest"
)

func TestBrokers(t *testing.T) {
	for _, tt := range []struct {
		env  string
		want []string
	}{
		{"", nil},
		{" , ", nil},
		{"127.0.0.1:9092", []string{"127.0.0.1:9092"}},
		{"a:1, b:2 ,,c:3", []string{"a:1", "b:2", "c:3"}},
	} {
		t.Setenv(kafkatest.EnvBrokers, tt.env)
		if diff := cmp.Diff(tt.want, kafkatest.Brokers()); diff != "" {
			t.Errorf("Brokers() with %s=%q (-want +got):\n%s", kafkatest.EnvBrokers, tt.env, diff)
		}
	}
}

func TestTopicName(t *testing.T) {
	valid := regexp.MustCompile(`^[A-Za-z0-9-]+-[0-9a-f]{8}$`)
	for _, tt := range []struct{ sub, prefix string }{
		{"plain", "TestTopicName-plain-"},
		{"with space/and.dot_under", "TestTopicName-with_space-and-dot_under-"},
		{strings.Repeat("x", 300), "TestTopicName-" + strings.Repeat("x", 186)},
	} {
		t.Run(tt.sub, func(t *testing.T) {
			a, b := kafkatest.TopicName(t), kafkatest.TopicName(t)
			if !valid.MatchString(a) || len(a) > 249 {
				t.Errorf("TopicName = %q: not a valid unique topic name", a)
			}
			if want := strings.ReplaceAll(tt.prefix, "_", "-"); !strings.HasPrefix(a, want) {
				t.Errorf("TopicName = %q, want prefix %q", a, want)
			}
			if a == b {
				t.Errorf("TopicName twice = %q both times, want different names", a)
			}
		})
	}
}

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatalf("close listener: %v", err)
	}
	return addr
}

func TestPingUnreachable(t *testing.T) {
	t.Parallel()
	addr := closedAddr(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	err := kafkatest.Ping(ctx, addr)
	if err == nil {
		t.Fatalf("Ping(%s) = nil, want an error: nothing listens there", addr)
	}
	if !strings.Contains(err.Error(), addr) {
		t.Errorf("Ping(%s) = %q, want the address in the error", addr, err)
	}
}

func TestPing(t *testing.T) {
	t.Parallel()
	c := kafkatest.New(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := kafkatest.Ping(ctx, c.Seeds()...); err != nil {
		t.Errorf("Ping(%v) = %v, want nil", c.Seeds(), err)
	}
}

// TestNewUnreachableFails checks that a broker named by KGEN_TEST_BROKERS that
// does not answer fails the test instead of falling back to kfake. New is run
// in a child test process, since the failure is the expected outcome.
func TestNewUnreachableFails(t *testing.T) {
	if os.Getenv("KAFKATEST_CHILD") == "1" {
		c := kafkatest.New(t)
		t.Logf("New returned a cluster at %v (real %v)", c.Seeds(), c.Real())
		return
	}
	t.Parallel()
	addr := closedAddr(t)
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestNewUnreachableFails$", "-test.count=1")
	cmd.Env = append(os.Environ(), "KAFKATEST_CHILD=1", kafkatest.EnvBrokers+"="+addr)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("New with %s=%s passed, want a test failure; output:\n%s", kafkatest.EnvBrokers, addr, out)
	}
	if want := "names a broker that does not answer"; !strings.Contains(string(out), want) {
		t.Errorf("New with %s=%s: output lacks %q:\n%s", kafkatest.EnvBrokers, addr, want, out)
	}
}
