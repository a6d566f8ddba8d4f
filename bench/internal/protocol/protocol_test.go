package protocol

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseFindsTheLastResultLine(t *testing.T) {
	var out bytes.Buffer
	out.WriteString("some log line\n")
	Print(&out, Result{Contender: "raw", Consumed: 1})
	out.WriteString("KGENBENCH-RESULT is mentioned in a log line, not at its start\n")
	want := Result{Contender: "kgen", Workload: Count, Guarantee: AtLeastOnce, Consumed: 10, SinkAcked: 10, ChangelogAck: 10, FirstRecordNs: 5, LastOutputNs: 9}
	Print(&out, want)
	out.WriteString("trailing output\n")
	got, err := Parse(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Parse (-want +got):\n%s", diff)
	}
	if _, err := Parse([]byte("no result here\n")); err == nil {
		t.Error("Parse of output without a result line: no error")
	}
}

func TestExpected(t *testing.T) {
	for _, tc := range []struct {
		workload string
		want     Expect
	}{
		{SourceOnly, Expect{}},
		{Passthrough, Expect{Sink: 7}},
		{KVPut, Expect{Changelog: 7, Store: KVStore}},
		{Count, Expect{Sink: 7, Changelog: 7, Store: CountStore}},
	} {
		got, err := Expected(tc.workload, 7)
		if err != nil {
			t.Fatalf("%s: %v", tc.workload, err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.workload, diff)
		}
	}
	if _, err := Expected("windowed-count", 7); err == nil {
		t.Error("unknown workload: no error")
	}
}
