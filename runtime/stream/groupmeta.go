package stream

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
)

// Group metadata comes from other processes: the join user data of every
// member (read by the leader) and the assignment user data of the leader
// (read by every member). During a rolling upgrade those processes run
// another version of the topology or of kgen, so the decoders below treat it
// as untrusted input: they keep what is valid, drop the rest and say what
// they dropped. Nothing decoded here may index the topology unchecked.

// maxGroupUserData bounds the user data decoded from one member or one
// assignment. An honest report is a few bytes per task; this leaves room for
// hundreds of thousands of tasks while refusing to allocate for garbage.
const maxGroupUserData = 8 << 20

// maxProblemsShown bounds how many dropped entries an error names; the rest
// are counted.
const maxProblemsShown = 3

// problems collects what a decoder dropped, for one error that names the
// first few.
type problems struct {
	what  string // the input, for the error's prefix
	shown []string
	n     int
}

func (p *problems) add(format string, args ...any) {
	p.n++
	if len(p.shown) < maxProblemsShown {
		p.shown = append(p.shown, fmt.Sprintf(format, args...))
	}
}

func (p *problems) err() error {
	if p.n == 0 {
		return nil
	}
	msg := fmt.Sprintf("%s: dropped %d invalid entries", p.what, p.n)
	if p.n == 1 {
		msg = fmt.Sprintf("%s: dropped 1 invalid entry", p.what)
	}
	for i, s := range p.shown {
		sep := ", "
		if i == 0 {
			sep = ": "
		}
		msg += sep + s
	}
	if p.n > len(p.shown) {
		msg += ", ..."
	}
	return errors.New(msg)
}

// validTask says why a task id from another process cannot be one of ours,
// or "" if it can. nsubs is our number of sub-topologies: an id past it
// comes from a member whose topology has more of them.
func validTask(sub int, part int32, nsubs int) string {
	switch {
	case sub < 0 || sub >= nsubs:
		return fmt.Sprintf("sub-topology %d (this topology has %d)", sub, nsubs)
	case part < 0:
		return fmt.Sprintf("partition %d of sub-topology %d", part, sub)
	}
	return ""
}

// encodeMemberInfo is the join user data of a member, at version
// groupMetaVersion unless info says another.
func encodeMemberInfo(info memberInfo) []byte {
	if info.Version == 0 {
		info.Version = groupMetaVersion
	}
	b, err := json.Marshal(info)
	if err != nil {
		// Strings and integers always marshal; keep the join going.
		return nil
	}
	return b
}

// decodeMemberInfo reads a member's join user data against a topology of
// nsubs sub-topologies. It returns every valid state entry, sorted and
// without duplicates, and an error describing what it dropped; the info is
// usable even when the error is not nil. Garbage yields an empty info (the
// caller names the member by its member id).
func decodeMemberInfo(data []byte, nsubs int) (memberInfo, error) {
	// No version: a member of a kgen from before versions were written
	// (or with no user data at all), whose fields are a subset of version
	// 2's (querymeta.go).
	info := memberInfo{Version: 1}
	if len(data) == 0 {
		return info, nil
	}
	if len(data) > maxGroupUserData {
		return info, fmt.Errorf("member metadata: %d bytes of user data, more than the %d accepted", len(data), maxGroupUserData)
	}
	// Entries are decoded one by one so that one bad entry (a newer
	// member's field of another type) costs only that entry.
	var raw struct {
		Version  json.RawMessage   `json:"v"`
		Instance json.RawMessage   `json:"i"`
		Addr     json.RawMessage   `json:"a"`
		State    []json.RawMessage `json:"s"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return info, fmt.Errorf("member metadata: undecodable user data: %w", err)
	}
	p := problems{what: "member metadata"}
	if len(raw.Version) > 0 && (json.Unmarshal(raw.Version, &info.Version) != nil || info.Version < 1) {
		p.add("version %.40q", raw.Version)
		info.Version = 1
	}
	if len(raw.Instance) > 0 && json.Unmarshal(raw.Instance, &info.Instance) != nil {
		p.add("instance %.40q", raw.Instance)
	}
	if len(raw.Addr) > 0 && json.Unmarshal(raw.Addr, &info.Addr) != nil {
		p.add("address %.40q", raw.Addr)
	}
	seen := make(map[TaskID]bool, len(raw.State))
	for _, r := range raw.State {
		var o taskOffset
		if err := json.Unmarshal(r, &o); err != nil {
			p.add("state entry %.40q", r)
			continue
		}
		if why := validTask(o.Sub, o.Part, nsubs); why != "" {
			p.add("state of %s", why)
			continue
		}
		id := TaskID{o.Sub, o.Part}
		switch {
		case o.Offset < 0:
			// A negative position would rank the member below one
			// holding nothing.
			p.add("state of task %s at offset %d", id, o.Offset)
			continue
		case seen[id]:
			p.add("second state of task %s", id)
			continue
		}
		seen[id] = true
		info.State = append(info.State, o)
	}
	sortTaskOffsets(info.State)
	return info, p.err()
}

func sortTaskOffsets(s []taskOffset) {
	sort.Slice(s, func(i, j int) bool {
		x, y := s[i], s[j]
		return x.Sub < y.Sub || x.Sub == y.Sub && x.Part < y.Part
	})
}

// encodeStandbys is the assignment user data that gives a member its
// standby tasks.
func encodeStandbys(ids []TaskID) []byte {
	offs := make([]taskOffset, len(ids))
	for i, id := range ids {
		offs[i] = taskOffset{Sub: id.Subtopology, Part: id.Partition}
	}
	b, err := json.Marshal(offs)
	if err != nil {
		return nil
	}
	return b
}

// decodeStandbys reads the standby tasks in the leader's assignment user
// data against a topology of nsubs sub-topologies. It returns the valid
// ones, sorted and without duplicates, and an error describing what it
// dropped: a leader whose topology has a sub-topology this member does not
// know must cost this member that standby, not its life.
func decodeStandbys(data []byte, nsubs int) ([]TaskID, error) {
	if len(data) == 0 {
		return nil, nil
	}
	if len(data) > maxGroupUserData {
		return nil, fmt.Errorf("assignment: %d bytes of user data, more than the %d accepted", len(data), maxGroupUserData)
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("assignment: undecodable standby tasks: %w", err)
	}
	p := problems{what: "assignment"}
	ids := decodeStandbyEntries(raw, nsubs, &p)
	return ids, p.err()
}

// decodeStandbyEntries is decodeStandbys of entries already split; what it
// drops goes to p.
func decodeStandbyEntries(raw []json.RawMessage, nsubs int, p *problems) []TaskID {
	seen := make(map[TaskID]bool, len(raw))
	var ids []TaskID
	for _, r := range raw {
		var o taskOffset
		if err := json.Unmarshal(r, &o); err != nil {
			p.add("standby entry %.40q", r)
			continue
		}
		if why := validTask(o.Sub, o.Part, nsubs); why != "" {
			p.add("standby of %s", why)
			continue
		}
		id := TaskID{o.Sub, o.Part}
		if seen[id] {
			p.add("second standby of task %s", id)
			continue
		}
		seen[id] = true
		ids = append(ids, id)
	}
	sortTasks(ids)
	return ids
}

func sortTasks(ids []TaskID) {
	sort.Slice(ids, func(i, j int) bool {
		return ids[i].Subtopology < ids[j].Subtopology ||
			ids[i].Subtopology == ids[j].Subtopology && ids[i].Partition < ids[j].Partition
	})
}
