package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/kgen-dev/kgen/examples/orders"
	"github.com/kgen-dev/kgen/runtime/embedded"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/serde/avro"
	"github.com/kgen-dev/kgen/runtime/stream"
)

func devBroker(t *testing.T, topics map[string]int32) string {
	t.Helper()
	b, err := embedded.Start(embedded.Config{Topics: topics})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return strings.Join(b.Addrs(), ",")
}

func runStdin(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	var code int
	if args[0] == "produce" {
		code = cmdProduce(args[1:], strings.NewReader(stdin), &out, &errb)
	} else {
		code = Run(args, &out, &errb)
	}
	return code, out.String(), errb.String()
}

// withoutTimes drops the broker-assigned timestamps of consumed lines.
func consumedLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "" {
			continue
		}
		m := map[string]any{}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		lines = append(lines, m)
	}
	return lines
}

// TestProduceConsumeJSON: records in the spec's types go through kgen
// produce and come back through kgen consume, on the development broker;
// a line the strict types refuse sends nothing.
func TestProduceConsumeJSON(t *testing.T) {
	brokers := devBroker(t, map[string]int32{"orders": 4, "customers": 4, "enriched": 1})
	dir := "../../testdata/golden/basic"
	in := `{"key": "c1", "value": {"id": "c1", "name": "Ann", "tags": ["vip"]}, "timestamp": "2026-01-02T03:04:05Z", "headers": {"src": "cli"}}
{"key": "c2", "value": {"id": "c2", "name": "Bo", "tags": null}, "partition": 3}

{"key": "c3", "value": null}
`
	code, _, errs := runStdin(t, in, "produce", "customers", "-dir", dir, "-brokers", brokers)
	if code != 0 || !strings.Contains(errs, "3 record(s) to customers") {
		t.Fatalf("produce: exit %d\n%s", code, errs)
	}
	code, out, errs := runStdin(t, "", "consume", "customers", "-dir", dir, "-brokers", brokers)
	if code != 0 {
		t.Fatalf("consume: exit %d\n%s", code, errs)
	}
	got := map[string]map[string]any{}
	for _, l := range consumedLines(t, out) {
		delete(l, "offset")
		if l["key"] != "c1" {
			delete(l, "timestamp")
		}
		got[l["key"].(string)] = l
	}
	c1Partition := got["c1"]["partition"]
	delete(got["c1"], "partition")
	delete(got["c3"], "partition")
	want := map[string]map[string]any{
		"c1": {"key": "c1", "value": map[string]any{"id": "c1", "name": "Ann", "tags": []any{"vip"}}, "timestamp": "2026-01-02T03:04:05Z", "headers": map[string]any{"src": "cli"}},
		"c2": {"key": "c2", "value": map[string]any{"id": "c2", "name": "Bo", "tags": nil}, "partition": 3.0},
		"c3": {"key": "c3", "value": nil},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("consumed (-want +got):\n%s", diff)
	}
	// The key's partition is the app's: murmur2, as Kafka's Java producer.
	if want := float64(stream.KafkaPartition([]byte("c1"), 4)); c1Partition != want {
		t.Errorf("c1 went to partition %v, want %v", c1Partition, want)
	}

	for _, tc := range []struct {
		name, in, err string
		code          int
	}{
		{"miscased member", `{"key": "c9", "value": {"ID": "c9"}}`, `stdin:2: value: $: member "ID" is no field of model.Customer`, 1},
		{"wrong kind", `{"key": 7, "value": {"id": "c9"}}`, "stdin:2: key: want a JSON string, got a number", 1},
		{"no value", `{"key": "c9"}`, `stdin:2: no "value"`, 1},
		{"unknown line member", `{"key": "c9", "value": {}, "vlaue": 1}`, `unknown field "vlaue"`, 1},
		{"unknown topic", `{"value": 1}`, `topic "nope" is not in`, 2},
		{"partition range", `{"key": "c9", "value": {"id": "c9"}, "partition": 9}`, `partition 9, but "customers" has 4`, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic := "customers"
			if tc.name == "unknown topic" {
				topic = "nope"
			}
			code, _, errs := runStdin(t, `{"key": "ok", "value": {"id": "ok"}}`+"\n"+tc.in+"\n", "produce", "-dir", dir, "-brokers", brokers, topic)
			if code != tc.code || !strings.Contains(errs, tc.err) {
				t.Errorf("exit %d, want %d; stderr:\n%s\nwant %q", code, tc.code, errs, tc.err)
			}
		})
	}
	if _, out, _ := runStdin(t, "", "consume", "customers", "-dir", dir, "-brokers", brokers); len(consumedLines(t, out)) != 3 {
		t.Errorf("failed produce commands sent records:\n%s", out)
	}
}

