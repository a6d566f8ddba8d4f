package stream

import (
	"bytes"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The balancer is tested as franz-go tests its sticky balancer: members,
// what each owns and reports, the partition counts -> the plan every member
// reads back, through the same encoding and decoding a real group uses, with
// no broker.

// balJoiner is one member as it joins.
type balJoiner struct {
	id       string
	instance string             // "" reports no instance (the leader uses the member id)
	owns     string             // tasks owned, "0_1 1_0": every topic of each task's sub-topology
	claims   map[string][]int32 // owned partitions claimed in addition, topic by topic
	gen      int32              // generation of the claim; 0 means 1
	state    map[TaskID]int64   // the state it holds, as it reports it
	userData []byte             // raw join user data instead of instance and state
	topics   []string           // subscription; nil: every topic of the topology
}

// balGot is what one member reads from its assignment.
type balGot struct {
	Active  string // tasks, "0_0 1_0", sorted
	Standby string
}

type balSetup struct {
	subs     []*subtopology
	counts   map[string]int32
	standbys int
}

// copart is the topology most cases use: sub-topology 0 reads the
// co-partitioned topics a and b, sub-topology 1 reads c.
func copart(a, c int32) balSetup {
	return balSetup{
		subs: []*subtopology{
			{id: 0, topics: []string{"a", "b"}},
			{id: 1, topics: []string{"c"}},
		},
		counts: map[string]int32{"a": a, "b": a, "c": c},
	}
}

func (s balSetup) withStandbys(n int) balSetup { s.standbys = n; return s }

// logged gives every sub-topology a store with a changelog, so that its
// tasks get standbys.
func (s balSetup) logged() balSetup {
	subs := make([]*subtopology, len(s.subs))
	for i, sub := range s.subs {
		c := *sub
		c.stores = append(slices.Clone(c.stores), &storeDef{name: fmt.Sprintf("store%d", c.id), opts: StoreOptions{Changelog: true}})
		subs[i] = &c
	}
	s.subs = subs
	return s
}

func (s balSetup) allTopics() []string {
	var ts []string
	for _, sub := range s.subs {
		ts = append(ts, sub.topics...)
	}
	sort.Strings(ts)
	return ts
}

// parseTasks reads "0_1 1_0".
func parseTasks(t testing.TB, s string) []TaskID {
	t.Helper()
	var ids []TaskID
	for _, f := range strings.Fields(s) {
		sub, part, ok := strings.Cut(f, "_")
		si, err1 := strconv.Atoi(sub)
		pi, err2 := strconv.ParseInt(part, 10, 32)
		if !ok || err1 != nil || err2 != nil {
			t.Fatalf("bad task %q", f)
		}
		ids = append(ids, TaskID{si, int32(pi)})
	}
	return ids
}

func formatTasks(ids []TaskID) string {
	ids = append([]TaskID(nil), ids...)
	sortTaskIDs(ids)
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = id.String()
	}
	return strings.Join(s, " ")
}

func sortTaskIDs(ids []TaskID) {
	sort.Slice(ids, func(i, j int) bool {
		return ids[i].Subtopology < ids[j].Subtopology ||
			ids[i].Subtopology == ids[j].Subtopology && ids[i].Partition < ids[j].Partition
	})
}

// balRound is one rebalance: what the leader planned, as each member reads
// it back.
type balRound struct {
	got   map[string]balGot
	parts map[string]map[string][]int32 // member -> topic -> partitions
	log   string                        // what the leader and members logged
}

// joinMetadata is what j sends when it joins.
func (s balSetup) joinMetadata(t testing.TB, j balJoiner) []byte {
	t.Helper()
	owned := map[string][]int32{}
	for _, id := range parseTasks(t, j.owns) {
		for _, topic := range s.subs[id.Subtopology].topics {
			owned[topic] = append(owned[topic], id.Partition)
		}
	}
	for topic, ps := range j.claims {
		owned[topic] = append(owned[topic], ps...)
	}
	gen := j.gen
	if gen == 0 {
		gen = 1
	}
	topics := j.topics
	if topics == nil {
		topics = s.allTopics()
	}
	mb := &coPartitionBalancer{subs: s.subs}
	info := memberInfo{Instance: j.instance}
	for id, off := range j.state {
		info.State = append(info.State, taskOffset{Sub: id.Subtopology, Part: id.Partition, Offset: off})
	}
	mb.report(info)
	meta := mb.JoinGroupMetadata(topics, owned, gen)
	if j.userData != nil {
		var m kmsg.ConsumerMemberMetadata
		if err := m.ReadFrom(meta); err != nil {
			t.Fatal(err)
		}
		m.UserData = j.userData
		meta = m.AppendTo(nil)
	}
	return meta
}

