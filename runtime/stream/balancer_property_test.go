package stream

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// The balancer's promises, stated once and checked over generated groups
// (issue 21). A group is 1–4 sub-topologies (some stateful, some reading
// two co-partitioned topics) of 1–64 partitions each, and 1–4 instances of
// 1–3 members each (the same number on every instance, or not), with 0–2
// standby replicas. Members join together or one by one in a random order,
// with or without previous owners and state, then leave one by one; after
// every change the group runs cooperative rounds, every member owning what
// it got, until the plan stops changing. Every settled plan must:
//
//   - assign every task exactly once, whole (checkPlan: every topic of a
//     task on its member, no standby beside its active or twice on an
//     instance, no more standbys than asked; standbys only of tasks with a
//     changelogged store, and for each of them as many as asked or one on
//     every other instance that reads it);
//   - give each member, of every sub-topology, of the stateful tasks and in
//     total, a count within one of every other member's;
//   - when every instance runs as many members, give each instance, of
//     every sub-topology, of the stateful tasks and in total, a count within
//     one of every other instance's;
//   - settle within three rounds (one to revoke what moves, one to assign
//     it, one that changes nothing), and move nothing in a round with the
//     same membership (stickiness);
//   - leave every member that stays with at least min(had, ⌊n/M⌋) of the
//     n tasks of each sub-topology it had before the change, M members
//     after it: a task leaves a member only when the member holds more than
//     its floor share. When a member joins a settled group, this bounds the
//     tasks that move per sub-topology by ⌊n/M⌋ + n mod M.

// propGroup is a generated group: its topology and the instance of each
// member.
type propGroup struct {
	s        balSetup
	stateful map[int]bool
	members  []balJoiner // id and instance; owns and state evolve
}

func genGroup(rng *rand.Rand) propGroup {
	g := propGroup{s: balSetup{counts: map[string]int32{}}, stateful: map[int]bool{}}
	topic := 0
	for i := range 1 + rng.IntN(4) {
		sub := &subtopology{id: i}
		for range 1 + rng.IntN(2) {
			sub.topics = append(sub.topics, fmt.Sprintf("t%d", topic))
			topic++
		}
		if rng.IntN(2) == 0 {
			// Sub-topology 2's store has no changelog: stateful, but
			// with nothing for a standby to follow (no random draw, so
			// the generated groups stay those of before).
			sub.stores = []*storeDef{{name: fmt.Sprintf("store%d", i), opts: StoreOptions{Changelog: i != 2}}}
			g.stateful[i] = true
		}
		n := int32(1 + rng.IntN(64))
		if rng.IntN(4) == 0 {
			n = int32(1 + rng.IntN(8)) // small counts: remainders matter most
		}
		for _, t := range sub.topics {
			g.s.counts[t] = n
		}
		g.s.subs = append(g.s.subs, sub)
	}
	g.s.standbys = rng.IntN(3)
	ninst := 1 + rng.IntN(4)
	per := 1 + rng.IntN(3)
	sameSize := rng.IntN(4) != 0
	ids := rng.Perm(1000)
	for i := range ninst {
		n := per
		if !sameSize {
			n = 1 + rng.IntN(3)
		}
		for range n {
			// Member ids are random, as the broker makes them: their
			// order says nothing of the instance or the join order.
			id := fmt.Sprintf("m%03d", ids[len(g.members)])
			g.members = append(g.members, balJoiner{id: id, instance: fmt.Sprintf("i%d", i), state: map[TaskID]int64{}})
		}
	}
	return g
}

// owners maps every task to the member that owns it in joiners.
func owners(joiners []balJoiner) map[TaskID]string {
	o := map[TaskID]string{}
	for _, j := range joiners {
		for _, id := range tasksIn(j.owns) {
			o[id] = j.id
		}
	}
	return o
}