// TestProduceConsumeAvro: an avro-confluent topic (schema registered with
// the registry, Confluent framing) and a plain Avro one; what kgen produce
// writes is what the app's generated serdes read.
func TestProduceConsumeAvro(t *testing.T) {
	brokers := devBroker(t, map[string]int32{"orders": 3, "customers": 3, "enriched-orders": 1})
	reg := srfake.New()
	t.Cleanup(reg.Close)
	dir := "../../examples/orders"
	in := `{"key": "o1", "value": {"id": "9b2f2c4e-3c1a-4d5e-8f00-0123456789ab", "customer_id": "c1", "placed": "2026-01-02T03:04:05.123Z", "lines": [{"sku": "pen", "qty": 2, "price": "1.25"}]}}` + "\n"
	if code, _, errs := runStdin(t, in, "produce", "orders", "-dir", dir, "-brokers", brokers, "-schema-registry", reg.URL()); code != 0 {
		t.Fatalf("produce: exit %d\n%s", code, errs)
	}
	code, out, errs := runStdin(t, "", "consume", "orders", "-dir", dir, "-brokers", brokers) // no registry needed
	if code != 0 {
		t.Fatalf("consume: exit %d\n%s", code, errs)
	}
	lines := consumedLines(t, out)
	if len(lines) != 1 {
		t.Fatalf("consumed %d lines, want 1:\n%s", len(lines), out)
	}
	want := map[string]any{"id": "9b2f2c4e-3c1a-4d5e-8f00-0123456789ab", "customer_id": "c1", "placed": "2026-01-02T03:04:05.123Z",
		"lines": []any{map[string]any{"sku": "pen", "qty": 2.0, "price": "1.25"}}}
	if diff := cmp.Diff(want, lines[0]["value"]); diff != "" {
		t.Errorf("value (-want +got):\n%s", diff)
	}

	// The generated serde decodes the bytes kgen produce wrote.
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fetches := cl.PollFetches(ctx)
	recs := fetches.Records()
	if len(recs) != 1 {
		t.Fatalf("fetched %d records: %v", len(recs), fetches.Errors())
	}
	id, _, err := avro.ParseConfluentHeader(recs[0].Value)
	if err != nil {
		t.Fatal(err)
	}
	order, err := orders.OrderConfluentSerde{SchemaID: id}.Deserialize(recs[0].Value)
	if err != nil {
		t.Fatalf("generated serde: %v", err)
	}
	if order.CustomerID != "c1" || len(order.Lines) != 1 || order.Lines[0].Price.FloatString(2) != "1.25" || order.Placed.UnixMilli() != 1767323045123 {
		t.Errorf("generated serde decoded %+v", order)
	}

	// Plain Avro, no registry needed.
	in = `{"key": "c1", "value": {"id": "c1", "name": "Ann", "email": null, "tier": "GOLD"}}` + "\n"
	if code, _, errs := runStdin(t, in, "produce", "customers", "-dir", dir, "-brokers", brokers); code != 0 {
		t.Fatalf("produce customers: exit %d\n%s", code, errs)
	}
	code, out, errs = runStdin(t, "", "consume", "customers", "-dir", dir, "-brokers", brokers)
	if code != 0 {
		t.Fatalf("consume customers: exit %d\n%s", code, errs)
	}
	lines = consumedLines(t, out)
	if len(lines) != 1 {
		t.Fatalf("consumed %d customers:\n%s", len(lines), out)
	}
	if diff := cmp.Diff(map[string]any{"id": "c1", "name": "Ann", "email": nil, "tier": "GOLD", "country": nil}, lines[0]["value"]); diff != "" {
		t.Errorf("customer (-want +got):\n%s", diff)
	}
	if code, _, errs := runStdin(t, in, "produce", "orders", "-dir", dir, "-brokers", brokers); code != 2 || !strings.Contains(errs, "give -schema-registry") {
		t.Errorf("avro-confluent without a registry: exit %d\n%s", code, errs)
	}
}

