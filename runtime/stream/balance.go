package stream

import (
	"cmp"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The leader's plan, in phases (Balance calls them in this order):
//
//  1. readGroup: the members, grouped by instance, what each owned and what
//     state it holds.
//  2. taskCounts: how many tasks each sub-topology has.
//  3. shareOut: how many tasks of each sub-topology each member gets. This
//     is where balance is decided, before any task is placed. When the
//     previous owners already hold every task in shares that keep the
//     promises below, those are the shares. Otherwise the tasks of each
//     sub-topology are dealt evenly over the members that read it, and the
//     remainder (the members that get one more) goes, in order of
//     precedence, to the members with the fewest tasks so far, to the
//     instances with the fewest tasks per member so far, to the instances
//     given the fewest of this sub-topology's remainder, then in the
//     members' order (by instance id and member id). Stateful
//     sub-topologies are dealt first, so the count of stateful tasks is
//     balanced on its own, and the total after them. Up to maxDeals deals
//     are made, each starting the members' order at another member, and
//     the one that leaves the most tasks with their owners wins.
//
//     The deals depend on the membership alone, ownership only picks one:
//     a cooperative rebalance takes rounds (what moves is revoked in one
//     and assigned in the next), and shares computed from ownership could
//     change between the rounds and move tasks back and forth. Picking the
//     first deal that keeps the most does not: in the next round, the
//     winner keeps everything owned, and a deal that also does kept as
//     much in the round before, so it comes later. The plan settles in at
//     most three rounds (revoke, assign, nothing), and a member never
//     gives up a task of a sub-topology while it holds no more than its
//     floor share of it. The price: when the membership changes, no deal
//     may leave the remainder where it was, and a few tasks more than the
//     fewest possible move.
//  4. placeActives: a task stays with its previous owner while that owner's
//     share allows (an owner over its share gives up first the tasks a
//     member taking tasks holds state for), then goes to the member with
//     room for it that has the most of its state.
//  5. placeStandbys: for the tasks with changelogged stores only (a standby
//     follows changelogs, and a task without any has nothing to keep warm),
//     on other instances than the active's, preferring state, then the
//     members with the fewest standbys.
//
// When every member reads every topic, this gives each member, for every
// sub-topology, for the stateful tasks and in total, a count within one of
// every other member's; and when every instance runs as many members (the
// same Parallelism), each instance's counts are within one of every other
// instance's too, whatever the order the members joined in.
// TestBalancerProperties checks all of it over generated groups.

// balMember is one member as the leader sees it.
type balMember struct {
	m        *kmsg.JoinGroupResponseMember
	inst     *balInstance
	state    map[TaskID]int64
	reads    []bool // per sub-topology: it subscribes to all its topics
	owned    []int  // per sub-topology: tasks it owned and reads
	quota    []int  // per sub-topology: tasks the plan gives it
	load     int    // tasks shared out to it so far
	standbys []TaskID
}

// balInstance is the members of one instance (one process: they report the
// same instance id).
type balInstance struct {
	id      string
	members int
}

// balGroup is what the phases of a plan share.
type balGroup struct {
	b       *coPartitionBalancer
	members []*balMember // by instance id, then member id: the plan does not depend on the join order
	insts   []*balInstance
	prev    map[TaskID]*balMember // the newest claim on each task
	counts  []int32               // tasks of each sub-topology
}

// readGroup decodes every member's join metadata.
func (b *coPartitionBalancer) readGroup(cb *kgo.ConsumerBalancer) *balGroup {
	g := &balGroup{b: b, prev: map[TaskID]*balMember{}}
	prevGen := map[TaskID]int32{}
	insts := map[string]*balInstance{}
	cb.EachMember(func(m *kmsg.JoinGroupResponseMember, meta *kmsg.ConsumerMemberMetadata) {
		mb := &balMember{m: m, state: map[TaskID]int64{}}
		subscribed := make(map[string]bool, len(meta.Topics))
		for _, t := range meta.Topics {
			subscribed[t] = true
		}
		info, err := decodeMemberInfo(meta.UserData, len(b.subs))
		if err != nil {
			b.logger().Warn("ignoring part of a member's join metadata", "member", m.MemberID, "error", err)
		}
		for _, o := range info.State {
			mb.state[TaskID{o.Sub, o.Part}] = o.Offset
		}
		id := info.Instance
		if id == "" {
			id = m.MemberID
		}
		if insts[id] == nil {
			insts[id] = &balInstance{id: id}
			g.insts = append(g.insts, insts[id])
		}
		mb.inst = insts[id]
		mb.inst.members++
		mb.reads = make([]bool, len(b.subs))
		for i, s := range b.subs {
			mb.reads[i] = true
			for _, t := range s.topics {
				// A member runs only the tasks whose topics it
				// subscribes to: during a rolling upgrade, a member of
				// the older version does not know a sub-topology added
				// since, and given its partitions it would hold them and
				// run nothing until it is upgraded.
				mb.reads[i] = mb.reads[i] && subscribed[t]
			}
		}
		g.members = append(g.members, mb)
		for _, op := range meta.OwnedPartitions {
			for _, s := range b.subs {
				if len(s.topics) == 0 || s.topics[0] != op.Topic {
					continue
				}
				for _, p := range op.Partitions {
					id := TaskID{s.id, p}
					// A stale claim from an older generation loses.
					if gen, ok := prevGen[id]; !ok || meta.Generation > gen {
						g.prev[id], prevGen[id] = mb, meta.Generation
					}
				}
			}
		}
	})
	slices.SortFunc(g.members, func(x, y *balMember) int {
		return cmp.Or(cmp.Compare(x.inst.id, y.inst.id), cmp.Compare(x.m.MemberID, y.m.MemberID))
	})
	return g
}

// taskCounts is the number of tasks of each sub-topology: the partitions
// all its source topics have.
func (b *coPartitionBalancer) taskCounts(topics map[string]int32) []int32 {
	counts := make([]int32, len(b.subs))
	for i, s := range b.subs {
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
			have := make(map[string]int32, len(s.topics))
			for _, t := range s.topics {
				have[t] = topics[t]
			}
			b.logger().Error("co-partitioned source topics have different partition counts (0: no metadata); only partitions all of them have are assigned",
				"subtopology", s.id, "partitions", have, "assigned", max(n, 0))
		}
		counts[i] = max(n, 0)
	}
	return counts
}

