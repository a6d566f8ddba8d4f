// Command kafkaready exits 0 when a Kafka broker answers a metadata request,
// and 1 with the reason when none does within the timeout. scripts/kafka.sh
// runs it to know when a broker it started is ready.
//
// Usage:
//
//	kafkaready [-brokers 127.0.0.1:9092] [-timeout 5s]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/kgen-dev/kgen/internal/kafkatest"
)

func main() {
	brokers := flag.String("brokers", "127.0.0.1:9092", "comma separated seed brokers")
	timeout := flag.Duration("timeout", 5*time.Second, "how long to wait for an answer")
	flag.Parse()

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := kafkatest.Ping(ctx, strings.Split(*brokers, ",")...); err != nil {
		fmt.Fprintf(os.Stderr, "kafkaready: %v\n", err)
		os.Exit(1)
	}
}
