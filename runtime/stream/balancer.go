package stream

import (
	"log/slog"
	"sort"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// coPartitionBalancer assigns tasks, not partitions: partition p of every
// source topic of a sub-topology goes to the same member. It is sticky (a
// task stays with its owner while counts stay balanced), cooperative (a task
// that moves is first revoked, then assigned in the next round, so tasks that
// stay never stop) and state-aware: a task that must move goes preferably to
// the member that already holds the most of its state (a standby or a
// previous owner), and each task gets standby replicas on other instances.
//
// Each unit has its own balancer: members describe themselves in their join
// metadata (memberInfo), and the leader sends every member its standby tasks
// in the assignment's user data. Both come from other processes, possibly of
// another version, and are decoded as untrusted input (groupmeta.go).
type coPartitionBalancer struct {
	subs     []*subtopology
	standbys int
	// log receives what was dropped from other members' metadata or the
	// leader's assignment. Nil: slog.Default().
	log *slog.Logger

	mu       sync.Mutex
	self     memberInfo      // what this unit reports when it joins
	assigned []TaskID        // standby tasks from the last assignment
	actives  map[TaskID]bool // active tasks of the last assignment
	version  int             // bumped with every assignment
	// owners are the task owners the leader sent with the last
	// assignment, nil if it sent none; ownersSeq orders them among the
	// units of the App (the newest wins).
	owners    *ownerMap
	ownersSeq uint64
}

// memberInfo is a member's join user data.
type memberInfo struct {
	// Version is the group metadata's version (groupMetaVersion when
	// encoded; 1 for a member of a kgen before versions were written).
	Version  int    `json:"v,omitempty"`
	Instance string `json:"i"`
	// Addr is the instance's advertised address (AdvertisedAddress), for
	// queries; empty when it advertises none.
	Addr string `json:"a,omitempty"`
	// State lists the tasks this member holds state for, with how far its
	// stores are (the sum of their changelog offsets).
	State []taskOffset `json:"s,omitempty"`
}

type taskOffset struct {
	Sub    int   `json:"t"`
	Part   int32 `json:"p"`
	Offset int64 `json:"o"`
}

var _ kgo.ConsumerBalancerBalance = (*coPartitionBalancer)(nil)

func (*coPartitionBalancer) ProtocolName() string { return "kgen-copartition" }
func (*coPartitionBalancer) IsCooperative() bool  { return true }

// report sets what the unit says about itself at its next join.
func (b *coPartitionBalancer) report(info memberInfo) {
	sortTaskOffsets(info.State)
	b.mu.Lock()
	b.self = info
	b.mu.Unlock()
}

func (b *coPartitionBalancer) logger() *slog.Logger {
	if b.log != nil {
		return b.log
	}
	return slog.Default()
}

// standbyTasks returns the standby and active tasks of the last assignment
// and its version. Every standby id names a sub-topology of b.subs and a
// non-negative partition: the decoding dropped the others.
func (b *coPartitionBalancer) standbyTasks() ([]TaskID, map[TaskID]bool, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.assigned, b.actives, b.version
}

func (b *coPartitionBalancer) JoinGroupMetadata(topics []string, owned map[string][]int32, generation int32) []byte {
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Version = 3
	meta.Topics = topics
	meta.Generation = generation
	names := make([]string, 0, len(owned))
	for t := range owned {
		names = append(names, t)
	}
	sort.Strings(names)
	for _, t := range names {
		op := kmsg.NewConsumerMemberMetadataOwnedPartition()
		op.Topic = t
		op.Partitions = owned[t]
		meta.OwnedPartitions = append(meta.OwnedPartitions, op)
	}
	b.mu.Lock()
	meta.UserData = encodeMemberInfo(b.self)
	b.mu.Unlock()
	return meta.AppendTo(nil)
}

func (b *coPartitionBalancer) ParseSyncAssignment(assignment []byte) (map[string][]int32, error) {
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(assignment); err != nil {
		return nil, err
	}
	// Standbys the member cannot use are dropped, not fatal: an error here
	// would fail the sync and cost the member its active tasks too.
	standbys, owners, err := decodeAssignment(a.UserData, len(b.subs))
	if err != nil {
		b.logger().Warn("ignoring part of the group leader's assignment", "error", err)
	}
	parts, err := kgo.ParseConsumerSyncAssignment(assignment)
	if err != nil {
		return nil, err
	}
	actives := map[TaskID]bool{}
	for _, s := range b.subs {
		if len(s.topics) == 0 {
			continue
		}
		for _, p := range parts[s.topics[0]] {
			actives[TaskID{s.id, p}] = true
		}
	}
	b.mu.Lock()
	b.assigned, b.actives = standbys, actives
	b.owners, b.ownersSeq = owners, ownersSeq.Add(1)
	b.version++
	b.mu.Unlock()
	return parts, nil
}

func (b *coPartitionBalancer) MemberBalancer(members []kmsg.JoinGroupResponseMember) (kgo.GroupMemberBalancer, map[string]struct{}, error) {
	cb, err := kgo.NewConsumerBalancer(b, members)
	if err != nil {
		return nil, nil, err
	}
	return cb, cb.MemberTopics(), nil
}

type balMember struct {
	m        *kmsg.JoinGroupResponseMember
	instance string
	state    map[TaskID]int64
	topics   map[string]bool // what it subscribes to
	tasks    int
	standbys []TaskID
}

// Balance computes the plan. topics holds the partition count of every
// topic some member consumes.
func (b *coPartitionBalancer) Balance(cb *kgo.ConsumerBalancer, topics map[string]int32) kgo.IntoSyncAssignment {
	var members []*balMember
	prev := map[TaskID]*balMember{}
	prevGen := map[TaskID]int32{}
	cb.EachMember(func(m *kmsg.JoinGroupResponseMember, meta *kmsg.ConsumerMemberMetadata) {
		mb := &balMember{m: m, state: map[TaskID]int64{}, topics: make(map[string]bool, len(meta.Topics))}
		for _, t := range meta.Topics {
			mb.topics[t] = true
		}
		info, err := decodeMemberInfo(meta.UserData, len(b.subs))
		if err != nil {
			b.logger().Warn("ignoring part of a member's join metadata", "member", m.MemberID, "error", err)
		}
		mb.instance = info.Instance
		for _, o := range info.State {
			mb.state[TaskID{o.Sub, o.Part}] = o.Offset
		}
		if mb.instance == "" {
			mb.instance = m.MemberID
		}
		members = append(members, mb)
		for _, op := range meta.OwnedPartitions {
			for _, s := range b.subs {
				if len(s.topics) == 0 || s.topics[0] != op.Topic {
					continue
				}
				for _, p := range op.Partitions {
					id := TaskID{s.id, p}
					// A stale claim from an older generation loses.
					if g, ok := prevGen[id]; !ok || meta.Generation > g {
						prev[id], prevGen[id] = mb, meta.Generation
					}
				}
			}
		}
	})
	plan := cb.NewPlan()
	if len(members) == 0 {
		return plan
	}

	var tasks []TaskID
	for _, s := range b.subs {
		n := int32(-1)
		uneven := false
		for _, t := range s.topics {
			c, ok := topics[t]
			if !ok {
				uneven = true
				continue
			}
			if n >= 0 && c != n {
				uneven = true
			}
			if n < 0 || c < n {
				n = c
			}
		}
		if uneven {
			// New partitions were added to one topic after the start
			// checked co-partitioning, or a topic is gone. Only the
			// partitions every topic has make tasks: say which are left.
			counts := make(map[string]int32, len(s.topics))
			for _, t := range s.topics {
				counts[t] = topics[t]
			}
			b.logger().Error("co-partitioned source topics have different partition counts (0: no metadata); only partitions all of them have are assigned",
				"subtopology", s.id, "partitions", counts, "assigned", max(n, 0))
		}
		for p := int32(0); p < n; p++ {
			tasks = append(tasks, TaskID{s.id, p})
		}
	}
	// Interleave sub-topologies so each member gets a mix.
	sort.SliceStable(tasks, func(i, j int) bool {
		if tasks[i].Partition != tasks[j].Partition {
			return tasks[i].Partition < tasks[j].Partition
		}
		return tasks[i].Subtopology < tasks[j].Subtopology
	})

	base := len(tasks) / len(members)
	extra := len(tasks) % len(members) // members that may hold base+1
	fits := func(m *balMember) bool {
		return m.tasks < base || m.tasks == base && extra > 0
	}
	take := func(m *balMember) {
		if m.tasks == base {
			extra--
		}
		m.tasks++
	}
	// A member runs only the tasks whose topics it subscribes to: during a
	// rolling upgrade, a member of the older version does not know a
	// sub-topology added since, and given its partitions it would hold them
	// and run nothing until it is upgraded.
	reads := func(m *balMember, id TaskID) bool {
		for _, t := range b.subs[id.Subtopology].topics {
			if !m.topics[t] {
				return false
			}
		}
		return true
	}
	owner := map[TaskID]*balMember{}
	// 1. Tasks stay where they are.
	for _, id := range tasks {
		if m := prev[id]; m != nil && fits(m) && reads(m, id) {
			take(m)
			owner[id] = m
		}
	}
	// 2. A moving task goes to the member with the most of its state, then
	// to the least loaded. Tasks fewer members can run choose first, so
	// that the others do not fill those members up; when every member
	// subscribes to everything, the order stays the interleaved one.
	readers := make(map[TaskID]int, len(tasks))
	for _, id := range tasks {
		for _, m := range members {
			if reads(m, id) {
				readers[id]++
			}
		}
	}
	moving := append([]TaskID(nil), tasks...)
	sort.SliceStable(moving, func(i, j int) bool { return readers[moving[i]] < readers[moving[j]] })
	var unread []TaskID
	for _, id := range moving {
		if owner[id] != nil {
			continue
		}
		var best *balMember
		for _, m := range members {
			if !fits(m) || !reads(m, id) {
				continue
			}
			if best == nil || m.state[id] > best.state[id] || m.state[id] == best.state[id] && m.tasks < best.tasks {
				best = m
			}
		}
		if best == nil {
			// Only when some members do not read every topic: the
			// readers are full, so one of them goes over its share.
			for _, m := range members {
				if reads(m, id) && (best == nil || m.tasks < best.tasks) {
					best = m
				}
			}
		}
		if best == nil {
			unread = append(unread, id)
			continue
		}
		take(best)
		owner[id] = best
	}
	if len(unread) > 0 {
		b.logger().Error("no member subscribes to every source topic of these tasks; they stay unassigned", "tasks", formatTaskIDs(unread))
	}
	for _, id := range tasks {
		if owner[id] == nil {
			continue
		}
		for _, t := range b.subs[id.Subtopology].topics {
			plan.AddPartition(owner[id].m, t, id.Partition)
		}
	}
	plan.AdjustCooperative(cb)
	b.keepCoPartitioned(plan)

	// 3. Standbys: on other instances than the active's, preferring state,
	// then the fewest standbys.
	if b.standbys > 0 {
		for _, id := range tasks {
			if owner[id] == nil {
				continue
			}
			used := map[string]bool{owner[id].instance: true}
			for range b.standbys {
				var best *balMember
				for _, m := range members {
					if used[m.instance] || !reads(m, id) {
						continue
					}
					if best == nil || m.state[id] > best.state[id] ||
						m.state[id] == best.state[id] && len(m.standbys) < len(best.standbys) {
						best = m
					}
				}
				if best == nil {
					break // fewer instances than replicas
				}
				used[best.instance] = true
				best.standbys = append(best.standbys, id)
			}
		}
	}
	return &standbyPlan{plan: plan, members: members, b: b}
}

func formatTaskIDs(ids []TaskID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = id.String()
	}
	return strings.Join(s, " ")
}

