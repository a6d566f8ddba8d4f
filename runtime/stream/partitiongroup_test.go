package stream

import (
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A task's choice of the next record (Kafka Streams' PartitionGroup), with a
// fake clock and fake inputs: no broker, no serdes, no processors.

// fakeInput is one input partition holding records by timestamp. A record
// with a negative timestamp fails to decode.
type fakeInput struct {
	name string
	ts   []int64 // buffered timestamps, head first
	off  int64   // offset of the head
	st   inputState
}

func (f *fakeInput) topic() string { return f.name }
func (f *fakeInput) push(recs []*kgo.Record) {
	for _, r := range recs {
		f.ts = append(f.ts, r.Timestamp.UnixMilli())
		f.st.fetchedTo = r.Offset + 1
	}
}
func (f *fakeInput) buffered() int    { return len(f.ts) }
func (f *fakeInput) packedBytes() int { return 0 }
func (f *fakeInput) peek() (int64, bool, error) {
	if len(f.ts) == 0 {
		return 0, false, nil
	}
	if f.ts[0] < 0 {
		return 0, true, errors.New("value: bad bytes")
	}
	return f.ts[0], true, nil
}
func (f *fakeInput) head() *kgo.Record {
	return &kgo.Record{Topic: f.name, Partition: f.st.partition, Offset: f.off}
}
func (f *fakeInput) forwardHead() {}
func (f *fakeInput) pop() {
	f.ts = f.ts[1:]
	f.st.next = f.off + 1
	f.off++
}
func (f *fakeInput) state() *inputState { return &f.st }

// deliver is what a fetch does: records arrive, the end offset is known.
func (f *fakeInput) deliver(end int64, ts ...int64) {
	for _, t := range ts {
		f.ts = append(f.ts, t)
	}
	f.st.end = end
	f.st.fetchedTo = end
}

type fakeEnv struct{ cfg config }

func (e *fakeEnv) send(*task, *outRecord)                        {}
func (e *fakeEnv) deadLetter(string, *kgo.Record, string, error) {}
func (e *fakeEnv) partitions(string) int32                       { return 1 }
func (e *fakeEnv) config() *config                               { return &e.cfg }
func (e *fakeEnv) global(string) *globalStore                    { return nil }
func (e *fakeEnv) logChange(*taskStore, []byte, []byte, int64)   {}

// inputSpec describes an input at the start: its buffered timestamps and
// what the last fetch said.
type inputSpec struct {
	name string
	ts   []int64
	// fetch: "never" (no fetch yet), "end" (fetched to its end offset)
	// or "behind" (the end offset is past what was fetched).
	fetch string
}

// newTestTask builds a task over fake inputs, in the order given (a real
// task sorts its inputs by topic; the cases give them sorted).
func newTestTask(t *testing.T, cfg config, specs ...inputSpec) (*task, map[string]*fakeInput) {
	t.Helper()
	cfg.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	sub := &subtopology{sources: map[string]*node{}}
	tk := &task{id: TaskID{0, 3}, sub: sub, env: &fakeEnv{cfg: cfg}, streamTime: -1}
	byName := map[string]*fakeInput{}
	for _, s := range specs {
		in := &fakeInput{name: s.name, ts: append([]int64(nil), s.ts...), off: 100}
		in.st = inputState{partition: 3, next: -1, committed: -1, start: -1, end: -1, fetchedTo: -1}
		switch s.fetch {
		case "never":
		case "end":
			in.st.end, in.st.fetchedTo = 100+int64(len(s.ts)), 100+int64(len(s.ts))
		case "behind":
			in.st.end, in.st.fetchedTo = 500, 100+int64(len(s.ts))
		default:
			t.Fatalf("input %s: fetch %q", s.name, s.fetch)
		}
		sub.sources[s.name] = &node{name: "source-" + s.name}
		tk.inputs = append(tk.inputs, in)
		byName[s.name] = in
	}
	return tk, byName
}

// pgStep is one call of next at a time on the fake clock; the record picked
// is taken off its input, as processing does.
type pgStep struct {
	at      time.Duration // since the start
	deliver func(map[string]*fakeInput)
	want    string // the input picked, "" for none
}

