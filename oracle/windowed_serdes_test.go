package oracle_test

import (
	"encoding/hex"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/runtime/serde"
)

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
