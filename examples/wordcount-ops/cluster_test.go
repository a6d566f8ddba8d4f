package wordcountops

import (
	"encoding/json"
	"testing"

	"github.com/kgen-dev/kgen/examples/internal/wordcounttest"
	"github.com/kgen-dev/kgen/examples/wordcount-ops/model"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// The word count as deployed: 8 partitions, two instances, one of them
// stopped and started again mid-run, on kfake and on the real broker
// (KGEN_TEST_BROKERS), under both guarantees (wordcounttest.OnACluster).
func TestWordCountOnACluster(t *testing.T) {
	wordcounttest.OnACluster(t, "wordcount-ops", func() (*stream.Topology, error) { return NewTopology(Factories{}, DefaultSerdes()) },
		TopicSentences, TopicWordCounts, func(text string) ([]byte, error) { return json.Marshal(model.Sentence{Text: text}) })
}
