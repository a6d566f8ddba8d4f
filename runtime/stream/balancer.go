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
// source topic of a sub-topology goes to the same member. It is balanced
// (every sub-topology's tasks, and the stateful ones, spread evenly over
// members and instances: balance.go), sticky (a task stays with its owner
// while its owner's share allows), cooperative (a task
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

// Balance computes the plan. topics holds the partition count of every
// topic some member consumes. Its phases are in balance.go: read the group,
// count each sub-topology's tasks, share them out (quotas), place the active
// tasks, then the standbys.
func (b *coPartitionBalancer) Balance(cb *kgo.ConsumerBalancer, topics map[string]int32) kgo.IntoSyncAssignment {
	g := b.readGroup(cb)
	plan := cb.NewPlan()
	if len(g.members) == 0 {
		return plan
	}
	g.counts = b.taskCounts(topics)
	g.shareOut()
	owner := g.placeActives()
	for s, n := range g.counts {
		for p := range n {
			id := TaskID{s, p}
			if m := owner[id]; m != nil {
				for _, t := range b.subs[s].topics {
					plan.AddPartition(m.m, t, p)
				}
			}
		}
	}
	plan.AdjustCooperative(cb)
	b.keepCoPartitioned(plan)
	if b.standbys > 0 {
		g.placeStandbys(owner, b.standbys)
	}
	return &standbyPlan{plan: plan, members: g.members, b: b}
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
