package state

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// Checkpoint is what a task directory's checkpoint file holds: how far each
// logged store is in its changelog, and which incarnation of the changelog
// topic that offset belongs to.
type Checkpoint struct {
	// Offsets maps changelog topic -> partition -> next offset to restore
	// from.
	Offsets map[string]map[int32]int64
	// TopicIDs maps a changelog topic to the id Kafka gave it. A topic
	// deleted and created again (an application reset) gets a new id, so a
	// store whose recorded id differs holds data of a changelog that no
	// longer exists. A topic missing here has no recorded id (a version 1
	// file).
	TopicIDs map[string]TopicID
}

// TopicID is a Kafka topic id; it prints as Kafka's tools print it
// (URL-safe base64, no padding).
type TopicID [16]byte

func (id TopicID) String() string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// MarshalText implements encoding.TextMarshaler.
func (id TopicID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (id *TopicID) UnmarshalText(b []byte) error {
	n, err := base64.RawURLEncoding.Decode(id[:], b)
	if err == nil && (n != len(id) || base64.RawURLEncoding.EncodedLen(len(id)) != len(b)) {
		err = fmt.Errorf("topic id %q is not 16 bytes", b)
	}
	return err
}

// checkpointVersion is the version of the checkpoint file format written;
// version 1 files (without topic ids) are still read.
const checkpointVersion = 2

// checkpointFile is the checkpoint as stored: JSON with a version, so that
// the format can change without a new file name.
type checkpointFile struct {
	Version  int                        `json:"version"`
	Offsets  map[string]map[int32]int64 `json:"offsets"`
	TopicIDs map[string]TopicID         `json:"topic_ids,omitempty"`
}

// ReadCheckpoint reads the checkpoint file at path.
// A missing file is an empty checkpoint, not an error; a file that cannot be
// parsed is an error naming the file.
func ReadCheckpoint(path string) (Checkpoint, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Checkpoint{Offsets: map[string]map[int32]int64{}, TopicIDs: map[string]TopicID{}}, nil
	}
	if err != nil {
		return Checkpoint{}, fmt.Errorf("read checkpoint %s: %w", path, err)
	}
	var f checkpointFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return Checkpoint{}, fmt.Errorf("read checkpoint %s: corrupt: %w", path, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Checkpoint{}, fmt.Errorf("read checkpoint %s: corrupt: data after the checkpoint", path)
	}
	if f.Version != 1 && f.Version != checkpointVersion {
		return Checkpoint{}, fmt.Errorf("read checkpoint %s: unsupported version %d (want %d)", path, f.Version, checkpointVersion)
	}
	if f.Version == 1 && f.TopicIDs != nil {
		return Checkpoint{}, fmt.Errorf("read checkpoint %s: corrupt: topic ids in a version 1 file", path)
	}
	if f.Offsets == nil {
		return Checkpoint{}, fmt.Errorf("read checkpoint %s: corrupt: no offsets", path)
	}
	cp := Checkpoint{Offsets: f.Offsets, TopicIDs: f.TopicIDs}
	if cp.TopicIDs == nil {
		cp.TopicIDs = map[string]TopicID{}
	}
	if err := cp.validate(); err != nil {
		return Checkpoint{}, fmt.Errorf("read checkpoint %s: corrupt: %w", path, err)
	}
	return cp, nil
}

func (cp Checkpoint) validate() error {
	for topic := range cp.TopicIDs {
		if topic == "" {
			return errors.New("empty topic name")
		}
	}
	for topic, parts := range cp.Offsets {
		if topic == "" {
			return errors.New("empty topic name")
		}
		for p, off := range parts {
			if p < 0 {
				return fmt.Errorf("topic %q: negative partition %d", topic, p)
			}
			if off < 0 {
				return fmt.Errorf("topic %q partition %d: negative offset %d", topic, p, off)
			}
		}
	}
	return nil
}

// WriteCheckpoint replaces the checkpoint file at path atomically: it writes
// a temporary file in the same directory, syncs it, renames it over path and
// syncs the directory, so a crash leaves either the old or the new checkpoint.
func WriteCheckpoint(path string, cp Checkpoint) error {
	if err := cp.validate(); err != nil {
		return fmt.Errorf("write checkpoint %s: %w", path, err)
	}
	offsets := cp.Offsets
	if offsets == nil {
		offsets = map[string]map[int32]int64{}
	}
	data, err := json.Marshal(checkpointFile{Version: checkpointVersion, Offsets: offsets, TopicIDs: cp.TopicIDs})
	if err != nil {
		return fmt.Errorf("write checkpoint %s: %w", path, err)
	}
	data = append(data, '\n')
	if err := writeFileAtomic(path, data); err != nil {
		return fmt.Errorf("write checkpoint %s: %w", path, err)
	}
	return nil
}

func writeFileAtomic(path string, data []byte) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, base+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if runtime.GOOS == "windows" {
		return nil // Windows cannot sync a directory handle
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err = d.Sync(); err != nil {
		_ = d.Close()
		return fmt.Errorf("sync directory: %w", err)
	}
	return d.Close()
}
