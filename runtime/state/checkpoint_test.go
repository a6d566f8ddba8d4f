package state

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCheckpointRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".checkpoint")
	id := TopicID{0: 1, 7: 0xfe, 15: 0xff}
	for _, cp := range []Checkpoint{
		{
			Offsets:  map[string]map[int32]int64{"app-counts-changelog": {0: 42, 3: 0}, "app-other-changelog": {1: 1 << 40}},
			TopicIDs: map[string]TopicID{"app-counts-changelog": id},
		},
		{Offsets: map[string]map[int32]int64{"app-counts-changelog": {0: 43}}, TopicIDs: map[string]TopicID{}}, // replaces the previous file
		{Offsets: map[string]map[int32]int64{}, TopicIDs: map[string]TopicID{}},
	} {
		if err := WriteCheckpoint(path, cp); err != nil {
			t.Fatal(err)
		}
		got, err := ReadCheckpoint(path)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(cp, got); diff != "" {
			t.Errorf("round trip (-want +got):\n%s", diff)
		}
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %v, want only the checkpoint (no temporary files)", names)
	}
}

// A checkpoint written before topic ids were kept still reads, with none.
func TestReadCheckpointVersion1(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".checkpoint")
	if err := os.WriteFile(path, []byte(`{"version":1,"offsets":{"t":{"0":4}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadCheckpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	want := Checkpoint{Offsets: map[string]map[int32]int64{"t": {0: 4}}, TopicIDs: map[string]TopicID{}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("version 1 file (-want +got):\n%s", diff)
	}
}

func TestCheckpointNilWritesEmpty(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cp")
	if err := WriteCheckpoint(path, Checkpoint{}); err != nil {
		t.Fatal(err)
	}
	got, err := ReadCheckpoint(path)
	if err != nil || got.Offsets == nil || len(got.Offsets) != 0 {
		t.Errorf("ReadCheckpoint = %v, %v; want an empty checkpoint", got, err)
	}
}

func TestReadCheckpointMissing(t *testing.T) {
	got, err := ReadCheckpoint(filepath.Join(t.TempDir(), "none"))
	if err != nil {
		t.Fatalf("ReadCheckpoint of a missing file = %v", err)
	}
	if got.Offsets == nil || len(got.Offsets) != 0 || got.TopicIDs == nil {
		t.Errorf("ReadCheckpoint of a missing file = %v, want empty, not nil", got)
	}
}

func TestReadCheckpointCorrupt(t *testing.T) {
	for name, content := range map[string]string{
		"empty":            "",
		"garbage":          "\x00\x01not json",
		"truncated":        `{"version":1,"offsets":{"t":{"0":4`,
		"trailing":         `{"version":1,"offsets":{}} {}`,
		"unknown field":    `{"version":1,"offsets":{},"extra":1}`,
		"no offsets":       `{"version":1}`,
		"wrong version":    `{"version":3,"offsets":{}}`,
		"ids in version 1": `{"version":1,"offsets":{},"topic_ids":{"t":"AAAAAAAAAAAAAAAAAAAAAA"}}`,
		"short topic id":   `{"version":2,"offsets":{},"topic_ids":{"t":"AAAA"}}`,
		"bad topic id":     `{"version":2,"offsets":{},"topic_ids":{"t":"!!!!!!!!!!!!!!!!!!!!!!"}}`,
		"empty id topic":   `{"version":2,"offsets":{},"topic_ids":{"":"AAAAAAAAAAAAAAAAAAAAAA"}}`,
		"negative offset":  `{"version":1,"offsets":{"t":{"0":-1}}}`,
		"bad partition":    `{"version":1,"offsets":{"t":{"x":1}}}`,
		"empty topic":      `{"version":1,"offsets":{"":{"0":1}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), ".checkpoint")
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			cp, err := ReadCheckpoint(path)
			if err == nil {
				t.Fatalf("ReadCheckpoint(%q) = %v, want an error", content, cp)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name %s", err, path)
			}
		})
	}
}

func TestWriteCheckpointRejectsInvalid(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cp")
	if err := WriteCheckpoint(path, Checkpoint{Offsets: map[string]map[int32]int64{"t": {0: -5}}}); err == nil {
		t.Fatal("WriteCheckpoint with a negative offset succeeded")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("a rejected checkpoint left a file: %v", err)
	}
}

func TestWriteCheckpointMissingDir(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no", "such", "cp")
	err := WriteCheckpoint(path, Checkpoint{})
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("WriteCheckpoint into a missing directory = %v, want an error naming %s", err, path)
	}
}

// A checkpoint file is read from disk, where anything may be: reading never
// panics, and what it accepts writes back to the same checkpoint.
func FuzzReadCheckpoint(f *testing.F) {
	for _, seed := range []string{
		`{"version":2,"offsets":{"t":{"0":4}},"topic_ids":{"t":"AAECAwQFBgcICQoLDA0ODw"}}`,
		`{"version":1,"offsets":{"t":{"0":4,"3":0}}}`,
		`{"version":2,"offsets":{}}`,
		`{"version":2,"offsets":{},"topic_ids":{"t":"AAAA"}}`,
		`{"version":1,"offsets":{"t":{"x":1}}}`,
		"",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, ".checkpoint")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		cp, err := ReadCheckpoint(path)
		if err != nil {
			return
		}
		again := filepath.Join(dir, "again")
		if err := WriteCheckpoint(again, cp); err != nil {
			t.Fatalf("write back %q: %v", data, err)
		}
		got, err := ReadCheckpoint(again)
		if err != nil {
			t.Fatalf("read back %q: %v", data, err)
		}
		if diff := cmp.Diff(cp, got); diff != "" {
			t.Fatalf("round trip of %q (-read +reread):\n%s", data, diff)
		}
	})
}