// settle runs cooperative rounds until the plan stops changing, every
// member owning what it got and holding state for its stateful actives and
// standbys. It returns the members as they are in the last round and how
// many rounds it took.
func (g propGroup) settle(t *testing.T, rng *rand.Rand, desc string, joiners []balJoiner, gen *int32) ([]balJoiner, balRound, int) {
	t.Helper()
	joiners = slices.Clone(joiners)
	for round := 1; ; round++ {
		// The join response's order is the broker's: shuffle it.
		order := slices.Clone(joiners)
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		r := g.s.balance(t, order)
		if bad := g.s.checkPlan(r, joiners); len(bad) > 0 {
			t.Fatalf("%s\nround %d breaks promises:\n%s", desc, round, strings.Join(bad, "\n"))
		}
		if r.log != "" {
			t.Fatalf("%s\nround %d logs:\n%s", desc, round, r.log)
		}
		changed := false
		*gen++
		for k := range joiners {
			j := &joiners[k]
			got := r.got[j.id]
			changed = changed || got.Active != j.owns
			j.owns, j.gen = got.Active, *gen
			state := map[TaskID]int64{}
			for _, id := range append(tasksIn(got.Active), tasksIn(got.Standby)...) {
				if g.stateful[id.Subtopology] {
					state[id] = int64(*gen)
				}
			}
			j.state = state
		}
		if !changed {
			return joiners, r, round
		}
		if round == 3 {
			t.Fatalf("%s\nthe plan still changes after %d rounds: %v", desc, round, r.got)
		}
	}
}

// checkBalance lists how joiners, settled, break the balance promises.
func (g propGroup) checkBalance(joiners []balJoiner) []string {
	var bad []string
	all := planTasks(g.s)
	o := owners(joiners)
	if len(o) != len(all) {
		bad = append(bad, fmt.Sprintf("%d of %d tasks assigned", len(o), len(all)))
	}
	// Counts by member and by instance: key "s<sub>", "stateful", "total".
	byMember := map[string]map[string]int{}
	byInst := map[string]map[string]int{}
	for _, j := range joiners {
		byMember[j.id] = map[string]int{}
		byInst[j.instance] = map[string]int{}
	}
	inst := instances(joiners)
	for id, m := range o {
		keys := []string{fmt.Sprintf("s%d", id.Subtopology), "total"}
		if g.stateful[id.Subtopology] {
			keys = append(keys, "stateful")
		}
		for _, k := range keys {
			byMember[m][k]++
			byInst[inst[m]][k]++
		}
	}
	keys := []string{"total", "stateful"}
	for _, sub := range g.s.subs {
		keys = append(keys, fmt.Sprintf("s%d", sub.id))
	}
	within := func(what string, counts map[string]map[string]int) {
		for _, k := range keys {
			lo, hi := 1<<30, -1
			for _, c := range counts {
				lo, hi = min(lo, c[k]), max(hi, c[k])
			}
			if hi-lo > 1 {
				bad = append(bad, fmt.Sprintf("%s counts of %s from %d to %d: %v", what, k, lo, hi, counts))
			}
		}
	}
	within("member", byMember)
	// Instances are compared when they run as many members now: while
	// members join one by one, an instance may have fewer for a while.
	size := map[string]int{}
	for _, j := range joiners {
		size[j.instance]++
	}
	sameSize := true
	for _, n := range size {
		sameSize = sameSize && n == size[joiners[0].instance]
	}
	if sameSize {
		within("instance", byInst)
	}
	return bad
}

// checkKept lists the members of after that gave up a task of a
// sub-topology while holding no more than their floor share of it.
func (g propGroup) checkKept(before, after []balJoiner) []string {
	had := owners(before)
	now := owners(after)
	kept := map[string]map[int]int{}
	held := map[string]map[int]int{}
	for id, m := range had {
		if held[m] == nil {
			held[m], kept[m] = map[int]int{}, map[int]int{}
		}
		held[m][id.Subtopology]++
		if now[id] == m {
			kept[m][id.Subtopology]++
		}
	}
	var bad []string
	for _, j := range after {
		for _, sub := range g.s.subs {
			floor := int(g.s.counts[sub.topics[0]]) / len(after)
			if want := min(held[j.id][sub.id], floor); kept[j.id][sub.id] < want {
				bad = append(bad, fmt.Sprintf("%s kept %d of the %d tasks of sub-topology %d it had, floor share %d",
					j.id, kept[j.id][sub.id], held[j.id][sub.id], sub.id, floor))
			}
		}
	}
	return bad
}

