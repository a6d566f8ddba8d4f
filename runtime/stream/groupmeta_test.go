package stream

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestDecodeMemberInfo(t *testing.T) {
	cases := []struct {
		name    string
		data    string
		want    memberInfo
		wantErr string // substring; "" for no error
	}{
		{name: "empty", data: "", want: memberInfo{Version: 1}},
		{
			name: "valid, sorted on the way",
			data: `{"i":"a","s":[{"t":1,"p":0,"o":5},{"t":0,"p":3,"o":7}]}`,
			want: memberInfo{Version: 1, Instance: "a", State: []taskOffset{{0, 3, 7}, {1, 0, 5}}},
		},
		{
			name:    "a newer topology's sub-topology is dropped, the rest kept",
			data:    `{"i":"a","s":[{"t":2,"p":0,"o":5},{"t":1,"p":1,"o":1}]}`,
			want:    memberInfo{Version: 1, Instance: "a", State: []taskOffset{{1, 1, 1}}},
			wantErr: "member metadata: dropped 1 invalid entry: state of sub-topology 2 (this topology has 2)",
		},
		{
			name:    "negative partition, negative offset, duplicate, wrong type",
			data:    `{"i":"a","s":[{"t":0,"p":-1,"o":5},{"t":0,"p":1,"o":-1},{"t":0,"p":2,"o":1},{"t":0,"p":2,"o":9},{"t":"0"},7]}`,
			want:    memberInfo{Version: 1, Instance: "a", State: []taskOffset{{0, 2, 1}}},
			wantErr: "dropped 5 invalid entries: state of partition -1 of sub-topology 0, state of task 0_1 at offset -1, second state of task 0_2, ...",
		},
		{
			name:    "sub-topology past int",
			data:    `{"i":"a","s":[{"t":99999999999999999999,"p":0}]}`,
			want:    memberInfo{Version: 1, Instance: "a"},
			wantErr: "dropped 1 invalid entry: state entry",
		},
		{
			name:    "an instance of another type",
			data:    `{"i":12,"s":[{"t":0,"p":0,"o":1}]}`,
			want:    memberInfo{Version: 1, State: []taskOffset{{0, 0, 1}}},
			wantErr: `instance "12"`,
		},
		{name: "garbage", data: "\x00\x01\xff", want: memberInfo{Version: 1}, wantErr: "undecodable user data"},
		{name: "state of another shape", data: `{"i":"a","s":{"t":0}}`, want: memberInfo{Version: 1}, wantErr: "undecodable user data"},
		{name: "JSON null", data: `null`, want: memberInfo{Version: 1}},
		{
			name:    "too large",
			data:    `{"i":"` + strings.Repeat("x", maxGroupUserData) + `"}`,
			want:    memberInfo{Version: 1},
			wantErr: "more than the",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := decodeMemberInfo([]byte(c.data), 2)
			if diff := cmp.Diff(c.want, got, cmp.AllowUnexported(memberInfo{}, taskOffset{})); diff != "" {
				t.Errorf("info (-want +got):\n%s", diff)
			}
			checkErr(t, err, c.wantErr)
		})
	}
}

func TestDecodeStandbys(t *testing.T) {
	cases := []struct {
		name    string
		data    string
		want    []TaskID
		wantErr string
	}{
		{name: "empty", data: ""},
		{name: "none", data: `[]`},
		{name: "valid, sorted", data: `[{"t":1,"p":2},{"t":0,"p":5}]`, want: []TaskID{{0, 5}, {1, 2}}},
		{
			// The rolling upgrade of issue 9: the leader's topology has
			// a third sub-topology.
			name:    "a sub-topology this member does not know",
			data:    `[{"t":2,"p":0},{"t":0,"p":0}]`,
			want:    []TaskID{{0, 0}},
			wantErr: "assignment: dropped 1 invalid entry: standby of sub-topology 2 (this topology has 2)",
		},
		{
			name:    "negative ids, duplicates, other shapes",
			data:    `[{"t":-1,"p":0},{"t":0,"p":-3},{"t":1,"p":1},{"t":1,"p":1},"x",{"t":1.5}]`,
			want:    []TaskID{{1, 1}},
			wantErr: "dropped 5 invalid entries",
		},
		{name: "garbage", data: "\xff[", wantErr: "undecodable standby tasks"},
		{name: "an object", data: `{"t":0}`, wantErr: "undecodable standby tasks"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := decodeStandbys([]byte(c.data), 2)
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("standbys (-want +got):\n%s", diff)
			}
			checkErr(t, err, c.wantErr)
		})
	}
}

