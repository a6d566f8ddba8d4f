package stream_test

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// freePort is a loopback port nothing listens on, for a broker to come later.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// An app started while its broker is down waits for it, retrying with a
// warning per attempt, instead of exiting within milliseconds.
func TestStartupWaitsForTheBroker(t *testing.T) {
	port := freePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	topo := stream.NewTopology()
	stream.AddSource(topo, "in", "in", serde.String{}, serde.String{})
	stream.AddSink(topo, "out", "out", serde.String{}, serde.String{}, "in")
	app, err := stream.New(topo, stream.Brokers(addr), stream.AppID("startup"), stream.StateDir(t.TempDir()),
		stream.Parallelism(1), stream.Logger(testLogger(t)), stream.ExitWhenCaughtUp(), stream.StartupTimeout(time.Minute),
		// franz-go's own retries of one request would hide the loop's.
		stream.ClientOpts(kgo.RequestRetries(0), kgo.RetryTimeout(100*time.Millisecond)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx) }()
	time.Sleep(1500 * time.Millisecond) // the broker is down this long: Run must not have failed
	select {
	case err := <-done:
		t.Fatalf("Run returned %v while the broker was down; want it to wait", err)
	default:
	}
	// The broker comes up with its topics: created afterwards, the app's
	// next attempt could find a broker without them, which is not a
	// reason to wait.
	c, err := kfake.NewCluster(kfake.Ports(port), kfake.SeedTopics(1, "in", "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produceAll(t, cl, []*kgo.Record{{Topic: "in", Key: []byte("k"), Value: []byte("v")}})
	if err := <-done; err != nil {
		t.Fatalf("Run after the broker came: %v", err)
	}
}

func TestStartupGivesUpAfterItsTimeout(t *testing.T) {
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	topo := stream.NewTopology()
	stream.AddSource(topo, "in", "in", serde.String{}, serde.String{})
	stream.AddSink(topo, "out", "out", serde.String{}, serde.String{}, "in")
	start := time.Now()
	_, err := runApp(t, topo, stream.Brokers(addr), stream.AppID("startup-timeout"), stream.StateDir(t.TempDir()),
		stream.Logger(testLogger(t)), stream.StartupTimeout(2*time.Second),
		stream.ClientOpts(kgo.RequestRetries(0), kgo.RetryTimeout(100*time.Millisecond)))
	if err == nil || !strings.Contains(err.Error(), "gave up after") {
		t.Fatalf("Run error = %v, want one saying it gave up", err)
	}
	if took := time.Since(start); took < time.Second {
		t.Fatalf("gave up after %s: it did not wait for the broker", took)
	}
}
