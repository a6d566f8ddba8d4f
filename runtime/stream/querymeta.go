package stream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupMetaVersion is the version of the group metadata this kgen writes.
//
//   - 1 (never written: a member's join data without "v"): the instance id
//     and the state it holds; the assignment's user data is a JSON array of
//     the member's standby tasks.
//   - 2: the join data adds "v" and the instance's advertised address "a";
//     the assignment's user data is an object: "v", the standbys "s" as in
//     version 1, and "o", the owners of every task of the group (which
//     instance holds its active task and which its standbys), so that any
//     instance can say where a key's store lives.
//
// A member of version 1 is upgraded, not refused: its join data is a subset
// of version 2's, so it is balanced as before and its tasks listed without
// an address, and it gets its assignment in its own format (a version-1
// member reading an object would lose its standbys). A member of a version
// newer than this one is read for the fields this version knows.
const groupMetaVersion = 2

// ownersSeq orders the owner maps the units of a process receive: within
// an App, the most recently received is the group's latest.
var ownersSeq atomic.Uint64

// ownerMap is who owns what in the group, as of one assignment: each
// task's active and standby instances, by index into instances.
type ownerMap struct {
	instances []Instance
	tasks     map[TaskID]taskOwners
}

type taskOwners struct {
	active   int // index into instances; -1: no active owner (the task moves)
	standbys []int
}

// owners returns the instances that hold id.
func (m *ownerMap) owners(id TaskID) (active Instance, standbys []Instance, ok bool) {
	if m == nil {
		return Instance{}, nil, false
	}
	o, ok := m.tasks[id]
	if !ok {
		return Instance{}, nil, false
	}
	if o.active >= 0 {
		active = m.instances[o.active]
	}
	for _, i := range o.standbys {
		standbys = append(standbys, m.instances[i])
	}
	return active, standbys, true
}

// wireAssignment is the assignment's user data from version 2 on.
type wireAssignment struct {
	Version  int               `json:"v"`
	Standbys []json.RawMessage `json:"s,omitempty"`
	Owners   *wireOwners       `json:"o,omitempty"`
}

type wireOwners struct {
	Instances []wireInstance `json:"in"`
	// Tasks are [sub-topology, partition, active, standby...], the
	// instances by index into Instances and active -1 for none.
	Tasks [][]int64 `json:"t"`
}

type wireInstance struct {
	ID   string `json:"i"`
	Addr string `json:"a,omitempty"`
}

// encodeAssignment is the assignment user data of a member that reads
// version: standbys alone in version 1's array, else with the owners.
func encodeAssignment(version int, standbys []TaskID, owners *ownerMap) []byte {
	if version < 2 {
		if len(standbys) == 0 {
			return nil
		}
		return encodeStandbys(standbys)
	}
	w := wireAssignment{Version: groupMetaVersion}
	for _, id := range standbys {
		b, _ := json.Marshal(taskOffset{Sub: id.Subtopology, Part: id.Partition})
		w.Standbys = append(w.Standbys, b)
	}
	if owners != nil {
		wo := &wireOwners{Tasks: [][]int64{}}
		for _, in := range owners.instances {
			wo.Instances = append(wo.Instances, wireInstance{ID: in.ID, Addr: in.Address})
		}
		ids := make([]TaskID, 0, len(owners.tasks))
		for id := range owners.tasks {
			ids = append(ids, id)
		}
		sortTasks(ids)
		for _, id := range ids {
			o := owners.tasks[id]
			row := []int64{int64(id.Subtopology), int64(id.Partition), int64(o.active)}
			for _, s := range o.standbys {
				row = append(row, int64(s))
			}
			wo.Tasks = append(wo.Tasks, row)
		}
		w.Owners = wo
	}
	b, err := json.Marshal(w)
	if err != nil {
		return nil
	}
	return b
}

// decodeAssignment reads the leader's assignment user data of either
// version against a topology of nsubs sub-topologies: the valid standbys
// and, from version 2 on, the owners (nil before). As the other decoders it
// keeps what is valid and says what it dropped.
func decodeAssignment(data []byte, nsubs int) ([]TaskID, *ownerMap, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		ids, err := decodeStandbys(data, nsubs) // version 1, or garbage
		return ids, nil, err
	}
	if len(data) > maxGroupUserData {
		return nil, nil, fmt.Errorf("assignment: %d bytes of user data, more than the %d accepted", len(data), maxGroupUserData)
	}
	var w wireAssignment
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, nil, fmt.Errorf("assignment: undecodable user data: %w", err)
	}
	p := problems{what: "assignment"}
	ids := decodeStandbyEntries(w.Standbys, nsubs, &p)
	if w.Owners == nil {
		return ids, nil, p.err()
	}
	m := &ownerMap{tasks: make(map[TaskID]taskOwners, len(w.Owners.Tasks))}
	for _, in := range w.Owners.Instances {
		m.instances = append(m.instances, Instance{ID: in.ID, Address: in.Addr})
	}
	n := int64(len(m.instances))
	for _, row := range w.Owners.Tasks {
		if len(row) < 3 {
			p.add("owners entry %v", row)
			continue
		}
		if row[0] < 0 || row[0] >= int64(nsubs) || row[1] < 0 || row[1] > 1<<31-1 {
			p.add("owners of task %d_%d", row[0], row[1])
			continue
		}
		id := TaskID{int(row[0]), int32(row[1])}
		if _, dup := m.tasks[id]; dup {
			p.add("second owners of task %s", id)
			continue
		}
		valid := row[2] >= -1 && row[2] < n
		o := taskOwners{active: int(row[2])}
		for _, s := range row[3:] {
			valid = valid && s >= 0 && s < n
			o.standbys = append(o.standbys, int(s))
		}
		if !valid {
			p.add("owners of task %s name instances past the %d listed", id, n)
			continue
		}
		m.tasks[id] = o
	}
	return ids, m, p.err()
}

