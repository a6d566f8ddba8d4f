package embedded_test

import (
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/runtime/embedded"
)

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}

// TestFixedPort: Config.Port puts the broker where other clients (kcat,
// kgen produce) expect it, and a port in use is an error, not another port.
func TestFixedPort(t *testing.T) {
	port := freePort(t)
	b, err := embedded.Start(embedded.Config{Port: port, Topics: map[string]int32{"t": 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if got, want := strings.Join(b.Addrs(), ","), "127.0.0.1:"+strconv.Itoa(port); got != want {
		t.Errorf("Addrs() = %s, want %s", got, want)
	}
	if b2, err := embedded.Start(embedded.Config{Port: port}); err == nil {
		b2.Close()
		t.Fatalf("a second broker on port %d started", port)
	}
}