func TestPartitionGroupNext(t *testing.T) {
	const grace = 500 * time.Millisecond
	defaults := config{fetchGrace: grace}
	idle := func(d time.Duration) config { c := defaults; c.maxTaskIdle = d; return c }
	cases := []struct {
		name         string
		cfg          config
		inputs       []inputSpec
		steps        []pgStep
		wantEnforced uint64
	}{
		{
			name:   "one input never waits",
			cfg:    defaults,
			inputs: []inputSpec{{name: "a", ts: []int64{5, 3}, fetch: "behind"}},
			// Offset order within a partition, whatever the timestamps.
			steps: []pgStep{{at: 0, want: "a"}, {at: 0, want: "a"}, {at: 0, want: ""}},
		},
		{
			name: "the smallest head timestamp goes first, a tie to the first input",
			cfg:  defaults,
			inputs: []inputSpec{
				{name: "a", ts: []int64{10, 20, 30}, fetch: "end"},
				{name: "b", ts: []int64{10, 15, 40}, fetch: "end"},
			},
			steps: []pgStep{
				{want: "a"}, {want: "b"}, {want: "b"}, {want: "a"}, {want: "a"},
				// b holds 40 and a is empty but at its end: no idle, go.
				{want: "b"}, {want: ""},
			},
		},
		{
			name: "an input at its end holds nothing back without MaxTaskIdle",
			cfg:  defaults,
			inputs: []inputSpec{
				{name: "a", ts: []int64{10}, fetch: "end"},
				{name: "b", fetch: "end"},
			},
			steps: []pgStep{{want: "a"}},
		},
		{
			name: "an input at its end holds back for MaxTaskIdle",
			cfg:  idle(time.Second),
			inputs: []inputSpec{
				{name: "a", ts: []int64{10}, fetch: "end"},
				{name: "b", fetch: "end"},
			},
			steps: []pgStep{
				{at: 0, want: ""},
				{at: 999 * time.Millisecond, want: ""},
				{at: time.Second, want: "a"},
			},
			wantEnforced: 1,
		},
		{
			// Kafka Streams waits for a partition whose lag is unknown
			// with no deadline; kgen cannot: franz-go hands over no
			// fetch answer without records.
			name: "an input never fetched holds back for FetchGrace, then an enforced step",
			cfg:  defaults,
			inputs: []inputSpec{
				{name: "a", ts: []int64{10, 20}, fetch: "end"},
				{name: "b", fetch: "never"},
			},
			steps: []pgStep{
				{at: 0, want: ""},
				{at: grace - time.Millisecond, want: ""},
				{at: grace, want: "a"},
				{at: grace, want: "a"},
			},
			wantEnforced: 2,
		},
		{
			name: "an input never fetched holds back for MaxTaskIdle when longer",
			cfg:  idle(2 * time.Second),
			inputs: []inputSpec{
				{name: "a", ts: []int64{10}, fetch: "end"},
				{name: "b", fetch: "never"},
			},
			steps: []pgStep{
				{at: 0, want: ""},
				{at: time.Second, want: ""},
				{at: 2 * time.Second, want: "a"},
			},
			wantEnforced: 1,
		},
		{
			name: "an input behind its end offset holds back with no deadline, whatever MaxTaskIdle",
			cfg:  defaults,
			inputs: []inputSpec{
				{name: "a", ts: []int64{10}, fetch: "end"},
				{name: "b", fetch: "behind"},
			},
			steps: []pgStep{
				{at: 0, want: ""},
				{at: 500 * time.Millisecond, want: ""},
				{at: time.Hour, want: ""},
			},
		},
		{
			name: "the MaxTaskIdle wait starts once the awaited input is known to be at its end",
			cfg:  idle(time.Second),
			inputs: []inputSpec{
				{name: "a", ts: []int64{10, 20}, fetch: "end"},
				{name: "b", fetch: "behind"},
			},
			steps: []pgStep{
				{at: 0, want: ""},
				{at: 5 * time.Second, want: ""},
				// b's fetch says it is at its end: the idle wait begins now.
				{at: 6 * time.Second, deliver: func(in map[string]*fakeInput) { in["b"].deliver(500) }, want: ""},
				{at: 7*time.Second - time.Millisecond, want: ""},
				{at: 7 * time.Second, want: "a"},
				{at: 7 * time.Second, want: "a"},
			},
			wantEnforced: 2,
		},
		{
			name: "the awaited record arrives earlier than the others: it goes first",
			cfg:  defaults,
			inputs: []inputSpec{
				{name: "a", ts: []int64{10, 30}, fetch: "end"},
				{name: "b", fetch: "behind"},
			},
			steps: []pgStep{
				{at: 0, want: ""},
				{at: time.Minute, deliver: func(in map[string]*fakeInput) { in["b"].deliver(501, 5) }, want: "b"},
				{at: time.Minute, want: "a"},
				{at: time.Minute, want: "a"},
			},
		},
		{
			name: "a wait that ended with nothing to do starts afresh",
			cfg:  idle(time.Second),
			inputs: []inputSpec{
				{name: "a", ts: []int64{10}, fetch: "end"},
				{name: "b", fetch: "end"},
			},
			steps: []pgStep{
				{at: 0, want: ""},
				{at: time.Second, want: "a"},
				{at: 2 * time.Second, want: ""}, // both empty: no wait
				{at: 3 * time.Second, deliver: func(in map[string]*fakeInput) { in["a"].deliver(102, 20) }, want: ""},
				{at: 4*time.Second - time.Millisecond, want: ""},
				{at: 4 * time.Second, want: "a"},
			},
			wantEnforced: 2,
		},
		{
			name: "negative MaxTaskIdle never waits",
			cfg:  idle(-1),
			inputs: []inputSpec{
				{name: "a", ts: []int64{10}, fetch: "end"},
				{name: "b", fetch: "behind"},
				{name: "c", fetch: "never"},
			},
			steps: []pgStep{{want: "a"}},
		},
		{
			name: "one input that may deliver holds back the task however many others have data",
			cfg:  defaults,
			inputs: []inputSpec{
				{name: "a", ts: []int64{10}, fetch: "end"},
				{name: "b", ts: []int64{11}, fetch: "end"},
				{name: "c", fetch: "never"},
			},
			steps: []pgStep{{at: 0, want: ""}, {at: grace - time.Millisecond, want: ""}, {at: grace - time.Millisecond, deliver: func(in map[string]*fakeInput) { in["c"].deliver(100) }, want: "a"}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tk, inputs := newTestTask(t, c.cfg, c.inputs...)
			start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			var want, got []string
			for _, s := range c.steps {
				if s.deliver != nil {
					s.deliver(inputs)
				}
				in, err := tk.next(start.Add(s.at))
				if err != nil {
					t.Fatalf("at %v: %v", s.at, err)
				}
				name := ""
				if in != nil {
					name = in.topic()
					in.pop()
				}
				want, got = append(want, s.at.String()+" "+s.want), append(got, s.at.String()+" "+name)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("picks (-want +got):\n%s", diff)
			}
			if tk.enforcedSteps != c.wantEnforced {
				t.Errorf("enforced steps %d, want %d", tk.enforcedSteps, c.wantEnforced)
			}
		})
	}
}