// balance runs one rebalance with a leader of its own (the plan does not
// depend on which member leads) and decodes every member's assignment as
// that member would.
func (s balSetup) balance(t testing.TB, joiners []balJoiner) balRound {
	t.Helper()
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	members := make([]kmsg.JoinGroupResponseMember, len(joiners))
	for i, j := range joiners {
		members[i] = kmsg.JoinGroupResponseMember{MemberID: j.id, ProtocolMetadata: s.joinMetadata(t, j)}
	}
	leader := &coPartitionBalancer{subs: s.subs, standbys: s.standbys, log: log}
	cb, err := kgo.NewConsumerBalancer(leader, members)
	if err != nil {
		t.Fatal(err)
	}
	round := balRound{got: map[string]balGot{}, parts: map[string]map[string][]int32{}}
	for _, a := range leader.Balance(cb, s.counts).IntoSyncAssignment() {
		mb := &coPartitionBalancer{subs: s.subs, log: log}
		parts, err := mb.ParseSyncAssignment(a.MemberAssignment)
		if err != nil {
			t.Fatalf("member %s cannot read its assignment: %v", a.MemberID, err)
		}
		for _, ps := range parts {
			sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
		}
		standbys, _, _ := mb.standbyTasks()
		round.parts[a.MemberID] = parts
		round.got[a.MemberID] = balGot{Active: formatTasks(tasksOf(s.subs, parts)), Standby: formatTasks(standbys)}
	}
	round.log = logs.String()
	return round
}

// tasksOf lists the tasks of which parts holds at least one partition.
func tasksOf(subs []*subtopology, parts map[string][]int32) []TaskID {
	seen := map[TaskID]bool{}
	var ids []TaskID
	for _, s := range subs {
		for _, topic := range s.topics {
			for _, p := range parts[topic] {
				id := TaskID{s.id, p}
				if !seen[id] {
					seen[id] = true
					ids = append(ids, id)
				}
			}
		}
	}
	return ids
}

