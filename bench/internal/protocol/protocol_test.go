package protocol

import (
	"bytes"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseFindsTheLastResultLine(t *testing.T) {
	var out bytes.Buffer
	out.WriteString("some log line\n")
	Print(&out, Result{Contender: "raw", Consumed: 1})
	out.WriteString("KGENBENCH-RESULT is mentioned in a log line, not at its start\n")
	want := Result{Contender: "kgen", Workload: Count, Guarantee: AtLeastOnce, Consumed: 10, SinkAcked: 10, ChangelogAck: 10, FirstRecordNs: 5, LastOutputNs: 9, PeakRSSBytes: 7 << 20}
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
		{WindowedCount, Expect{Sink: 7, Changelog: 7, Store: WindowStore}},
		{WindowedCountFinal, Expect{Sink: 3, Changelog: 7, Store: WindowStore}},
		{RestoreKV, Expect{Store: KVStore}},
		{RestoreWindow, Expect{Store: WindowStore}},
	} {
		got, err := Expected(tc.workload, 7, 3)
		if err != nil {
			t.Fatalf("%s: %v", tc.workload, err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.workload, diff)
		}
	}
	if _, err := Expected("session-count", 7, 0); err == nil {
		t.Error("unknown workload: no error")
	}
}

func TestParseVmHWM(t *testing.T) {
	status := []byte("Name:\tkgenbench\nVmPeak:\t  812340 kB\nVmHWM:\t   52124 kB\nVmRSS:\t   50000 kB\n")
	got, err := parseVmHWM(status)
	if err != nil || got != 52124*1024 {
		t.Fatalf("parseVmHWM = %d, %v; want %d", got, err, 52124*1024)
	}
	if _, err := parseVmHWM([]byte("VmHWM:\t12 MB\n")); err == nil {
		t.Error("parseVmHWM accepted a unit other than kB")
	}
	if _, err := parseVmHWM([]byte("Name:\tx\n")); err == nil {
		t.Error("parseVmHWM accepted a status without VmHWM")
	}
}

// TestPrintReportsOwnPeakRSS checks that a result line carries the
// process's own peak RSS on Linux, where /proc/self/status exists.
func TestPrintReportsOwnPeakRSS(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc on this system")
	}
	var out bytes.Buffer
	Print(&out, Result{Contender: "x"})
	r, err := Parse(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if r.PeakRSSBytes <= 0 {
		t.Fatalf("peak RSS %d, want the process's VmHWM", r.PeakRSSBytes)
	}
}
