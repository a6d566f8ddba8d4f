package stream

import (
	"encoding/json"
	"sort"
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
// in the assignment's user data.
type coPartitionBalancer struct {
	subs     []*subtopology
	standbys int

	mu       sync.Mutex
	self     memberInfo      // what this unit reports when it joins
	assigned []TaskID        // standby tasks from the last assignment
	actives  map[TaskID]bool // active tasks of the last assignment
	version  int             // bumped with every assignment
}

// memberInfo is a member's join user data.
type memberInfo struct {
	Instance string `json:"i"`
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
	sort.Slice(info.State, func(i, j int) bool {
		x, y := info.State[i], info.State[j]
		return x.Sub < y.Sub || x.Sub == y.Sub && x.Part < y.Part
	})
	b.mu.Lock()
	b.self = info
	b.mu.Unlock()
}

// standbyTasks returns the standby and active tasks of the last assignment
// and its version.
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
	meta.UserData, _ = json.Marshal(b.self)
	b.mu.Unlock()
	return meta.AppendTo(nil)
}

func (b *coPartitionBalancer) ParseSyncAssignment(assignment []byte) (map[string][]int32, error) {
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(assignment); err != nil {
		return nil, err
	}
	var standbys []TaskID
	if len(a.UserData) > 0 {
		var offs []taskOffset
		if err := json.Unmarshal(a.UserData, &offs); err != nil {
			return nil, err
		}
		for _, o := range offs {
			standbys = append(standbys, TaskID{o.Sub, o.Part})
		}
	}
	parts, err := kgo.ParseConsumerSyncAssignment(assignment)
	if err != nil {
		return nil, err
	}
	actives := map[TaskID]bool{}
	for _, s := range b.subs {
		for _, p := range parts[s.topics[0]] {
			actives[TaskID{s.id, p}] = true
		}
	}
	b.mu.Lock()
	b.assigned, b.actives = standbys, actives
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
		mb := &balMember{m: m, state: map[TaskID]int64{}}
		var info memberInfo
		if json.Unmarshal(meta.UserData, &info) == nil {
			mb.instance = info.Instance
			for _, o := range info.State {
				mb.state[TaskID{o.Sub, o.Part}] = o.Offset
			}
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
		for _, t := range s.topics {
			if c, ok := topics[t]; ok && (n < 0 || c < n) {
				n = c
			}
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
	owner := map[TaskID]*balMember{}
	// 1. Tasks stay where they are.
	for _, id := range tasks {
		if m := prev[id]; m != nil && fits(m) {
			take(m)
			owner[id] = m
		}
	}
	// 2. A moving task goes to the member with the most of its state, then
	// to the least loaded.
	for _, id := range tasks {
		if owner[id] != nil {
			continue
		}
		var best *balMember
		for _, m := range members {
			if !fits(m) {
				continue
			}
			if best == nil || m.state[id] > best.state[id] || m.state[id] == best.state[id] && m.tasks < best.tasks {
				best = m
			}
		}
		take(best)
		owner[id] = best
	}
	for _, id := range tasks {
		for _, t := range b.subs[id.Subtopology].topics {
			plan.AddPartition(owner[id].m, t, id.Partition)
		}
	}
	plan.AdjustCooperative(cb)

	// 3. Standbys: on other instances than the active's, preferring state,
	// then the fewest standbys.
	if b.standbys > 0 {
		for _, id := range tasks {
			used := map[string]bool{owner[id].instance: true}
			for range b.standbys {
				var best *balMember
				for _, m := range members {
					if used[m.instance] {
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
	return &standbyPlan{plan: plan, members: members}
}

// standbyPlan adds each member's standby tasks to its assignment.
type standbyPlan struct {
	plan    *kgo.BalancePlan
	members []*balMember
}

func (p *standbyPlan) IntoSyncAssignment() []kmsg.SyncGroupRequestGroupAssignment {
	out := p.plan.IntoSyncAssignment()
	byID := map[string]*balMember{}
	for _, m := range p.members {
		byID[m.m.MemberID] = m
	}
	for i := range out {
		m := byID[out[i].MemberID]
		if m == nil || len(m.standbys) == 0 {
			continue
		}
		var a kmsg.ConsumerMemberAssignment
		if err := a.ReadFrom(out[i].MemberAssignment); err != nil {
			continue
		}
		offs := make([]taskOffset, len(m.standbys))
		for j, id := range m.standbys {
			offs[j] = taskOffset{Sub: id.Subtopology, Part: id.Partition}
		}
		a.UserData, _ = json.Marshal(offs)
		out[i].MemberAssignment = a.AppendTo(nil)
	}
	return out
}