// checkPlan lists what a plan breaks of the balancer's promises, whatever
// its inputs: no partition on two members, every task whole on its member
// (all its co-partitioned topics), no partition that is not a task's, no
// standby on the instance of its active or twice on one instance, no more
// standbys than asked, no task on a member that does not subscribe to all
// its topics.
func (s balSetup) checkPlan(r balRound, joiners []balJoiner) []string {
	instance := leaderInstances(joiners)
	subscribed := map[string]map[string]bool{}
	for _, j := range joiners {
		subscribed[j.id] = map[string]bool{}
		for _, topic := range orTopics(j.topics, s.allTopics()) {
			subscribed[j.id][topic] = true
		}
	}
	var bad []string
	taskCount := map[int]int32{}
	for _, sub := range s.subs {
		n := int32(-1)
		for _, t := range sub.topics {
			if c, ok := s.counts[t]; ok && (n < 0 || c < n) {
				n = c
			}
		}
		taskCount[sub.id] = max(n, 0)
	}
	owner := map[string]string{} // "topic/p" -> member
	activeOn := map[TaskID]string{}
	for m, parts := range r.parts {
		for topic, ps := range parts {
			for _, p := range ps {
				k := fmt.Sprintf("%s/%d", topic, p)
				if o, dup := owner[k]; dup {
					bad = append(bad, fmt.Sprintf("%s on %s and %s", k, o, m))
				}
				if !subscribed[m][topic] {
					bad = append(bad, fmt.Sprintf("%s on %s, which does not subscribe to %s", k, m, topic))
				}
				owner[k] = m
			}
		}
		for _, sub := range s.subs {
			have := map[int32]int{}
			for _, topic := range sub.topics {
				for _, p := range parts[topic] {
					have[p]++
					if p < 0 || p >= taskCount[sub.id] {
						bad = append(bad, fmt.Sprintf("%s/%d on %s is no task's (sub-topology %d has %d tasks)", topic, p, m, sub.id, taskCount[sub.id]))
					}
				}
			}
			for p, n := range have {
				if n != len(sub.topics) {
					bad = append(bad, fmt.Sprintf("task %d_%d on %s with %d of its %d topics", sub.id, p, m, n, len(sub.topics)))
				}
				activeOn[TaskID{sub.id, p}] = m
			}
		}
	}
	for m, g := range r.got {
		sbs := g.Standby
		if sbs == "" {
			continue
		}
		for _, id := range tasksIn(sbs) {
			if a, ok := activeOn[id]; ok && instance[a] == instance[m] {
				bad = append(bad, fmt.Sprintf("standby %s on %s, the instance (%s) of its active %s", id, m, instance[m], a))
			}
		}
	}
	perTask := map[TaskID]map[string]bool{}
	for m, g := range r.got {
		for _, id := range tasksIn(g.Standby) {
			for _, topic := range s.subs[id.Subtopology].topics {
				if !subscribed[m][topic] {
					bad = append(bad, fmt.Sprintf("standby %s on %s, which does not subscribe to %s", id, m, topic))
				}
			}
			if perTask[id] == nil {
				perTask[id] = map[string]bool{}
			}
			if perTask[id][instance[m]] {
				bad = append(bad, fmt.Sprintf("two standbys of %s on instance %s", id, instance[m]))
			}
			perTask[id][instance[m]] = true
		}
	}
	for id, insts := range perTask {
		if len(insts) > s.standbys {
			bad = append(bad, fmt.Sprintf("%d standbys of %s, %d asked", len(insts), id, s.standbys))
		}
		if !s.subs[id.Subtopology].logged() {
			bad = append(bad, fmt.Sprintf("standby of %s, whose sub-topology has no changelogged store", id))
		}
	}
	// Every active task with a changelog has as many standbys as asked, or
	// one on each other instance with a member that reads its topics.
	for id, a := range activeOn {
		if !s.subs[id.Subtopology].logged() {
			continue
		}
		readers := map[string]bool{}
		for _, j := range joiners {
			reads := true
			for _, topic := range s.subs[id.Subtopology].topics {
				reads = reads && subscribed[j.id][topic]
			}
			if reads && instance[j.id] != instance[a] {
				readers[instance[j.id]] = true
			}
		}
		if want := min(s.standbys, len(readers)); len(perTask[id]) != want {
			bad = append(bad, fmt.Sprintf("%d standbys of %s, want %d (%d asked, %d other instances read it)", len(perTask[id]), id, want, s.standbys, len(readers)))
		}
	}
	sort.Strings(bad)
	return bad
}

// tasksIn reads "0_1 1_0" as formatTasks writes it.
func tasksIn(s string) []TaskID {
	var ids []TaskID
	for _, f := range strings.Fields(s) {
		sub, part, _ := strings.Cut(f, "_")
		si, _ := strconv.Atoi(sub)
		pi, _ := strconv.ParseInt(part, 10, 32)
		ids = append(ids, TaskID{si, int32(pi)})
	}
	return ids
}

func orTopics(a, b []string) []string {
	if a != nil {
		return a
	}
	return b
}

// instances is the instance each joiner says it is, or its member id.
func instances(joiners []balJoiner) map[string]string {
	m := map[string]string{}
	for _, j := range joiners {
		m[j.id] = j.instance
		if j.instance == "" {
			m[j.id] = j.id
		}
	}
	return m
}

// wordCount is the topology of issue 21 on n partitions: sub-topology 0
// splits sentences (no state), 1 counts the words (a store).
func wordCount(n int32) balSetup {
	return balSetup{
		subs: []*subtopology{
			{id: 0, topics: []string{"sentences"}},
			{id: 1, topics: []string{"words"}, stores: []*storeDef{{name: "counts"}}},
		},
		counts: map[string]int32{"sentences": n, "words": n},
	}
}