func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("unexpected error: %v", err)
	case want != "" && err == nil:
		t.Errorf("no error, want one with %q", want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Errorf("error %q does not contain %q", err, want)
	}
}

// TestBalancerParseSyncAssignmentUntrusted is the crash of issue 9: a leader
// with one more sub-topology sends this member a standby it cannot index.
// The member keeps its active partitions and the standbys it knows.
func TestBalancerParseSyncAssignmentUntrusted(t *testing.T) {
	var logs bytes.Buffer
	b := &coPartitionBalancer{subs: copart(4, 2).subs, log: slog.New(slog.NewTextHandler(&logs, nil))}
	cases := []struct {
		name        string
		userData    []byte
		wantStandby []TaskID
		wantLog     string
	}{
		{name: "a newer leader's sub-topology", userData: []byte(`[{"t":2,"p":0},{"t":1,"p":1}]`), wantStandby: []TaskID{{1, 1}}, wantLog: "sub-topology 2"},
		{name: "garbage", userData: []byte("\x00garbage"), wantLog: "undecodable standby tasks"},
		{name: "none", userData: nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			logs.Reset()
			a := kmsg.NewConsumerMemberAssignment()
			tp := kmsg.NewConsumerMemberAssignmentTopic()
			tp.Topic, tp.Partitions = "c", []int32{0}
			a.Topics = append(a.Topics, tp)
			a.UserData = c.userData
			parts, err := b.ParseSyncAssignment(a.AppendTo(nil))
			if err != nil {
				t.Fatalf("the member lost its assignment: %v", err)
			}
			if diff := cmp.Diff(map[string][]int32{"c": {0}}, parts); diff != "" {
				t.Errorf("partitions (-want +got):\n%s", diff)
			}
			standbys, actives, _ := b.standbyTasks()
			if diff := cmp.Diff(c.wantStandby, standbys); diff != "" {
				t.Errorf("standbys (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(map[TaskID]bool{{1, 0}: true}, actives); diff != "" {
				t.Errorf("actives (-want +got):\n%s", diff)
			}
			if !strings.Contains(logs.String(), c.wantLog) || c.wantLog == "" && logs.Len() > 0 {
				t.Errorf("log %q, want it to say %q", logs.String(), c.wantLog)
			}
		})
	}
}

// checkDecodedState asserts what decodeMemberInfo promises of what it
// returns, whatever it was given.
func checkDecodedState(t *testing.T, state []taskOffset, nsubs int) {
	t.Helper()
	for i, o := range state {
		if validTask(o.Sub, o.Part, nsubs) != "" || o.Offset < 0 {
			t.Fatalf("invalid entry kept: %+v", o)
		}
		if i > 0 {
			p := state[i-1]
			if p.Sub > o.Sub || p.Sub == o.Sub && p.Part >= o.Part {
				t.Fatalf("entries not sorted or duplicated: %+v then %+v", p, o)
			}
		}
	}
}

