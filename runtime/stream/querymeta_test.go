package stream

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAssignmentOwnersAndAnOldMember balances a group of two current
// members and one of version 1 (no "v", no address, as a kgen from before
// queries writes): every current member reads the same owners of every
// task, with the addresses advertised; the old member gets its standbys in
// the array it can read, and the leader says clearly what it does with it.
func TestAssignmentOwnersAndAnOldMember(t *testing.T) {
	s := copart(4, 2).withStandbys(1)
	joiners := []balJoiner{
		{id: "m-a", userData: []byte(`{"v":2,"i":"a","a":"a.example:1"}`)},
		{id: "m-b1", userData: []byte(`{"v":2,"i":"b","a":"b.example:1"}`)},
		{id: "m-b2", userData: []byte(`{"v":2,"i":"b","a":"b.example:1"}`)}, // a second unit of b
		{id: "m-old", userData: []byte(`{"i":"old","s":[]}`)},
	}
	var logs strings.Builder
	members := make([]kmsg.JoinGroupResponseMember, len(joiners))
	for i, j := range joiners {
		members[i] = kmsg.JoinGroupResponseMember{MemberID: j.id, ProtocolMetadata: s.joinMetadata(t, j)}
	}
	leader := &coPartitionBalancer{subs: s.subs, standbys: s.standbys, log: slog.New(slog.NewTextHandler(&logs, nil))}
	cb, err := kgo.NewConsumerBalancer(leader, members)
	if err != nil {
		t.Fatal(err)
	}
	instanceOf := map[string]string{"m-a": "a", "m-b1": "b", "m-b2": "b", "m-old": "old"}
	wantActive := map[TaskID]string{}
	wantStandbys := map[TaskID][]string{}
	var owners []*ownerMap
	for _, a := range leader.Balance(cb, s.counts).IntoSyncAssignment() {
		var ca kmsg.ConsumerMemberAssignment
		if err := ca.ReadFrom(a.MemberAssignment); err != nil {
			t.Fatal(err)
		}
		mb := &coPartitionBalancer{subs: s.subs, log: slog.New(slog.NewTextHandler(&logs, nil))}
		parts, err := mb.ParseSyncAssignment(a.MemberAssignment)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range tasksOf(s.subs, parts) {
			wantActive[id] = instanceOf[a.MemberID]
		}
		standbys, _, _ := mb.standbyTasks()
		for _, id := range standbys {
			wantStandbys[id] = append(wantStandbys[id], instanceOf[a.MemberID])
		}
		if a.MemberID == "m-old" {
			// What a version-1 member does with its user data.
			if len(ca.UserData) > 0 && ca.UserData[0] != '[' {
				t.Fatalf("the old member's user data is %s, not the array it reads", ca.UserData)
			}
			if _, err := decodeStandbys(ca.UserData, len(s.subs)); err != nil {
				t.Fatalf("the old member cannot read its standbys: %v", err)
			}
			continue
		}
		if mb.owners == nil {
			t.Fatalf("member %s got no owners: %s", a.MemberID, ca.UserData)
		}
		owners = append(owners, mb.owners)
	}
	if len(owners) != 3 {
		t.Fatalf("%d current members read owners, want 3", len(owners))
	}
	for i, m := range owners {
		got := map[TaskID]string{}
		gotStandbys := map[TaskID][]string{}
		for id := range m.tasks {
			active, standbys, _ := m.owners(id)
			if active.ID != "" {
				got[id] = active.ID
			}
			for _, sb := range standbys {
				gotStandbys[id] = append(gotStandbys[id], sb.ID)
			}
			addr := map[string]string{"a": "a.example:1", "b": "b.example:1", "old": ""}
			for _, in := range append(standbys, active) {
				if in.ID != "" && in.Address != addr[in.ID] {
					t.Errorf("member %d: instance %s at %q, want %q", i, in.ID, in.Address, addr[in.ID])
				}
			}
		}
		if diff := cmp.Diff(wantActive, got); diff != "" {
			t.Errorf("member %d: active owners (-want +got):\n%s", i, diff)
		}
		if diff := cmp.Diff(wantStandbys, gotStandbys); diff != "" {
			t.Errorf("member %d: standby owners (-want +got):\n%s", i, diff)
		}
	}
	if len(wantActive) != 6 {
		t.Errorf("%d tasks active, want 6", len(wantActive))
	}
	if !strings.Contains(logs.String(), "group metadata version 1, older than this kgen's 2") || !strings.Contains(logs.String(), "instance=old") {
		t.Errorf("the leader did not say what it does with the old member:\n%s", logs.String())
	}
}