// shareOut sets every member's quota: how many tasks of each sub-topology
// it gets (the precedence is at the top of this file).
func (g *balGroup) shareOut() {
	nsubs := len(g.counts)
	for _, m := range g.members {
		m.owned, m.quota = make([]int, nsubs), make([]int, nsubs)
	}
	for id, m := range g.prev {
		if id.Partition < g.counts[id.Subtopology] && m.reads[id.Subtopology] {
			m.owned[id.Subtopology]++
		}
	}
	if g.keepShares() {
		return
	}
	// Every deal keeps the promises; the first of those that leave the
	// most tasks with their owners wins (why it cannot swing between the
	// rounds of one rebalance: at the top of this file).
	order := g.dealOrder()
	best, bestKept := [][]int(nil), -1
	tries := min(len(g.members), maxDeals)
	for k := range tries {
		quotas := g.deal(order, k*len(g.members)/tries)
		kept := 0
		for i, m := range g.members {
			for s, q := range quotas[i] {
				kept += min(q, m.owned[s])
			}
		}
		if kept > bestKept {
			best, bestKept = quotas, kept
		}
	}
	for i, m := range g.members {
		m.quota = best[i]
	}
}

// maxDeals bounds the deals shareOut tries: one per member up to it.
const maxDeals = 16