func TestBalancerProperties(t *testing.T) {
	const ownersWhat = "joining together with previous owners"
	var moved, between int // tasks that moved after a change; of them, between members present before and after
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 21))
		g := genGroup(rng)
		desc := fmt.Sprintf("seed %d: %d sub-topologies %v (stateful %v), %d members on instances %v, %d standbys",
			seed, len(g.s.subs), g.s.counts, g.stateful, len(g.members), instances(g.members), g.s.standbys)
		var gen int32 = 1
		check := func(what string, before, joiners []balJoiner) []balJoiner {
			t.Helper()
			settled, _, _ := g.settle(t, rng, desc+"\n"+what, joiners, &gen)
			if bad := g.checkBalance(settled); len(bad) > 0 {
				t.Fatalf("%s\n%s: unbalanced:\n%s", desc, what, strings.Join(bad, "\n"))
			}
			if bad := g.checkKept(before, settled); len(bad) > 0 {
				t.Fatalf("%s\n%s: moved more than balance needs:\n%s", desc, what, strings.Join(bad, "\n"))
			}
			if before != nil && what != ownersWhat {
				// A change to a settled group.
				m, b := movesBetween(before, settled)
				moved, between = moved+m, between+b
			}
			// Stickiness: with the same membership, nothing moves.
			again, _, rounds := g.settle(t, rng, desc+"\n"+what+", again", settled, &gen)
			if rounds != 1 {
				t.Fatalf("%s\n%s: a settled group changes again with the same members", desc, what)
			}
			return again
		}
		order := rng.Perm(len(g.members))
		joiners := make([]balJoiner, 0, len(g.members))
		switch rng.IntN(3) {
		case 0: // together, fresh
			for _, i := range order {
				joiners = append(joiners, g.members[i])
			}
			joiners = check("joining together", nil, joiners)
		case 1: // together, with previous owners and state from another plan
			for _, i := range order {
				joiners = append(joiners, g.members[i])
			}
			for _, id := range planTasks(g.s) {
				if o := rng.IntN(len(joiners) + 1); o < len(joiners) {
					joiners[o].owns = strings.TrimSpace(joiners[o].owns + " " + id.String())
				}
				if m := rng.IntN(len(joiners) + 1); m < len(joiners) && g.stateful[id.Subtopology] {
					joiners[m].state[id] = int64(1 + rng.IntN(100))
				}
			}
			joiners = check(ownersWhat, joiners, joiners)
		default: // one by one
			for k, i := range order {
				before := slices.Clone(joiners)
				joiners = append(joiners, g.members[i])
				joiners = check(fmt.Sprintf("member %d of %d joining", k+1, len(order)), before, joiners)
			}
		}
		// Then they leave one by one.
		for len(joiners) > 1 {
			before := slices.Clone(joiners)
			k := rng.IntN(len(joiners))
			joiners = slices.Delete(joiners, k, k+1)
			joiners = check(fmt.Sprintf("%s leaving, %d left", before[k].id, len(joiners)), before, joiners)
		}
	}
	// Not a promise: how many tasks moved between members that were there
	// before and after a change to a settled group, which the fewest moves
	// would not do (ownership only picks among deals; balance.go says why).
	t.Logf("after changes to settled groups, %d tasks moved, %d of them between members present before and after", moved, between)
}

// movesBetween counts the tasks owned in before that have another owner in
// after, and of them those whose old and new owners are both in before and
// after.
func movesBetween(before, after []balJoiner) (moved, between int) {
	present := map[string]bool{}
	for _, j := range before {
		present[j.id] = true
	}
	stays := map[string]bool{}
	for _, j := range after {
		stays[j.id] = present[j.id]
	}
	now := owners(after)
	for id, m := range owners(before) {
		if now[id] != m {
			moved++
			if stays[m] && stays[now[id]] {
				between++
			}
		}
	}
	return moved, between
}