func TestDecodeAssignment(t *testing.T) {
	cases := []struct {
		name         string
		data         string
		wantStandbys []TaskID
		wantOwners   map[TaskID]string // task -> "active/standby,standby"
		wantErr      string
	}{
		{name: "version 1: the array", data: `[{"t":1,"p":0}]`, wantStandbys: []TaskID{{1, 0}}},
		{name: "version 1: nothing", data: ``},
		{
			name:         "version 2",
			data:         `{"v":2,"s":[{"t":0,"p":1}],"o":{"in":[{"i":"a","a":"x:1"},{"i":"b"}],"t":[[0,0,0,1],[0,1,1],[1,0,-1,0]]}}`,
			wantStandbys: []TaskID{{0, 1}},
			wantOwners:   map[TaskID]string{{0, 0}: "a/b", {0, 1}: "b/", {1, 0}: "/a"},
		},
		{
			name:       "invalid owners are dropped, the rest kept",
			data:       `{"v":2,"o":{"in":[{"i":"a"}],"t":[[0,0,0],[5,0,0],[0,1,3],[0,2,0,-2],[0,0,0],[1],[0,-1,0]]}}`,
			wantOwners: map[TaskID]string{{0, 0}: "a/"},
			wantErr:    "dropped 6 invalid entries",
		},
		{
			name:       "a newer version's fields are ignored",
			data:       `{"v":3,"x":{"y":1},"o":{"in":[{"i":"a","z":2}],"t":[[1,1,0]]}}`,
			wantOwners: map[TaskID]string{{1, 1}: "a/"},
		},
		{name: "garbage object", data: `{"v":"x"}`, wantErr: "undecodable user data"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			standbys, owners, err := decodeAssignment([]byte(c.data), 2)
			checkErr(t, err, c.wantErr)
			if diff := cmp.Diff(c.wantStandbys, standbys); diff != "" {
				t.Errorf("standbys (-want +got):\n%s", diff)
			}
			var got map[TaskID]string
			if owners != nil {
				got = map[TaskID]string{}
				for id := range owners.tasks {
					active, sbs, _ := owners.owners(id)
					var names []string
					for _, sb := range sbs {
						names = append(names, sb.ID)
					}
					got[id] = active.ID + "/" + strings.Join(names, ",")
				}
			}
			if diff := cmp.Diff(c.wantOwners, got); diff != "" {
				t.Errorf("owners (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEncodeAssignmentRoundTrip: what a leader writes for a current member
// reads back the same; for a version-1 member it is the array.
func TestEncodeAssignmentRoundTrip(t *testing.T) {
	owners := &ownerMap{
		instances: []Instance{{"a", "a:1"}, {"b", ""}},
		tasks:     map[TaskID]taskOwners{{0, 0}: {active: 1, standbys: []int{0}}, {1, 3}: {active: -1}},
	}
	standbys := []TaskID{{0, 0}}
	ids, got, err := decodeAssignment(encodeAssignment(2, standbys, owners), 2)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(standbys, ids); diff != "" {
		t.Errorf("standbys (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(owners, got, cmp.AllowUnexported(ownerMap{}, taskOwners{})); diff != "" {
		t.Errorf("owners (-want +got):\n%s", diff)
	}
	old := encodeAssignment(1, standbys, owners)
	var arr []json.RawMessage
	if err := json.Unmarshal(old, &arr); err != nil || len(arr) != 1 {
		t.Errorf("version 1 assignment %s, want the standby array", old)
	}
	if b := encodeAssignment(1, nil, owners); b != nil {
		t.Errorf("version 1 assignment with no standbys: %s, want none", b)
	}
}

func TestMemberVersionNote(t *testing.T) {
	for _, c := range []struct {
		data string
		want string
	}{
		{`{"i":"a"}`, "version 1, older than this kgen's 2"},
		{`{"v":2,"i":"a","a":"h:1"}`, ""},
		{`{"v":7,"i":"a","a":"h:1","q":[1]}`, "version 7, newer than this kgen's 2"},
	} {
		info, err := decodeMemberInfo([]byte(c.data), 1)
		if err != nil {
			t.Fatalf("%s: %v", c.data, err)
		}
		note := memberVersionNote(info)
		if c.want == "" && note != "" || !strings.Contains(note, c.want) {
			t.Errorf("%s: note %q, want %q", c.data, note, c.want)
		}
	}
}
