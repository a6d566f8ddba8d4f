package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// Checkpoint maps changelog topic -> partition -> next offset to restore from.
type Checkpoint map[string]map[int32]int64

// checkpointVersion is the version of the checkpoint file format.
const checkpointVersion = 1

// checkpointFile is the checkpoint as stored: JSON with a version, so that
// the format can change without a new file name.
type checkpointFile struct {
	Version int                        `json:"version"`
	Offsets map[string]map[int32]int64 `json:"offsets"`
}

// ReadCheckpoint reads the checkpoint file at path.
// A missing file is an empty checkpoint, not an error; a file that cannot be
// parsed is an error naming the file.
func ReadCheckpoint(path string) (Checkpoint, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Checkpoint{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read checkpoint %s: %w", path, err)
	}
	var f checkpointFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("read checkpoint %s: corrupt: %w", path, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("read checkpoint %s: corrupt: data after the checkpoint", path)
	}
	if f.Version != checkpointVersion {
		return nil, fmt.Errorf("read checkpoint %s: unsupported version %d (want %d)", path, f.Version, checkpointVersion)
	}
	if f.Offsets == nil {
		return nil, fmt.Errorf("read checkpoint %s: corrupt: no offsets", path)
	}
	cp := Checkpoint(f.Offsets)
	if err := cp.validate(); err != nil {
		return nil, fmt.Errorf("read checkpoint %s: corrupt: %w", path, err)
	}
	return cp, nil
}

func (cp Checkpoint) validate() error {
	for topic, parts := range cp {
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
	offsets := map[string]map[int32]int64(cp)
	if offsets == nil {
		offsets = map[string]map[int32]int64{}
	}
	data, err := json.Marshal(checkpointFile{Version: checkpointVersion, Offsets: offsets})
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
