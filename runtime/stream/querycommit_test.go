package stream_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// TestQueriesDuringCommits: a commit lets queries read while it waits on
// Kafka (its producer flush, its offset commit), between prepare, which
// marks the cached writes clean, and committed, which writes them to the
// store. A count per key, in Pebble with a small cache and frequent
// commits, is fed in rounds while two goroutines get every key: each
// answer is at most what was sent of the key, never less than the last
// answer, and the final answers are the true counts. A read that fell
// through to the store during a commit would go back to the last commit's
// count.
func TestQueriesDuringCommits(t *testing.T) {
	for _, g := range []stream.GuaranteeKind{stream.AtLeastOnce, stream.ExactlyOnce} {
		t.Run(g.String(), func(t *testing.T) { queriesDuringCommits(t, g) })
	}
}

func queriesDuringCommits(t *testing.T, g stream.GuaranteeKind) {
	// Each wait open to queries lasts a little longer than an in-process
	// broker makes it, so that queries land in it.
	stream.WidenCommitWaits(t, func() { time.Sleep(2 * time.Millisecond) })
	c := kafkatest.New(t)
	in, out := c.CreateTopic(t, 2, nil), c.CreateTopic(t, 2, nil)
	appID := "querycommit-" + in
	qi := startQueryInstance(t, c, appID, in, out, "a", 1, onDisk, true, g, stream.CommitInterval(time.Millisecond))
	const keys, rounds = 16, 60
	var sent [keys]atomic.Int64
	cl := c.Client(t)
	produceRound := func() error {
		recs := make([]*kgo.Record, keys)
		for k := range keys {
			sent[k].Add(1) // before it can be counted
			recs[k] = &kgo.Record{Topic: in, Key: fmt.Appendf(nil, "k%d", k), Value: []byte("v")}
		}
		return cl.ProduceSync(context.Background(), recs...).FirstErr()
	}
	// One round first, and the rest once the group has assigned the
	// tasks and they answer, so that the queries overlap the commits.
	if err := produceRound(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if _, ok, _, err := qi.view.Get("k0"); err == nil && ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no answer within a minute")
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		// A round at a time, each once the last is counted: every round
		// then has its commits, with queries waiting.
		for r := 1; r < rounds; r++ {
			if err := produceRound(); err != nil {
				t.Errorf("produce: %v", err)
				return
			}
			for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
				if v, _, _, _ := qi.view.Get(fmt.Sprintf("k%d", keys-1)); v > int64(r) {
					break
				}
				if time.Now().After(deadline) {
					t.Errorf("round %d not counted within a minute", r)
					return
				}
			}
		}
	}()
	var (
		wg                   sync.WaitGroup
		served, notAvailable atomic.Int64
		mu                   sync.Mutex
		wrong                []string
	)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var last [keys]int64
			for {
				select {
				case <-done:
					return
				default:
				}
				for k := range keys {
					v, ok, _, err := qi.view.Get(fmt.Sprintf("k%d", k))
					var na *stream.NotAvailableError
					if errors.As(err, &na) {
						if notAvailable.Add(1) == 1000 {
							t.Logf("not available: %v", err)
						}
						continue
					}
					bound := sent[k].Load()
					mu.Lock()
					switch {
					case err != nil:
						wrong = append(wrong, fmt.Sprintf("k%d: %v", k, err))
					case !ok && last[k] > 0:
						wrong = append(wrong, fmt.Sprintf("k%d: no value after %d", k, last[k]))
					case ok && (v < last[k] || v > bound):
						wrong = append(wrong, fmt.Sprintf("k%d: %d after %d, with %d sent", k, v, last[k], bound))
					}
					mu.Unlock()
					if ok {
						last[k] = v
						served.Add(1)
					}
				}
			}
		}()
	}
	<-done
	wg.Wait()
	if len(wrong) > 0 {
		t.Fatalf("%d wrong answers, the first: %v", len(wrong), wrong[:min(len(wrong), 5)])
	}
	waitCaughtUp(t, c.Admin(t), appID, in)
	for k := range keys {
		if v, ok, _, err := qi.view.Get(fmt.Sprintf("k%d", k)); err != nil || !ok || v != rounds {
			t.Fatalf("k%d at the end: %d %v %v, want %d", k, v, ok, err, rounds)
		}
	}
	opened := stream.CommitWaitsOpenToQueries(qi.app)
	t.Logf("%d answers, %d not available; %d commit waits open to queries", served.Load(), notAvailable.Load(), opened)
	if served.Load() == 0 || opened == 0 {
		t.Fatalf("%d answers, %d commit waits open to queries: want some of both", served.Load(), opened)
	}
}
