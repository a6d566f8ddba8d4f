package stream

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// coPartitionBalancer assigns tasks, not partitions: partition p of every
// source topic of a sub-topology goes to the same member. It is sticky (a
// task stays with its owner while counts stay balanced) and cooperative (a
// task that moves is first revoked, then assigned in the next round, so
// tasks that stay never stop).
type coPartitionBalancer struct {
	subs []*subtopology
}

var _ kgo.ConsumerBalancerBalance = (*coPartitionBalancer)(nil)

func (*coPartitionBalancer) ProtocolName() string { return "kgen-copartition" }
func (*coPartitionBalancer) IsCooperative() bool  { return true }

func (*coPartitionBalancer) JoinGroupMetadata(topics []string, owned map[string][]int32, generation int32) []byte {
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
	return meta.AppendTo(nil)
}

func (*coPartitionBalancer) ParseSyncAssignment(assignment []byte) (map[string][]int32, error) {
	return kgo.ParseConsumerSyncAssignment(assignment)
}

func (b *coPartitionBalancer) MemberBalancer(members []kmsg.JoinGroupResponseMember) (kgo.GroupMemberBalancer, map[string]struct{}, error) {
	cb, err := kgo.NewConsumerBalancer(b, members)
	if err != nil {
		return nil, nil, err
	}
	return cb, cb.MemberTopics(), nil
}

// Balance computes the plan. topics holds the partition count of every
// topic some member consumes.
func (b *coPartitionBalancer) Balance(cb *kgo.ConsumerBalancer, topics map[string]int32) kgo.IntoSyncAssignment {
	type member struct {
		m     *kmsg.JoinGroupResponseMember
		tasks int
	}
	var members []*member
	byID := map[string]*member{}
	prev := map[TaskID]*member{}
	prevGen := map[TaskID]int32{}
	cb.EachMember(func(m *kmsg.JoinGroupResponseMember, meta *kmsg.ConsumerMemberMetadata) {
		mb := &member{m: m}
		members = append(members, mb)
		byID[m.MemberID] = mb
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
	fits := func(m *member) bool {
		if m.tasks < base {
			return true
		}
		return m.tasks == base && extra > 0
	}
	take := func(m *member) {
		if m.tasks == base {
			extra--
		}
		m.tasks++
	}
	owner := map[TaskID]*member{}
	for _, id := range tasks {
		if m := prev[id]; m != nil && fits(m) {
			take(m)
			owner[id] = m
		}
	}
	for _, id := range tasks {
		if owner[id] != nil {
			continue
		}
		var best *member
		for _, m := range members {
			if fits(m) && (best == nil || m.tasks < best.tasks) {
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
	return plan
}