func FuzzDecodeMemberInfo(f *testing.F) {
	f.Add([]byte(`{"i":"a","s":[{"t":1,"p":0,"o":5},{"t":0,"p":3,"o":7}]}`), uint8(2))
	f.Add([]byte(`{"i":"a","s":[{"t":7,"p":-1,"o":-5},{"t":0,"p":2,"o":1},{"t":0,"p":2,"o":9},{"t":"0"},7]}`), uint8(2))
	f.Add([]byte(`{"i":12,"s":null}`), uint8(0))
	f.Add([]byte(`{"s":[{"t":99999999999999999999,"p":2147483648,"o":1e30}]}`), uint8(1))
	f.Add([]byte("\x00\x01\xff"), uint8(3))
	f.Add([]byte(`null`), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, nsubs uint8) {
		n := int(nsubs % 8)
		info, _ := decodeMemberInfo(data, n)
		checkDecodedState(t, info.State, n)
		// What survives decoding is stable: encoded and decoded again, it
		// is the same and nothing more is dropped.
		again, err := decodeMemberInfo(encodeMemberInfo(info), n)
		if err != nil {
			t.Fatalf("re-decoding %+v: %v", info, err)
		}
		if diff := cmp.Diff(info, again, cmp.AllowUnexported(memberInfo{}, taskOffset{})); diff != "" {
			t.Fatalf("round trip (-first +second):\n%s", diff)
		}
	})
}

func FuzzDecodeStandbys(f *testing.F) {
	f.Add([]byte(`[{"t":1,"p":2},{"t":0,"p":5}]`), uint8(2))
	f.Add([]byte(`[{"t":2,"p":0},{"t":0,"p":0}]`), uint8(2))
	f.Add([]byte(`[{"t":-1,"p":0},{"t":0,"p":-3},{"t":1,"p":1},{"t":1,"p":1},"x",{"t":1.5}]`), uint8(2))
	f.Add([]byte("\xff["), uint8(1))
	f.Add([]byte(`{"t":0}`), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, nsubs uint8) {
		n := int(nsubs % 8)
		ids, _ := decodeStandbys(data, n)
		for i, id := range ids {
			if validTask(id.Subtopology, id.Partition, n) != "" {
				t.Fatalf("invalid standby kept: %v", id)
			}
			if i > 0 && !(ids[i-1].Subtopology < id.Subtopology || ids[i-1].Subtopology == id.Subtopology && ids[i-1].Partition < id.Partition) {
				t.Fatalf("standbys not sorted or duplicated: %v", ids)
			}
		}
		again, err := decodeStandbys(encodeStandbys(ids), n)
		if err != nil {
			t.Fatalf("re-decoding %v: %v", ids, err)
		}
		if len(ids) == 0 {
			ids = nil
		}
		if diff := cmp.Diff(ids, again); diff != "" {
			t.Fatalf("round trip (-first +second):\n%s", diff)
		}
	})
}