// dealOrder is the order in which sub-topologies are shared out. Stateful
// first: the stateful counts are then balanced by the first half alone,
// and the totals by the whole. Within each half, the sub-topologies fewer
// members read go first, so that the others do not fill those members up
// (only during a rolling upgrade do members read different topics).
func (g *balGroup) dealOrder() []int {
	nsubs := len(g.counts)
	nreaders := make([]int, nsubs)
	for _, m := range g.members {
		for s, ok := range m.reads {
			if ok {
				nreaders[s]++
			}
		}
	}
	order := make([]int, nsubs)
	for s := range order {
		order[s] = s
	}
	stateless := func(s int) bool { return len(g.b.subs[s].stores) == 0 }
	slices.SortStableFunc(order, func(x, y int) int {
		if stateless(x) != stateless(y) {
			if stateless(x) {
				return 1
			}
			return -1
		}
		return cmp.Compare(nreaders[x], nreaders[y])
	})
	return order
}

// deal shares out the tasks of each sub-topology, in order, over the
// members that read it, and returns each member's quotas (indexed as
// g.members). Each reader gets ⌊n/readers⌋; the remainder goes one by one
// to the reader without one yet that comes first by, in precedence: the
// fewest tasks so far; the instance with the fewest tasks per member so
// far; the instance given the fewest of this remainder; its place in
// g.members after rotating it by rot.
func (g *balGroup) deal(order []int, rot int) [][]int {
	n := len(g.members)
	quotas := make([][]int, n)
	load := make([]int, n)
	instLoad := make(map[*balInstance]int, len(g.insts))
	instExtra := make(map[*balInstance]int, len(g.insts))
	before := func(i, j int) bool {
		if load[i] != load[j] {
			return load[i] < load[j]
		}
		if a, b := g.members[i].inst, g.members[j].inst; a != b {
			// Fewest tasks per member: an instance running more
			// members takes more tasks.
			if l, r := instLoad[a]*b.members, instLoad[b]*a.members; l != r {
				return l < r
			}
			if instExtra[a] != instExtra[b] {
				return instExtra[a] < instExtra[b]
			}
		}
		return (i-rot+n)%n < (j-rot+n)%n
	}
	for i := range quotas {
		quotas[i] = make([]int, len(g.counts))
	}
	var readers []int
	for _, s := range order {
		readers = readers[:0]
		for i, m := range g.members {
			if m.reads[s] {
				readers = append(readers, i)
			}
		}
		tasks := int(g.counts[s])
		if len(readers) == 0 || tasks == 0 {
			continue
		}
		base, extra := tasks/len(readers), tasks%len(readers)
		clear(instExtra)
		for _, i := range readers {
			quotas[i][s] = base
			load[i] += base
			instLoad[g.members[i].inst] += base
		}
		for range extra {
			best := -1
			for _, i := range readers {
				if quotas[i][s] == base && (best < 0 || before(i, best)) {
					best = i
				}
			}
			quotas[best][s]++
			load[best]++
			instLoad[g.members[best].inst]++
			instExtra[g.members[best].inst]++
		}
	}
	return quotas
}

// keepShares makes the previous owners' shares the quotas when they hold
// every task and keep every promise the shares computed below keep (the
// plan of a leader that ordered members otherwise, or of an earlier
// version): nothing moves then.
func (g *balGroup) keepShares() bool {
	for s, n := range g.counts {
		var readers, have int
		for _, m := range g.members {
			if m.reads[s] {
				readers++
				have += m.owned[s]
			}
		}
		if have != int(n) {
			return false // a task nobody owns (owned counts only readers)
		}
		for _, m := range g.members {
			if m.reads[s] && (m.owned[s] < int(n)/readers || m.owned[s] > (int(n)+readers-1)/readers) {
				return false
			}
		}
	}
	// Members, and instances of as many members, within one of each other
	// in stateful and total counts; instances also per sub-topology. The
	// counts of each: per sub-topology, then stateful, then total.
	nsubs := len(g.counts)
	member := make(map[*balMember][]int, len(g.members))
	inst := map[*balInstance][]int{}
	for _, m := range g.members {
		if inst[m.inst] == nil {
			inst[m.inst] = make([]int, nsubs+2)
		}
		mc, ic := make([]int, nsubs+2), inst[m.inst]
		for s, n := range m.owned {
			for _, c := range [][]int{mc, ic} {
				c[s] += n
				c[nsubs+1] += n
				if len(g.b.subs[s].stores) > 0 {
					c[nsubs] += n
				}
			}
		}
		member[m] = mc
	}
	for _, x := range member {
		for _, y := range member {
			if x[nsubs] > y[nsubs]+1 || x[nsubs+1] > y[nsubs+1]+1 {
				return false
			}
		}
	}
	for a, x := range inst {
		for b, y := range inst {
			if a.members != b.members {
				continue
			}
			for k := range x {
				if x[k] > y[k]+1 {
					return false
				}
			}
		}
	}
	for _, m := range g.members {
		copy(m.quota, m.owned)
	}
	return true
}