func TestBalancerPlan(t *testing.T) {
	cases := []struct {
		name    string
		setup   balSetup
		joiners []balJoiner
		want    map[string]balGot
		wantLog string // a substring of the log, if any
	}{
		{
			name:  "fresh group of two: each sub-topology split evenly, the remainder to the first",
			setup: copart(4, 2),
			joiners: []balJoiner{
				{id: "m2", instance: "i2"},
				{id: "m1", instance: "i1"},
			},
			want: map[string]balGot{
				"m1": {Active: "0_0 0_1 1_0"},
				"m2": {Active: "0_2 0_3 1_1"},
			},
		},
		{
			// Issue 21: each instance got one whole sub-topology, and one
			// of them all the state.
			name:  "word count on two instances: half of each sub-topology each",
			setup: wordCount(8),
			joiners: []balJoiner{
				{id: "m1", instance: "i1"},
				{id: "m2", instance: "i2"},
			},
			want: map[string]balGot{
				"m1": {Active: "0_0 0_1 0_2 0_3 1_0 1_1 1_2 1_3"},
				"m2": {Active: "0_4 0_5 0_6 0_7 1_4 1_5 1_6 1_7"},
			},
		},
		{
			name:  "issue 21's plan, owned: every task moves to balance it, the state first",
			setup: wordCount(4),
			joiners: []balJoiner{
				{id: "m1", instance: "i1", owns: "0_0 0_1 0_2 0_3", gen: 3},
				{id: "m2", instance: "i2", owns: "1_0 1_1 1_2 1_3", gen: 3, state: map[TaskID]int64{{1, 0}: 9, {1, 1}: 9, {1, 2}: 9, {1, 3}: 9}},
			},
			// m1 keeps the first two of sub-topology 0 and m2 of 1; the
			// others are revoked, to move in the next round.
			want: map[string]balGot{
				"m1": {Active: "0_0 0_1"},
				"m2": {Active: "1_0 1_1"},
			},
		},
		{
			name: "stateful tasks are balanced on their own",
			setup: balSetup{
				subs: []*subtopology{
					{id: 0, topics: []string{"a"}},
					{id: 1, topics: []string{"b"}, stores: []*storeDef{{name: "x"}}},
					{id: 2, topics: []string{"c"}},
					{id: 3, topics: []string{"d"}, stores: []*storeDef{{name: "y"}}},
				},
				counts: map[string]int32{"a": 1, "b": 1, "c": 1, "d": 1},
			},
			joiners: []balJoiner{
				{id: "m1", instance: "i1"},
				{id: "m2", instance: "i2"},
			},
			// Shared out in the order 1, 3, 0, 2. In the order of the ids,
			// the stateless 0_0 and 2_0 would go to m1 and both stateful
			// tasks to m2.
			want: map[string]balGot{
				"m1": {Active: "0_0 1_0"},
				"m2": {Active: "2_0 3_0"},
			},
		},
		{
			name:  "fresh group of three with a standby each: standbys on the other instances",
			setup: copart(4, 2).logged().withStandbys(1),
			joiners: []balJoiner{
				{id: "m1", instance: "i1"},
				{id: "m2", instance: "i2"},
				{id: "m3", instance: "i3"},
			},
			// Sub-topology 0's remainder goes to m1, so 1's two tasks go
			// to m2 and m3.
			want: map[string]balGot{
				"m1": {Active: "0_0 0_1", Standby: "1_0 1_1"},
				"m2": {Active: "0_2 1_0", Standby: "0_0 0_3"},
				"m3": {Active: "0_3 1_1", Standby: "0_1 0_2"},
			},
		},
		{
			name:  "balanced shares other than a fresh group's are kept: nothing moves",
			setup: copart(4, 2),
			joiners: []balJoiner{
				{id: "m1", instance: "i1", owns: "0_0 1_0", gen: 4},
				{id: "m2", instance: "i2", owns: "0_1 0_2", gen: 4},
				{id: "m3", instance: "i3", owns: "0_3 1_1", gen: 4},
			},
			// A fresh group gives sub-topology 0's remainder to m1 (the
			// case above), and m1 would trade 1_0 for one of m2's.
			want: map[string]balGot{
				"m1": {Active: "0_0 1_0"},
				"m2": {Active: "0_1 0_2"},
				"m3": {Active: "0_3 1_1"},
			},
		},
		{
			name:  "a member that left: its tasks spread, the others stay",
			setup: copart(4, 2),
			joiners: []balJoiner{
				{id: "m1", instance: "i1", owns: "0_0 1_1", gen: 5},
				{id: "m2", instance: "i2", owns: "0_2 1_0", gen: 5},
				// m3 owned 0_1 and 0_3 and is gone.
			},
			want: map[string]balGot{
				"m1": {Active: "0_0 0_1 1_1"},
				"m2": {Active: "0_2 0_3 1_0"},
			},
		},
		{
			name:  "a member that left: each moving task goes to the member with most of its state",
			setup: copart(4, 2),
			joiners: []balJoiner{
				{id: "m1", instance: "i1", owns: "0_0 1_1", gen: 5, state: map[TaskID]int64{{0, 0}: 10, {0, 3}: 100}},
				{id: "m2", instance: "i2", owns: "0_2 1_0", gen: 5, state: map[TaskID]int64{{0, 1}: 500, {0, 3}: 50}},
			},
			// The reverse of the case above: state beats the tie-break.
			want: map[string]balGot{
				"m1": {Active: "0_0 0_3 1_1"},
				"m2": {Active: "0_1 0_2 1_0"},
			},
		},
		{
			name:  "an owner over its share gives up first the tasks a taker holds state for",
			setup: wordCount(4),
			joiners: []balJoiner{
				{id: "m1", instance: "i1", owns: "0_0 0_1 0_2 0_3 1_0 1_1 1_2 1_3", gen: 5},
				// m2 ran 1_0 and 1_1 before it restarted.
				{id: "m2", instance: "i2", state: map[TaskID]int64{{1, 0}: 70, {1, 1}: 80}},
			},
			// m1 keeps two of each sub-topology: 1_2 and 1_3, not the
			// first two; the rest is revoked, to move next round.
			want: map[string]balGot{
				"m1": {Active: "0_0 0_1 1_2 1_3"},
				"m2": {},
			},
		},
		{
			name:  "the member with most state is full: the task goes to the next",
			setup: copart(4, 2),
			joiners: []balJoiner{
				{id: "m1", instance: "i1", owns: "0_0 1_1", gen: 5},
				{id: "m2", instance: "i2", owns: "0_2 1_0", gen: 5, state: map[TaskID]int64{{0, 1}: 500, {0, 3}: 600}},
			},
			want: map[string]balGot{
				"m1": {Active: "0_0 0_3 1_1"},
				"m2": {Active: "0_1 0_2 1_0"},
			},
		},
		{
			name:  "state does not move a task that may stay",
			setup: copart(4, 2),
			joiners: []balJoiner{
				{id: "m1", instance: "i1", owns: "0_0 0_1 1_0", gen: 5},
				{id: "m2", instance: "i2", owns: "0_2 0_3 1_1", gen: 5, state: map[TaskID]int64{{0, 0}: 1 << 40}},
			},
			want: map[string]balGot{
				"m1": {Active: "0_0 0_1 1_0"},
				"m2": {Active: "0_2 0_3 1_1"},
			},
		},
		{
			name: "standbys only of tasks with a changelog",
			setup: balSetup{
				subs: []*subtopology{
					{id: 0, topics: []string{"a"}}, // no store
					{id: 1, topics: []string{"b"}, stores: []*storeDef{{name: "logged", opts: StoreOptions{Changelog: true}}}},
					{id: 2, topics: []string{"c"}, stores: []*storeDef{{name: "unlogged"}}},
				},
				counts:   map[string]int32{"a": 2, "b": 2, "c": 2},
				standbys: 1,
			},
			joiners: []balJoiner{
				{id: "m1", instance: "i1"},
				{id: "m2", instance: "i2"},
			},
			// Sub-topology 1's tasks each have a standby on the other
			// instance; 0's (stateless) and 2's (a store without a
			// changelog, nothing to follow) have none.
			want: map[string]balGot{
				"m1": {Active: "0_0 1_0 2_0", Standby: "1_1"},
				"m2": {Active: "0_1 1_1 2_1", Standby: "1_0"},
			},
		},
		{
			name:  "a standby goes to the member with most of the task's state",
			setup: copart(4, 2).logged().withStandbys(1),
			joiners: []balJoiner{
				{id: "m1", instance: "i1", owns: "0_0 0_1", gen: 2},
				{id: "m2", instance: "i2", owns: "0_2 1_0", gen: 2, state: map[TaskID]int64{{0, 0}: 100}},
				{id: "m3", instance: "i3", owns: "0_3 1_1", gen: 2, state: map[TaskID]int64{{0, 0}: 300}},
			},
			// Without state, 0_0's standby would go to m2 (the first of
			// the least loaded).
			want: map[string]balGot{
				"m1": {Active: "0_0 0_1", Standby: "1_0 1_1"},
				"m2": {Active: "0_2 1_0", Standby: "0_1 0_3"},
				"m3": {Active: "0_3 1_1", Standby: "0_0 0_2"},
			},
		},
		{
			name:  "several units of one instance: no standby beside its active",
			setup: copart(4, 2).logged().withStandbys(1),
			joiners: []balJoiner{
				{id: "a0", instance: "A"},
				{id: "a1", instance: "A"},
				{id: "b0", instance: "B"},
				{id: "b1", instance: "B"},
			},
			// Each instance gets two tasks of sub-topology 0 and one of 1.
			want: map[string]balGot{
				"a0": {Active: "0_0 1_0", Standby: "0_3 1_1"},
				"a1": {Active: "0_1", Standby: "0_2"},
				"b0": {Active: "0_2 1_1", Standby: "0_0 0_1"},
				"b1": {Active: "0_3", Standby: "1_0"},
			},
		},
		{
			name:  "more replicas than other instances: one standby per other instance",
			setup: copart(2, 1).logged().withStandbys(2),
			joiners: []balJoiner{
				{id: "a0", instance: "A"},
				{id: "a1", instance: "A"},
				{id: "b0", instance: "B"},
			},
			// Tasks 0_0 1_0 0_1: a0 0_0, a1 1_0, b0 0_1.
			want: map[string]balGot{
				"a0": {Active: "0_0", Standby: "0_1"},
				"a1": {Active: "1_0"},
				"b0": {Active: "0_1", Standby: "0_0 1_0"},
			},
		},
		{
			name:  "uneven partition counts across sub-topologies: balanced within one",
			setup: copart(3, 1),
			joiners: []balJoiner{
				{id: "m1", instance: "i1"},
				{id: "m2", instance: "i2"},
				{id: "m3", instance: "i3"},
			},
			// One task of sub-topology 0 each; the remainder, 1_0, to m1.
			want: map[string]balGot{
				"m1": {Active: "0_0 1_0"},
				"m2": {Active: "0_1"},
				"m3": {Active: "0_2"},
			},
		},
		{
			name: "co-partitioned topics with different counts: only the common partitions, said loudly",
			setup: balSetup{
				subs:   []*subtopology{{id: 0, topics: []string{"a", "b"}}},
				counts: map[string]int32{"a": 4, "b": 2},
			},
			joiners: []balJoiner{
				{id: "m1", instance: "i1"},
				{id: "m2", instance: "i2"},
			},
			want: map[string]balGot{
				"m1": {Active: "0_0"},
				"m2": {Active: "0_1"},
			},
			wantLog: "co-partitioned source topics have different partition counts",
		},
		{
			name:  "a member without instance is its own instance",
			setup: copart(1, 1).logged().withStandbys(1),
			joiners: []balJoiner{
				{id: "m1"},
				{id: "m2"},
			},
			want: map[string]balGot{
				"m1": {Active: "0_0", Standby: "1_0"},
				"m2": {Active: "1_0", Standby: "0_0"},
			},
		},
		{
			name: "an older member does not get the sub-topology it does not know",
			setup: balSetup{
				subs: []*subtopology{
					{id: 0, topics: []string{"a", "b"}},
					{id: 1, topics: []string{"c"}},
					{id: 2, topics: []string{"d"}}, // added by the new version
				},
				counts:   map[string]int32{"a": 2, "b": 2, "c": 1, "d": 2},
				standbys: 1,
			}.logged(),
			joiners: []balJoiner{
				{id: "m1", instance: "i1"},
				{id: "m2", instance: "i2", topics: []string{"a", "b", "c"}},
			},
			// The tasks of d, which only m1 can run, are shared out first
			// (2_0 2_1 to m1) and have no standby; then one task of
			// sub-topology 0 each, and 1_0 to m2, which has fewer.
			want: map[string]balGot{
				"m1": {Active: "0_0 2_0 2_1", Standby: "0_1 1_0"},
				"m2": {Active: "0_1 1_0", Standby: "0_0"},
			},
		},
		{
			name: "readers of a topic go over their share rather than leave it unread",
			setup: balSetup{
				subs: []*subtopology{
					{id: 0, topics: []string{"a"}},
					{id: 1, topics: []string{"d"}},
				},
				counts: map[string]int32{"a": 1, "d": 3},
			},
			joiners: []balJoiner{
				{id: "m1", instance: "i1", topics: []string{"a", "d"}},
				{id: "m2", instance: "i2", topics: []string{"a"}},
			},
			// Only m1 reads d: its three tasks are shared out first, to
			// m1, and 0_0 goes to m2, which has fewer.
			want: map[string]balGot{
				"m1": {Active: "1_0 1_1 1_2"},
				"m2": {Active: "0_0"},
			},
		},
		{
			name: "a task nobody subscribes to stays unassigned, said loudly",
			setup: balSetup{
				subs: []*subtopology{
					{id: 0, topics: []string{"a"}},
					{id: 1, topics: []string{"d"}},
				},
				counts: map[string]int32{"a": 2, "d": 1},
			},
			joiners: []balJoiner{
				{id: "m1", instance: "i1", topics: []string{"a"}},
				{id: "m2", instance: "i2", topics: []string{"a"}},
			},
			want: map[string]balGot{
				"m1": {Active: "0_0"},
				"m2": {Active: "0_1"},
			},
			wantLog: "no member subscribes to every source topic of these tasks; they stay unassigned\" tasks=1_0",
		},
		{
			name:  "a stale claim loses to a newer generation",
			setup: copart(2, 1),
			joiners: []balJoiner{
				// m1 missed a rebalance and still claims 0_0, which m2
				// has owned since.
				{id: "m1", instance: "i1", owns: "0_0 1_0", gen: 3},
				{id: "m2", instance: "i2", owns: "0_0 0_1", gen: 4},
			},
			// One task of sub-topology 0 each, 1_0 to m1 (the first): m2
			// keeps 0_0 and revokes 0_1, which goes to m1 next round; m1
			// keeps 1_0.
			want: map[string]balGot{
				"m1": {Active: "1_0"},
				"m2": {Active: "0_0"},
			},
		},
		{
			name:  "garbage join user data: the member still gets its share",
			setup: copart(1, 1).logged().withStandbys(1),
			joiners: []balJoiner{
				{id: "m1", instance: "i1"},
				{id: "m2", userData: []byte("\x00\xffnot json")},
			},
			want: map[string]balGot{
				"m1": {Active: "0_0", Standby: "1_0"},
				"m2": {Active: "1_0", Standby: "0_0"},
			},
			wantLog: "undecodable user data",
		},
		{
			name:  "state for sub-topologies this leader does not know is ignored",
			setup: copart(2, 1),
			joiners: []balJoiner{
				{id: "m1", instance: "i1", userData: []byte(`{"i":"i1","s":[{"t":7,"p":0,"o":9},{"t":0,"p":-1,"o":9},{"t":0,"p":1,"o":-5}]}`)},
				{id: "m2", instance: "i2", userData: []byte(`{"i":"i2","s":[{"t":0,"p":1,"o":1},{"t":"x"}]}`)},
			},
			// A fresh group: one task of sub-topology 0 each, 1_0 to m1;
			// m2's valid state takes 0_1.
			want: map[string]balGot{
				"m1": {Active: "0_0 1_0"},
				"m2": {Active: "0_1"},
			},
			wantLog: "sub-topology 7 (this topology has 2)",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := c.setup.balance(t, c.joiners)
			if diff := cmp.Diff(c.want, r.got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
			if bad := c.setup.checkPlan(r, c.joiners); len(bad) > 0 {
				t.Errorf("plan breaks promises:\n%s", strings.Join(bad, "\n"))
			}
			if c.wantLog != "" && !strings.Contains(r.log, c.wantLog) {
				t.Errorf("log does not say %q:\n%s", c.wantLog, r.log)
			}
			if c.wantLog == "" && r.log != "" {
				t.Errorf("unexpected log:\n%s", r.log)
			}
		})
	}
}