// FuzzParseSyncAssignment feeds a member whole assignments: the member
// never panics, and what standbyTasks hands the unit can index its topology.
func FuzzParseSyncAssignment(f *testing.F) {
	enc := func(userData string, topics ...string) []byte {
		a := kmsg.NewConsumerMemberAssignment()
		for _, tn := range topics {
			tp := kmsg.NewConsumerMemberAssignmentTopic()
			tp.Topic, tp.Partitions = tn, []int32{0, 3, -1}
			a.Topics = append(a.Topics, tp)
		}
		if userData != "" {
			a.UserData = []byte(userData)
		}
		return a.AppendTo(nil)
	}
	f.Add(enc(`[{"t":1,"p":1},{"t":5,"p":0}]`, "a", "b", "c"))
	f.Add(enc(`garbage`, "c"))
	f.Add(enc(""))
	f.Add([]byte{0, 1, 0, 0, 0, 1})
	f.Add([]byte{})
	subs := copart(4, 2).subs
	f.Fuzz(func(t *testing.T, assignment []byte) {
		b := &coPartitionBalancer{subs: subs, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
		if _, err := b.ParseSyncAssignment(assignment); err != nil {
			return
		}
		standbys, actives, _ := b.standbyTasks()
		for _, id := range standbys {
			if id.Subtopology < 0 || id.Subtopology >= len(subs) || id.Partition < 0 {
				t.Fatalf("standby %v cannot index a topology of %d sub-topologies", id, len(subs))
			}
			_ = subs[id.Subtopology].topics // what reconcileStandbys does
		}
		for id := range actives {
			if id.Subtopology < 0 || id.Subtopology >= len(subs) {
				t.Fatalf("active %v cannot index the topology", id)
			}
		}
	})
}

// fuzzBytes hands out small numbers from the fuzzer's bytes, zeros once
// they run out, so every input is some scenario.
type fuzzBytes []byte

func (b *fuzzBytes) next(n int) int {
	if len(*b) == 0 || n <= 0 {
		return 0
	}
	v := int((*b)[0]) % n
	*b = (*b)[1:]
	return v
}

// fuzzScenario builds a topology, partition counts and the members of a
// rebalance from fuzz bytes. Honest members own whole tasks of topics they
// read; now and then a member also claims a stray partition, sends raw user
// data or does not read one topic.
func fuzzScenario(in []byte) (balSetup, []balJoiner) {
	b := fuzzBytes(in)
	topicNames := []string{"a", "b", "c", "d", "e", "f", "g"}
	var s balSetup
	ti := 0
	for i := range 1 + b.next(3) {
		sub := &subtopology{id: i}
		for range 1 + b.next(2) {
			if ti < len(topicNames) {
				sub.topics = append(sub.topics, topicNames[ti])
				ti++
			}
		}
		s.subs = append(s.subs, sub)
	}
	s.counts = map[string]int32{}
	for _, sub := range s.subs {
		n := int32(b.next(9))
		for _, topic := range sub.topics {
			c := n
			if b.next(8) == 0 { // now and then a co-partitioning gone wrong
				c = int32(b.next(9))
			}
			if b.next(16) != 0 { // now and then a topic without metadata
				s.counts[topic] = c
			}
		}
	}
	s.standbys = b.next(3)
	nm := 1 + b.next(6)
	joiners := make([]balJoiner, nm)
	gen := int32(1 + b.next(5))
	for i := range joiners {
		joiners[i] = balJoiner{
			id:       fmt.Sprintf("m%d", i),
			instance: fmt.Sprintf("i%d", b.next(4)),
			gen:      gen - int32(b.next(2)),
			state:    map[TaskID]int64{},
		}
		if all := s.allTopics(); b.next(5) == 0 {
			// A member of another version: it does not read one topic.
			drop := b.next(len(all))
			joiners[i].topics = append(append([]string{}, all[:drop]...), all[drop+1:]...)
		}
	}
	// Honest ownership: each task at most once, whole.
	for _, sub := range s.subs {
		n := int32(1 << 30)
		for _, topic := range sub.topics {
			n = min(n, s.counts[topic])
		}
		owned := make([][]string, nm)
		for p := int32(0); p < n; p++ {
			if o := b.next(nm + 1); o < nm && readsAll(joiners[o], sub) {
				owned[o] = append(owned[o], TaskID{sub.id, p}.String())
			}
			if m := b.next(nm + 1); m < nm {
				joiners[m].state[TaskID{sub.id, p}] = int64(b.next(100))
			}
		}
		for i := range joiners {
			joiners[i].owns = strings.TrimSpace(joiners[i].owns + " " + strings.Join(owned[i], " "))
		}
	}
	// Untrusted extras: stray claims (any topic, any partition, possibly a
	// task's partition claimed twice or split) and raw user data.
	for i := range joiners {
		if b.next(4) == 0 {
			topic := topicNames[b.next(len(topicNames))]
			joiners[i].claims = map[string][]int32{topic: {int32(b.next(12)) - 2}}
		}
		if b.next(6) == 0 && len(b) > 0 {
			l := b.next(len(b) + 1)
			l = min(l, len(b)) // next took a byte
			joiners[i].userData = append([]byte(nil), b[:l]...)
			b = b[l:]
		}
	}
	return s, joiners
}

func readsAll(j balJoiner, sub *subtopology) bool {
	if j.topics == nil {
		return true
	}
	for _, t := range sub.topics {
		if !slices.Contains(j.topics, t) {
			return false
		}
	}
	return true
}

// FuzzBalancerPlan balances fuzzed groups: the balancer never panics, no
// partition is on two members, every task is whole on its member, every
// standby is off its active's instance; a task missing from the plan is
// claimed by another member (it waits for that member's revoke); when
// every member subscribes to every topic, the next round, every member
// owning what it got, assigns every task exactly once, balanced within one.
func FuzzBalancerPlan(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 1, 4, 2, 3, 1, 2, 0, 1, 2, 3, 0, 1, 0, 1})
	f.Add([]byte{2, 2, 2, 2, 7, 7, 7, 5, 0, 3, 9, 9, 1, 0, 2, 1, 3, 0, 0, 0, 5, 1})
	f.Add([]byte("\x03\x01\x01\x01\x08\x00\x03\x08\x08\x02\x05\x02{\"i\":\"x\",\"s\":[{\"t\":9}]}"))
	f.Fuzz(func(t *testing.T, in []byte) {
		s, joiners := fuzzScenario(in)
		r := s.balance(t, joiners)
		if bad := s.checkPlan(r, joiners); len(bad) > 0 {
			t.Fatalf("plan breaks promises:\n%s", strings.Join(bad, "\n"))
		}
		claimed := map[string]bool{}
		for _, j := range joiners {
			for _, id := range tasksIn(j.owns) {
				for _, topic := range s.subs[id.Subtopology].topics {
					claimed[fmt.Sprintf("%s/%d", topic, id.Partition)] = true
				}
			}
			for topic, ps := range j.claims {
				for _, p := range ps {
					claimed[fmt.Sprintf("%s/%d", topic, p)] = true
				}
			}
		}
		all := planTasks(s)
		assigned := map[TaskID]bool{}
		for _, g := range r.got {
			for _, id := range tasksIn(g.Active) {
				assigned[id] = true
			}
		}
		for _, id := range all {
			if assigned[id] {
				continue
			}
			anyClaim := false
			for _, topic := range s.subs[id.Subtopology].topics {
				anyClaim = anyClaim || claimed[fmt.Sprintf("%s/%d", topic, id.Partition)]
			}
			if !anyClaim && readable(joiners, s.subs[id.Subtopology]) {
				t.Fatalf("task %s unassigned though nobody claims it", id)
			}
		}
		// The next round: everyone owns what it got.
		for k := range joiners {
			j := &joiners[k]
			j.owns, j.claims, j.gen = r.got[j.id].Active, nil, 100
		}
		r = s.balance(t, joiners)
		if bad := s.checkPlan(r, joiners); len(bad) > 0 {
			t.Fatalf("second round breaks promises:\n%s", strings.Join(bad, "\n"))
		}
		for _, j := range joiners {
			if j.topics != nil {
				// A member that goes over its share for a topic others
				// do not read may give tasks up in the next round.
				return
			}
		}
		counts := map[string]int{}
		n := 0
		for m, g := range r.got {
			ids := tasksIn(g.Active)
			counts[m] = len(ids)
			n += len(ids)
		}
		if n != len(all) {
			t.Fatalf("second round assigns %d of %d tasks: %v", n, len(all), r.got)
		}
		lo, hi := n, 0
		for _, j := range joiners {
			lo, hi = min(lo, counts[j.id]), max(hi, counts[j.id])
		}
		if hi-lo > 1 {
			t.Fatalf("second round unbalanced: %v", counts)
		}
	})
}

// readable says whether some member subscribes to every topic of sub.
func readable(joiners []balJoiner, sub *subtopology) bool {
	for _, j := range joiners {
		if readsAll(j, sub) {
			return true
		}
	}
	return false
}

// planTasks lists the tasks the partition counts make.
func planTasks(s balSetup) []TaskID {
	var ids []TaskID
	for _, sub := range s.subs {
		n := int32(-1)
		for _, topic := range sub.topics {
			if c, ok := s.counts[topic]; ok && (n < 0 || c < n) {
				n = c
			}
		}
		for p := int32(0); p < n; p++ {
			ids = append(ids, TaskID{sub.id, p})
		}
	}
	return ids
}

// leaderInstances is the instance the leader sees for each member: the
// reported one, or the member id when the user data said nothing usable.
func leaderInstances(joiners []balJoiner) map[string]string {
	m := instances(joiners)
	for _, j := range joiners {
		if j.userData != nil {
			info, _ := decodeMemberInfo(j.userData, 1<<30)
			m[j.id] = orDefault(info.Instance, j.id)
		}
	}
	return m
}

func orDefault(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