// TestPartitionGroupKeepsGoingAfterTheWait: once a task has waited out an
// empty input, it processes what it has until that input delivers, as Kafka
// Streams does (its idle deadline stays until the partition has data).
func TestPartitionGroupKeepsGoingAfterTheWait(t *testing.T) {
	for _, c := range []struct {
		name  string
		cfg   config
		fetch string
	}{
		{name: "at its end, past MaxTaskIdle", cfg: config{maxTaskIdle: time.Second}, fetch: "end"},
		{name: "never fetched, past FetchGrace", cfg: config{fetchGrace: time.Second}, fetch: "never"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tk, _ := newTestTask(t, c.cfg,
				inputSpec{name: "a", ts: []int64{10, 20, 30}, fetch: "end"},
				inputSpec{name: "b", fetch: c.fetch})
			start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			if in, _ := tk.next(start); in != nil {
				t.Fatalf("took %s at once, want a wait", in.topic())
			}
			wait := max(c.cfg.maxTaskIdle, c.cfg.fetchGrace)
			var got []string
			for range 3 {
				in, err := tk.next(start.Add(wait))
				if err != nil {
					t.Fatal(err)
				}
				if in == nil {
					got = append(got, "")
					continue
				}
				got = append(got, in.topic())
				in.pop()
			}
			if diff := cmp.Diff([]string{"a", "a", "a"}, got); diff != "" {
				t.Fatalf("after the wait, the task waits the whole time again before each record (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPartitionGroupUndecodableHead(t *testing.T) {
	for _, c := range []struct {
		name    string
		policy  ErrorPolicy
		want    []string
		wantErr string
	}{
		{name: "continue: skipped, the next record is chosen", policy: LogAndContinue(), want: []string{"b", "a"}},
		{name: "fail: an error naming the record", policy: Fail(), wantErr: "a/3@100"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := config{onDeserializeError: c.policy}
			tk, inputs := newTestTask(t, cfg,
				inputSpec{name: "a", ts: []int64{-1, 30}, fetch: "end"},
				inputSpec{name: "b", ts: []int64{20}, fetch: "end"})
			var got []string
			var err error
			for {
				var in input
				in, err = tk.next(time.Unix(0, 0))
				if err != nil || in == nil {
					break
				}
				got = append(got, in.topic())
				in.pop()
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("picks (-want +got):\n%s", diff)
			}
			if c.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if tk.skipped != 1 || inputs["a"].st.next != 102 {
					t.Errorf("skipped %d, a's next offset %d; want 1, 102", tk.skipped, inputs["a"].st.next)
				}
				return
			}
			var rerr *RecordError
			if !errors.As(err, &rerr) {
				t.Fatalf("error %v, want a *RecordError", err)
			}
			want := RecordError{Topic: "a", Partition: 3, Offset: 100, Node: "source-a", Deserialize: true}
			gotErr := *rerr
			gotErr.Err = nil
			if diff := cmp.Diff(want, gotErr); diff != "" {
				t.Errorf("record error (-want +got):\n%s", diff)
			}
			if inputs["a"].st.next != 100 {
				t.Errorf("a's next offset %d, want 100: a restart must begin with the failed record", inputs["a"].st.next)
			}
			if !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("error %q does not name the record %s", err, c.wantErr)
			}
		})
	}
}
