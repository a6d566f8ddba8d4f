package streamtest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/kgen-dev/kgen/runtime/streamtest"
)

type sentence struct {
	Text string `json:"text"`
}

// TestStrictJSONThroughTheTopology: a value the strict JSON serde refuses
// is a deserialization error under the app's policy (the record's
// coordinates named under Fail, skipped under LogAndContinue), and a
// tombstone reaches the processor as one: a nil *sentence.
func TestStrictJSONThroughTheTopology(t *testing.T) {
	var seen []string
	topo := func() *stream.Topology {
		tp := stream.NewTopology()
		stream.AddSource(tp, "in", "in", serde.String{}, serde.JSON[*sentence]{})
		stream.AddProcessor(tp, "see", func() stream.Processor[string, *sentence, struct{}, struct{}] {
			return stream.ProcessorFunc[string, *sentence, struct{}, struct{}](
				func(_ *stream.Context[struct{}, struct{}], r stream.Record[string, *sentence]) error {
					if r.Value == nil {
						seen = append(seen, r.Key+": tombstone")
					} else {
						seen = append(seen, r.Key+": "+r.Value.Text)
					}
					return nil
				})
		}, "in")
		return tp
	}
	ts := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

	d, err := streamtest.New(topo(), streamtest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	err = d.PipeRaw("in", []byte("a"), []byte(`{"txt":"typo"}`), ts)
	if err == nil || !strings.Contains(err.Error(), `member "txt" is no field`) || !strings.Contains(err.Error(), "in/0@0") {
		t.Fatalf("strict JSON under Fail: %v, want the member and the record's coordinates", err)
	}

	seen = nil
	d2, err := streamtest.New(topo(), streamtest.Config{OnDeserializeError: stream.LogAndContinue()})
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	for _, in := range []struct{ key, value string }{{"a", `{"text":"hi"}`}, {"b", `{"Text":"x"}`}, {"c", "null"}, {"d", `{"text":"bye"}`}} {
		if err := d2.PipeRaw("in", []byte(in.key), []byte(in.value), ts); err != nil {
			t.Fatal(err)
		}
	}
	if err := d2.PipeRaw("in", []byte("e"), nil, ts); err != nil {
		t.Fatalf("tombstone: %v", err)
	}
	want := []string{"a: hi", "c: tombstone", "d: bye", "e: tombstone"}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("records seen (-want +got):\n%s", diff)
	}
}
