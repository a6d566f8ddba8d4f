package cli

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/runtime/stream"
)

// kcatPath finds kcat: under CI a missing kcat fails the test (.ci/run
// installs it), elsewhere it skips.
func kcatPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("kcat")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("kcat is not installed (CI is set; apt-get install kcat): %v", err)
		}
		t.Skip("kcat is not installed (apt-get install kcat)")
	}
	return p
}

// kcatProduce sends key:value lines with kcat and the given -X settings.
func kcatProduce(t *testing.T, kcat, brokers, topic, lines string, settings ...string) {
	t.Helper()
	args := []string{"-P", "-b", brokers, "-t", topic, "-K", "\t"}
	for _, s := range settings {
		args = append(args, "-X", s)
	}
	cmd := exec.Command(kcat, args...)
	cmd.Stdin = strings.NewReader(lines)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kcat %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestKcatPartitionsAsKgen: with -X partitioner=murmur2_random (murmur2 of
// the key, as Kafka's Java producer; librdkafka's default, consistent_random,
// hashes with CRC32) kcat puts each key on the partition kgen's producers
// and the app's repartitioning choose, so per-key state does not split.
func TestKcatPartitionsAsKgen(t *testing.T) {
	kcat := kcatPath(t)
	const parts = 4
	brokers := devBroker(t, map[string]int32{"customers": parts, "orders": parts, "enriched": 1})
	dir := "../../testdata/golden/basic"
	keys := []string{"ann", "bo", "cy", "dee", "eve", "fay", "gus", "hal"}
	var lines, kgenLines strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&lines, "%s\t{\"id\": %q}\n", k, k)
		fmt.Fprintf(&kgenLines, "{\"key\": %q, \"value\": {\"id\": %q}}\n", k, k)
	}
	kcatProduce(t, kcat, brokers, "customers", lines.String(), "partitioner=murmur2_random")
	if code, _, errs := runStdin(t, kgenLines.String(), "produce", "customers", "-dir", dir, "-brokers", brokers); code != 0 {
		t.Fatalf("kgen produce: exit %d\n%s", code, errs)
	}
	// librdkafka's default partitioner, for contrast: the setting matters.
	kcatProduce(t, kcat, brokers, "orders", lines.String())

	read := func(topic string) map[string][]float64 {
		code, out, errs := runStdin(t, "", "consume", topic, "-dir", dir, "-brokers", brokers)
		if code != 0 && topic != "orders" { // orders' values are no orders: refused, but printed with their partition
			t.Fatalf("consume %s: exit %d\n%s", topic, code, errs)
		}
		got := map[string][]float64{}
		for _, l := range consumedLines(t, out) {
			k, _ := l["key"].(string)
			got[k] = append(got[k], l["partition"].(float64))
		}
		return got
	}
	got := read("customers")
	for _, k := range keys {
		want := float64(stream.KafkaPartition([]byte(k), parts))
		if len(got[k]) != 2 || got[k][0] != want || got[k][1] != want {
			t.Errorf("key %q: kcat's and kgen's records on partitions %v, want both on %v", k, got[k], want)
		}
	}
	moved := 0
	for k, ps := range read("orders") {
		if len(ps) == 1 && ps[0] != float64(stream.KafkaPartition([]byte(k), parts)) {
			moved++
		}
	}
	if moved == 0 {
		t.Errorf("kcat's default partitioner put every key where murmur2 does: the test no longer shows the setting matters")
	}
}
