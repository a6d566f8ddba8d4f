package stream

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkBalance times the leader's plan for 64 partitions × 4
// sub-topologies (two of them stateful) × 8 members on 4 instances: a fresh
// group, and the same group once it owns a plan and a ninth member joins.
func BenchmarkBalance(b *testing.B) {
	s := balSetup{counts: map[string]int32{}}
	for i := range 4 {
		sub := &subtopology{id: i, topics: []string{fmt.Sprintf("t%d", i)}}
		if i%2 == 1 {
			sub.stores = []*storeDef{{name: fmt.Sprintf("s%d", i)}}
		}
		s.subs = append(s.subs, sub)
		s.counts[sub.topics[0]] = 64
	}
	s = s.withStandbys(1)
	var joiners []balJoiner
	for i := range 8 {
		joiners = append(joiners, balJoiner{id: fmt.Sprintf("m%d", i), instance: fmt.Sprintf("i%d", i/2)})
	}
	run := func(b *testing.B, joiners []balJoiner) {
		members := make([]kmsg.JoinGroupResponseMember, len(joiners))
		for i, j := range joiners {
			members[i] = kmsg.JoinGroupResponseMember{MemberID: j.id, ProtocolMetadata: s.joinMetadata(b, j)}
		}
		leader := &coPartitionBalancer{subs: s.subs, standbys: s.standbys}
		cb, err := kgo.NewConsumerBalancer(leader, members)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			leader.Balance(cb, s.counts).IntoSyncAssignment()
		}
	}
	b.Run("fresh", func(b *testing.B) { run(b, joiners) })
	b.Run("join", func(b *testing.B) {
		r := s.balance(b, joiners)
		owned := append([]balJoiner(nil), joiners...)
		for k := range owned {
			owned[k].owns, owned[k].gen = r.got[owned[k].id].Active, 2
		}
		run(b, append(owned, balJoiner{id: "m8", instance: "i4"}))
	})
}