// memberVersionNote says what a member's metadata version means for it, or
// "" for the current version: an older member is upgraded, a newer one read
// for what this version knows. The leader logs it once per rebalance.
func memberVersionNote(info memberInfo) string {
	switch {
	case info.Version < groupMetaVersion:
		return fmt.Sprintf("member speaks group metadata version %d, older than this kgen's %d (it predates interactive queries): "+
			"it is balanced as before and gets its assignment in its own format, but advertises no address, "+
			"so its tasks cannot be found by queries until it is upgraded", info.Version, groupMetaVersion)
	case info.Version > groupMetaVersion:
		return fmt.Sprintf("member speaks group metadata version %d, newer than this kgen's %d: "+
			"only the fields of version %d are read; upgrade this instance", info.Version, groupMetaVersion, groupMetaVersion)
	}
	return ""
}

// addAssignmentUserData writes into each member's assignment its standby
// tasks and, for members of version 2 or later, the owners of every task:
// the active tasks are read from the plan (after the cooperative
// adjustment, so a task being revoked this round has no active owner), the
// standbys from the members.
func (b *coPartitionBalancer) addAssignmentUserData(out []kmsg.SyncGroupRequestGroupAssignment, members []*balMember) {
	byID := map[string]*balMember{}
	for _, m := range members {
		byID[m.m.MemberID] = m
	}
	versions := map[string]int{}
	owners := &ownerMap{tasks: map[TaskID]taskOwners{}}
	instanceIdx := map[string]int{}
	instance := func(m *balMember, info memberInfo) int {
		i, ok := instanceIdx[m.inst.id]
		if !ok {
			i = len(owners.instances)
			instanceIdx[m.inst.id] = i
			owners.instances = append(owners.instances, Instance{ID: m.inst.id})
		}
		if owners.instances[i].Address == "" {
			owners.instances[i].Address = info.Addr
		}
		return i
	}
	infos := make(map[*balMember]memberInfo, len(members))
	for _, m := range members {
		infos[m] = joinInfo(m.m, len(b.subs))
	}
	assignments := make([]kmsg.ConsumerMemberAssignment, len(out))
	parsed := make([]bool, len(out))
	for i := range out {
		m := byID[out[i].MemberID]
		if m == nil {
			continue
		}
		info := infos[m]
		versions[m.m.MemberID] = info.Version
		if note := memberVersionNote(info); note != "" {
			b.logger().Warn(note, "member", m.m.MemberID, "instance", m.inst.id)
		}
		idx := instance(m, info)
		if err := assignments[i].ReadFrom(out[i].MemberAssignment); err != nil {
			continue
		}
		parsed[i] = true
		for _, t := range assignments[i].Topics {
			for _, s := range b.subs {
				if len(s.topics) == 0 || s.topics[0] != t.Topic {
					continue
				}
				for _, p := range t.Partitions {
					id := TaskID{s.id, p}
					o := owners.tasks[id]
					o.active = idx
					owners.tasks[id] = o
				}
			}
		}
	}
	for _, m := range members {
		idx := instance(m, infos[m])
		for _, id := range m.standbys {
			o, ok := owners.tasks[id]
			if !ok {
				o.active = -1
			}
			o.standbys = append(o.standbys, idx)
			owners.tasks[id] = o
		}
	}
	for i := range out {
		m := byID[out[i].MemberID]
		if m == nil || !parsed[i] {
			continue
		}
		ud := encodeAssignment(versions[m.m.MemberID], m.standbys, owners)
		if ud == nil {
			continue
		}
		assignments[i].UserData = ud
		out[i].MemberAssignment = assignments[i].AppendTo(nil)
	}
}

// joinInfo decodes a member's join user data; what it drops was logged by
// Balance already.
func joinInfo(m *kmsg.JoinGroupResponseMember, nsubs int) memberInfo {
	var meta kmsg.ConsumerMemberMetadata
	if err := meta.ReadFrom(m.ProtocolMetadata); err != nil {
		return memberInfo{Version: 1}
	}
	info, _ := decodeMemberInfo(meta.UserData, nsubs)
	if info.Version == 0 {
		info.Version = 1 // no user data at all
	}
	return info
}
