package oracle_test

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/runtime/serde"
)

// windowType is how an output topic's windowed keys were written: Form
// "time" (Kafka Streams' TimeWindowedSerializer; SizeMs is the windows'
// size, which reading needs) or "session" (SessionWindowedSerializer).
type windowType struct {
	Form   string `json:"form"`
	SizeMs int64  `json:"sizeMs"`
}

// window is a window in rec's form.
func window(start, end int64) string { return fmt.Sprintf("%d/%d", start, end) }

// decodeKey decodes an output record's key: as decode does, or, on a topic
// of windowed keys, with serde.TimeWindowed or serde.SessionWindowed around
// the key type, giving the window apart.
func decodeKey(types topicTypes, b []byte) (key, win string, err error) {
	if types.Window == nil {
		key, err = decode(types.Key, b)
		return key, "", err
	}
	if b == nil {
		return "", "", fmt.Errorf("a null windowed key")
	}
	var inner serde.Serde[serde.Windowed[[]byte]]
	switch types.Window.Form {
	case "time":
		inner = serde.TimeWindowed[[]byte](serde.Bytes{}, time.Duration(types.Window.SizeMs)*time.Millisecond)
	case "session":
		inner = serde.SessionWindowed[[]byte](serde.Bytes{})
	default:
		return "", "", fmt.Errorf("unknown window form %q", types.Window.Form)
	}
	w, err := inner.Deserialize(b)
	if err != nil {
		return "", "", err
	}
	key, err = decode(types.Key, w.Key)
	return key, window(w.Start, w.End), err
}

// partitionCounts are the partition counts case c runs with: 1 and 4, or
// only 1 for a case whose outcome follows other keys' stream time.
func partitionCounts(c caseFile) []int32 {
	if c.OnePartition != "" {
		return []int32{1}
	}
	return []int32{1, 4}
}

// TestWindowCasesRead reads every case with a topic of windowed keys, and
// its expected outputs, as the Go runner will: every record there has a
// window (a time window as long as its size, a session ending no earlier
// than it starts), and a topology of such a case is windowed.
func TestWindowCasesRead(t *testing.T) {
	files, err := filepath.Glob("cases/*.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		var c caseFile
		if err := readJSON(f, &c); err != nil {
			t.Fatal(err)
		}
		var ks result
		if err := readJSON(filepath.Join("expected", c.Name+".json"), &ks); err != nil {
			t.Fatalf("%v (run bash oracle/check.sh --update)", err)
		}
		windowed := false
		for _, topic := range c.Outputs {
			types := c.Topics[topic]
			for i, o := range ks.Outputs[topic] {
				if (o.Start != nil) != (types.Window != nil) || (o.End != nil) != (types.Window != nil) {
					t.Errorf("case %s, topic %s, record %d: a window where the topic has none, or none where it has", c.Name, topic, i)
					continue
				}
				if types.Window == nil {
					continue
				}
				windowed = true
				switch start, end := *o.Start, *o.End; types.Window.Form {
				case "time":
					if end-start != types.Window.SizeMs {
						t.Errorf("case %s, topic %s, record %d: time window %d/%d is not %d ms long", c.Name, topic, i, start, end, types.Window.SizeMs)
					}
				case "session":
					if end < start {
						t.Errorf("case %s, topic %s, record %d: session %d/%d ends before it starts", c.Name, topic, i, start, end)
					}
				default:
					t.Errorf("case %s, topic %s: unknown window form %q", c.Name, topic, types.Window.Form)
				}
			}
			if _, err := records(ks.Outputs[topic]); err != nil {
				t.Errorf("case %s, topic %s: %v", c.Name, topic, err)
			}
		}
		if windowed {
			if topologies[c.Topology] == nil {
				t.Errorf("case %s: windowed topology %q has no Go twin", c.Name, c.Topology)
			}
		}
	}
}

// windowedSample is one windowed key of expected/_serdes.json: what Kafka
// Streams' TimeWindowedSerializer or SessionWindowedSerializer wrote for a
// key and window, and the window its deserializer read back from the bytes
// (a time window's end from the size, capped at the largest int64).
type windowedSample struct {
	Inner   string          `json:"inner"`
	Key     json.RawMessage `json:"key"`
	Start   int64           `json:"start"`
	SizeMs  int64           `json:"sizeMs"`  // time windows
	ReadEnd int64           `json:"readEnd"` // time windows: start+size, capped
	End     int64           `json:"end"`     // session windows
	Bytes   string          `json:"bytes"`
}

