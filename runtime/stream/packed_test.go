package stream

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestPackedQueueRoundTrip: records packed and taken back are the records
// fetched, field for field (nil and empty bytes kept apart), in order,
// across chunks and with takes between pushes.
func TestPackedQueueRoundTrip(t *testing.T) {
	ctx := context.WithValue(context.Background(), struct{}{}, "client")
	var fetched []kgo.Record
	for i := range 3000 {
		r := kgo.Record{
			Topic: "in", Partition: 3, Offset: int64(100 + i + i/7),
			Timestamp:  time.Unix(0, int64(1_700_000_000_000+(i%5)*1000-(i%3)*7)*1e6),
			Key:        []byte(fmt.Sprintf("key-%d", i)),
			Value:      []byte(fmt.Sprintf("value-%d", i*i)),
			ProducerID: int64(7 + i/1500), LeaderEpoch: int32(i / 2000), ProducerEpoch: 2,
			Context: ctx,
		}
		switch i % 11 {
		case 1:
			r.Key = nil
		case 2:
			r.Value = nil
		case 3:
			r.Key, r.Value = []byte{}, []byte{}
		case 4:
			r.Headers = []kgo.RecordHeader{{Key: "h", Value: []byte("v")}, {Key: "", Value: nil}, {Key: "e", Value: []byte{}}}
		}
		fetched = append(fetched, r)
	}
	var q packedQueue
	var got []*kgo.Record
	for i := 0; i < len(fetched); {
		n := min(1+i%700, len(fetched)-i)
		var batch []*kgo.Record
		for j := range n {
			r := fetched[i+j] // a copy: what was pushed may be reused
			batch = append(batch, &r)
		}
		q.push(batch)
		i += n
		got = q.take(got, 300, "in", 3)
		held := 0
		for _, c := range q.chunks {
			held += cap(c.data)
		}
		if q.size() != held || (q.len() > 0) != (held > 0) {
			t.Fatalf("after %d records pushed: size %d, chunks hold %d bytes for %d records", i, q.size(), held, q.len())
		}
	}
	for q.len() > 0 {
		got = q.take(got, packedRun, "in", 3)
	}
	if q.size() != 0 {
		t.Fatalf("size %d with nothing packed", q.size())
	}
	if len(got) != len(fetched) {
		t.Fatalf("got %d records back, want %d", len(got), len(fetched))
	}
	for i, r := range got {
		want := fetched[i]
		if !reflect.DeepEqual(*r, want) || (r.Key == nil) != (want.Key == nil) || (r.Value == nil) != (want.Value == nil) {
			t.Fatalf("record %d: got %+v, want %+v", i, *r, want)
		}
		if !r.Timestamp.Equal(want.Timestamp) || r.Timestamp != want.Timestamp {
			t.Fatalf("record %d: timestamp %v, want %v", i, r.Timestamp, want.Timestamp)
		}
	}
}