// TestDevLoopConnectionSettings: produce and consume take the app's TLS and
// SASL settings, checked the same way, before any connection.
func TestDevLoopConnectionSettings(t *testing.T) {
	for _, args := range [][]string{
		{"produce", "-dir", "../../testdata/golden/basic", "-sasl-user", "u", "customers"},
		{"consume", "-dir", "../../testdata/golden/basic", "-tls-key", "k.pem", "customers"},
	} {
		code, _, errs := runStdin(t, `{"key": "a", "value": {"id": "a"}}`+"\n", args...)
		if code != 2 || !strings.Contains(errs, "is set but") {
			t.Errorf("%v: exit %d, want 2 naming the missing setting; stderr:\n%s", args, code, errs)
		}
	}
}

// TestConsumeAsStrictAsTheApp: a json topic's record that the app's strict
// serde refuses (a member that is no field, a field name in the wrong case,
// null for a struct) is printed with why, not as a normal record, and
// consume exits 1; what it flags is what serde.JSON refuses.
func TestConsumeAsStrictAsTheApp(t *testing.T) {
	brokers := devBroker(t, map[string]int32{"orders": 4, "customers": 1, "enriched": 1})
	values := []string{
		`{"id":"c1","name":"Ann","nick":"A"}`,
		`{"ID":"c2"}`,
		`null`,
		`{"id":"c4","name":"Cy","tags":null}`,
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i, v := range values {
		r := &kgo.Record{Topic: "customers", Key: []byte(fmt.Sprintf("c%d", i+1)), Value: []byte(v), Timestamp: time.UnixMilli(int64(i)).UTC()}
		if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := runStdin(t, "", "consume", "customers", "-dir", "../../testdata/golden/basic", "-brokers", brokers)
	const why = "value: the app refuses this record (format json decodes strictly; its -on-deserialize-error policy decides what happens to it): "
	want := []string{
		`{"partition":0,"offset":0,"timestamp":"1970-01-01T00:00:00Z","key":"c1","value":{"id":"c1","name":"Ann","nick":"A"},"error":"` + why + `$: member \"nick\" is no field of model.Customer"}`,
		`{"partition":0,"offset":1,"timestamp":"1970-01-01T00:00:00.001Z","key":"c2","value":{"ID":"c2"},"error":"` + why + `$: member \"ID\" is no field of model.Customer"}`,
		`{"partition":0,"offset":2,"timestamp":"1970-01-01T00:00:00.002Z","key":"c3","value":null,"error":"` + why + `$: null, but model.Customer cannot be null"}`,
		`{"partition":0,"offset":3,"timestamp":"1970-01-01T00:00:00.003Z","key":"c4","value":{"id":"c4","name":"Cy","tags":null}}`,
	}
	if diff := cmp.Diff(strings.Join(want, "\n")+"\n", out); diff != "" {
		t.Errorf("consume output (-want +got):\n%s", diff)
	}
	if wantErr := "kgen consume: 3 records did not decode as the app decodes them\n"; code != 1 || errs != wantErr {
		t.Errorf("consume: exit %d, stderr %q; want 1, %q", code, errs, wantErr)
	}
	// The app's serde refuses exactly those.
	type customer struct {
		ID   string   `json:"id"`
		Name string   `json:"name"`
		Tags []string `json:"tags"`
	}
	for i, v := range values {
		_, err := serde.JSON[customer]{}.Deserialize([]byte(v))
		if refused := i < 3; (err != nil) != refused {
			t.Errorf("serde.JSON on %s: %v; consume says refused=%v", v, err, refused)
		}
	}
}