// keepCoPartitioned removes from the plan every task that AdjustCooperative
// left with only some of its topics on a member. AdjustCooperative works
// per partition: when another member claims one topic's partition of a task
// but not the others (its topology grouped the topics differently, during a
// rolling upgrade), the new owner would get the task's other partitions a
// round early, and run the task on half its input. The claimant revokes what
// it claimed, which triggers the next round, where the task moves whole.
func (b *coPartitionBalancer) keepCoPartitioned(plan *kgo.BalancePlan) {
	for _, topics := range plan.AsMemberIDMap() {
		for _, s := range b.subs {
			if len(s.topics) < 2 {
				continue
			}
			// How many of the sub-topology's topics hold each partition.
			have := map[int32]int{}
			for _, t := range s.topics {
				for _, p := range topics[t] {
					have[p]++
				}
			}
			split := false
			for _, n := range have {
				if n != len(s.topics) {
					split = true
				}
			}
			if !split {
				continue
			}
			for _, t := range s.topics {
				kept := topics[t][:0]
				for _, p := range topics[t] {
					if have[p] == len(s.topics) {
						kept = append(kept, p)
					}
				}
				if len(kept) == 0 {
					delete(topics, t)
				} else {
					topics[t] = kept
				}
			}
		}
	}
}

// standbyPlan adds each member's standby tasks to its assignment, and the
// owners of every task (queryAssignment, querymeta.go).
type standbyPlan struct {
	plan    *kgo.BalancePlan
	members []*balMember
	b       *coPartitionBalancer
}

func (p *standbyPlan) IntoSyncAssignment() []kmsg.SyncGroupRequestGroupAssignment {
	out := p.plan.IntoSyncAssignment()
	p.b.addAssignmentUserData(out, p.members)
	return out
}