// placeActives gives each task an owner within the quotas: its previous
// owner while that one has room (keeping first the tasks no member taking
// tasks holds more state for), then the member with room that holds the
// most of its state, then the first with room. Tasks no member reads stay
// unassigned, said loudly.
func (g *balGroup) placeActives() map[TaskID]*balMember {
	owner := make(map[TaskID]*balMember, len(g.prev))
	room := make(map[*balMember][]int, len(g.members))
	for _, m := range g.members {
		room[m] = slices.Clone(m.quota)
	}
	for s, n := range g.counts {
		ids := make([]TaskID, 0, n)
		for p := range n {
			if m := g.prev[TaskID{s, p}]; m != nil && room[m][s] > 0 {
				ids = append(ids, TaskID{s, p})
			}
		}
		// An owner with more tasks than its share keeps first those the
		// members taking tasks of s hold the least state for: the others
		// move where their state is.
		elsewhere := make(map[TaskID]int64, len(ids))
		for _, m := range g.members {
			if m.quota[s] > m.owned[s] && len(m.state) > 0 {
				for _, id := range ids {
					elsewhere[id] = max(elsewhere[id], m.state[id])
				}
			}
		}
		slices.SortStableFunc(ids, func(x, y TaskID) int { return cmp.Compare(elsewhere[x], elsewhere[y]) })
		for _, id := range ids {
			if m := g.prev[id]; room[m][s] > 0 {
				room[m][s]--
				owner[id] = m
			}
		}
	}
	var unread []TaskID
	for s, n := range g.counts {
		for p := range n {
			id := TaskID{s, p}
			if owner[id] != nil {
				continue
			}
			var best *balMember
			for _, m := range g.members {
				if room[m][s] > 0 && (best == nil || m.state[id] > best.state[id]) {
					best = m
				}
			}
			if best == nil {
				// The quotas add up to the task count whenever some
				// member reads the sub-topology.
				unread = append(unread, id)
				continue
			}
			room[best][s]--
			owner[id] = best
		}
	}
	if len(unread) > 0 {
		g.b.logger().Error("no member subscribes to every source topic of these tasks; they stay unassigned", "tasks", formatTaskIDs(unread))
	}
	return owner
}

// placeStandbys gives each assigned task with changelogged stores up to n
// standbys on instances other than its active's, each on the member of an
// instance with the most of its state, then the fewest standbys. Tasks are
// walked partition by partition, sub-topologies interleaved, so each member
// gets a mix. A task without a changelog gets none, as in Kafka Streams: a
// standby only follows changelogs, so it would hold nothing and only cost a
// task on its member.
func (g *balGroup) placeStandbys(owner map[TaskID]*balMember, n int) {
	maxParts := int32(0)
	for _, c := range g.counts {
		maxParts = max(maxParts, c)
	}
	for p := range maxParts {
		for s, c := range g.counts {
			id := TaskID{s, p}
			if p >= c || owner[id] == nil || !g.b.subs[s].logged() {
				continue
			}
			used := map[*balInstance]bool{owner[id].inst: true}
			for range n {
				var best *balMember
				for _, m := range g.members {
					if used[m.inst] || !m.reads[s] {
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
				used[best.inst] = true
				best.standbys = append(best.standbys, id)
			}
		}
	}
}