// TestBalancerCooperativeRounds runs rebalances in a row, each member then
// owning what it was given, as a cooperative group does: a task that moves
// is first revoked (unassigned for one round), and only it moves.
func TestBalancerCooperativeRounds(t *testing.T) {
	cases := []struct {
		name    string
		setup   balSetup
		joiners []balJoiner // the first round; later rounds own what they got
		want    []map[string]balGot
	}{
		{
			name:  "a member joins: only what must move moves, after a round unassigned",
			setup: copart(4, 2),
			joiners: []balJoiner{
				{id: "m1", instance: "i1", owns: "0_0 0_1 0_2 0_3 1_0 1_1", gen: 3},
				{id: "m2", instance: "i2"},
			},
			want: []map[string]balGot{
				{"m1": {Active: "0_0 0_1 1_0"}, "m2": {}},
				{"m1": {Active: "0_0 0_1 1_0"}, "m2": {Active: "0_2 0_3 1_1"}},
				{"m1": {Active: "0_0 0_1 1_0"}, "m2": {Active: "0_2 0_3 1_1"}},
			},
		},
		{
			name:  "a third member joins a balanced pair: each gives up one",
			setup: copart(4, 2),
			joiners: []balJoiner{
				{id: "m1", instance: "i1", owns: "0_0 0_1 1_0", gen: 7},
				{id: "m2", instance: "i2", owns: "0_2 0_3 1_1", gen: 7},
				{id: "m3", instance: "i3"},
			},
			// Sub-topology 0: one each and the remainder to m1, which
			// keeps 0_0 0_1, so m2 gives 0_3 up. Sub-topology 1: one each
			// to m2 and m3 (fewer tasks than m1), so m1 gives 1_0 up. Only
			// m3's share moves.
			want: []map[string]balGot{
				{"m1": {Active: "0_0 0_1"}, "m2": {Active: "0_2 1_1"}, "m3": {}},
				{"m1": {Active: "0_0 0_1"}, "m2": {Active: "0_2 1_1"}, "m3": {Active: "0_3 1_0"}},
			},
		},
		{
			name:  "a member joins: the moving tasks stay warm on their old owner as standbys",
			setup: copart(4, 2).logged().withStandbys(1),
			joiners: []balJoiner{
				{id: "m1", instance: "i1", owns: "0_0 0_1 0_2 0_3 1_0 1_1", gen: 3},
				{id: "m2", instance: "i2"},
			},
			want: []map[string]balGot{
				// Round one: the moving tasks are planned on m2, so their
				// standby goes to m1, which revokes them; m2 follows the
				// tasks m1 keeps.
				{"m1": {Active: "0_0 0_1 1_0", Standby: "0_2 0_3 1_1"}, "m2": {Standby: "0_0 0_1 1_0"}},
				{"m1": {Active: "0_0 0_1 1_0", Standby: "0_2 0_3 1_1"}, "m2": {Active: "0_2 0_3 1_1", Standby: "0_0 0_1 1_0"}},
			},
		},
		{
			name: "a claim that splits a task waits a round instead of splitting it",
			setup: balSetup{
				subs:   []*subtopology{{id: 0, topics: []string{"a", "b"}}},
				counts: map[string]int32{"a": 2, "b": 2},
			},
			joiners: []balJoiner{
				// An older version read b in a sub-topology of its own:
				// m2 claims b/0 alone.
				{id: "m1", instance: "i1"},
				{id: "m2", instance: "i2", claims: map[string][]int32{"b": {0}}, gen: 2},
			},
			want: []map[string]balGot{
				// 0_0 is planned on m1, but b/0 is m2's to revoke first:
				// m1 gets neither a/0 nor b/0 this round.
				{"m1": {}, "m2": {Active: "0_1"}},
				{"m1": {Active: "0_0"}, "m2": {Active: "0_1"}},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			joiners := append([]balJoiner(nil), c.joiners...)
			for i, want := range c.want {
				r := c.setup.balance(t, joiners)
				if diff := cmp.Diff(want, r.got); diff != "" {
					t.Fatalf("round %d (-want +got):\n%s", i+1, diff)
				}
				if bad := c.setup.checkPlan(r, joiners); len(bad) > 0 {
					t.Fatalf("round %d breaks promises:\n%s", i+1, strings.Join(bad, "\n"))
				}
				// Every member now owns what it got, in the next generation.
				gen := int32(1)
				for _, j := range joiners {
					gen = max(gen, j.gen)
				}
				for k := range joiners {
					j := &joiners[k]
					j.owns, j.claims, j.gen = r.got[j.id].Active, nil, gen+1
				}
			}
		})
	}
}