// TestWindowedSerdesMatchKafka checks serde.TimeWindowed and
// serde.SessionWindowed against Kafka Streams' own windowed serdes, both
// ways: kgen writes the bytes Kafka Streams wrote, and reads Kafka Streams'
// bytes as the key and window Kafka Streams reads; bytes Kafka Streams'
// deserializers refuse (or read as a null, which a Windowed cannot be)
// kgen refuses too.
func TestWindowedSerdesMatchKafka(t *testing.T) {
	var f struct {
		Long, String     json.RawMessage
		TimeWindowed     []windowedSample `json:"timeWindowed"`
		SessionWindowed  []windowedSample `json:"sessionWindowed"`
		WindowedRejected []struct {
			Form         string `json:"form"`
			Bytes        string `json:"bytes"`
			KafkaStreams string `json:"kafkaStreams"`
		} `json:"windowedRejected"`
	}
	if err := readJSON("expected/_serdes.json", &f); err != nil {
		t.Fatal(err)
	}
	if len(f.TimeWindowed) == 0 || len(f.SessionWindowed) == 0 || len(f.WindowedRejected) == 0 {
		t.Fatal("expected/_serdes.json has no windowed samples: run bash oracle/check.sh --update")
	}
	for _, c := range f.TimeWindowed {
		size := time.Duration(c.SizeMs) * time.Millisecond
		switch c.Inner {
		case "string":
			checkWindowed(t, "time-windowed", serde.TimeWindowed[string](serde.String{}, size), c, c.ReadEnd, stringKey)
		case "long":
			checkWindowed(t, "time-windowed", serde.TimeWindowed[int64](serde.Int64{}, size), c, c.ReadEnd, longKey)
		default:
			t.Errorf("time-windowed sample of inner type %q", c.Inner)
		}
	}
	for _, c := range f.SessionWindowed {
		switch c.Inner {
		case "string":
			checkWindowed(t, "session-windowed", serde.SessionWindowed[string](serde.String{}), c, c.End, stringKey)
		case "long":
			checkWindowed(t, "session-windowed", serde.SessionWindowed[int64](serde.Int64{}), c, c.End, longKey)
		default:
			t.Errorf("session-windowed sample of inner type %q", c.Inner)
		}
	}
	tw := serde.TimeWindowed[string](serde.String{}, 10*time.Millisecond) // the size the Java side read with
	sw := serde.SessionWindowed[string](serde.String{})
	for _, c := range f.WindowedRejected {
		b, err := hex.DecodeString(c.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		var w serde.Windowed[string]
		switch c.Form {
		case "time":
			w, err = tw.Deserialize(b)
		case "session":
			w, err = sw.Deserialize(b)
		default:
			t.Fatalf("rejected sample of form %q", c.Form)
		}
		if err == nil {
			t.Errorf("%s-windowed %q: kgen reads %v, Kafka Streams gives %s", c.Form, c.Bytes, w, c.KafkaStreams)
		}
	}
}

func stringKey(raw json.RawMessage) (string, error) {
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err
}

func longKey(raw json.RawMessage) (int64, error) {
	return strconv.ParseInt(string(raw), 10, 64)
}

func checkWindowed[K comparable](t *testing.T, form string, s serde.Serde[serde.Windowed[K]], c windowedSample, end int64, key func(json.RawMessage) (K, error)) {
	t.Helper()
	k, err := key(c.Key)
	if err != nil {
		t.Fatalf("%s sample key %s: %v", form, c.Key, err)
	}
	w := serde.Windowed[K]{Key: k, Start: c.Start, End: end}
	got, err := s.Serialize(w)
	if err != nil || hex.EncodeToString(got) != c.Bytes {
		t.Errorf("%s: kgen writes %v as %x (%v), Kafka Streams as %s", form, w, got, err, c.Bytes)
	}
	b, _ := hex.DecodeString(c.Bytes)
	if back, err := s.Deserialize(b); err != nil || back != w {
		t.Errorf("%s: kgen reads %s as %v (%v), Kafka Streams as %v", form, c.Bytes, back, err, w)
	}
}

// decodeKey reads windowed keys as the Java runner writes them in expected/:
// the key and, apart, its window.
func TestDecodeWindowedKey(t *testing.T) {
	for _, tc := range []struct {
		types         topicTypes
		hex, key, win string
	}{
		{topicTypes{Key: "string", Window: &windowType{Form: "time", SizeMs: 10000}}, "61" + "0000000000002710", "s:a", "10000/20000"},
		{topicTypes{Key: "long", Window: &windowType{Form: "time", SizeMs: 5}}, "0000000000000007" + "0000000000000000", "n:7", "0/5"},
		{topicTypes{Key: "string", Window: &windowType{Form: "session"}}, "62" + "0000000000000fa0" + "00000000000003e8", "s:b", "1000/4000"},
		{topicTypes{Key: "string"}, "61", "s:a", ""},
	} {
		b, _ := hex.DecodeString(tc.hex)
		k, w, err := decodeKey(tc.types, b)
		if err != nil || k != tc.key || w != tc.win {
			t.Errorf("%s: got %q %q (%v), want %q %q", tc.hex, k, w, err, tc.key, tc.win)
		}
	}
	if _, _, err := decodeKey(topicTypes{Key: "string", Window: &windowType{Form: "session"}}, []byte("short")); err == nil {
		t.Error("a session key of 5 bytes: no error")
	}
}
