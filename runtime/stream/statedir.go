package stream

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kgen-dev/kgen/runtime/state"
)

// claimStateDir locks the application's state directory (StateDir/AppID)
// for as long as the App runs, then reads the instance id kept there. Two
// instances on one directory would share that id, hence one transactional
// id and one group.instance.id, and fence each other (PRODUCER_FENCED,
// FENCED_INSTANCE_ID) or share task directories; the second one is refused
// here instead, with the way out. An App that neither keeps its instance id
// there nor has stores on disk does not touch the directory. forReset says
// the claim is a reset's: the way out is then to stop the instance holding
// the directory, since a reset wipes that directory and must not run beside it.
func (a *App) claimStateDir(forReset bool) (release func(), err error) {
	if a.cfg.instanceID != "" && !a.topo.anyPersistent(a.cfg.memoryStores) {
		return func() {}, nil
	}
	dir := filepath.Join(a.cfg.stateDir, a.cfg.appID)
	unlock, err := state.LockDir(dir)
	if errors.Is(err, state.ErrDirLocked) && forReset {
		return nil, fmt.Errorf("state directory %s is in use by a running instance of application %q, in this process or another: "+
			"stop it first (a reset wipes this directory and refuses while any instance runs)", dir, a.cfg.appID)
	}
	if errors.Is(err, state.ErrDirLocked) {
		return nil, fmt.Errorf("state directory %s is in use by another instance of application %q, in this process or another: "+
			"give each instance its own state directory (stream.StateDir; -state-dir or KGEN_STATE_DIR in a generated main)", dir, a.cfg.appID)
	}
	if err != nil {
		return nil, err
	}
	if a.cfg.instanceID == "" {
		id, err := stableInstanceID(dir)
		if err != nil {
			_ = unlock()
			return nil, err
		}
		a.stateMu.Lock() // InstanceID may be reading it
		a.cfg.instanceID = id
		a.stateMu.Unlock()
	}
	return func() { _ = unlock() }, nil
}

// stableInstanceID reads the instance id kept in dir, creating it once.
func stableInstanceID(dir string) (string, error) {
	path := filepath.Join(dir, ".instance-id")
	if b, err := os.ReadFile(path); err == nil && len(bytes.TrimSpace(b)) > 0 {
		return string(bytes.TrimSpace(b)), nil
	}
	var r [6]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", err
	}
	id := hex.EncodeToString(r[:])
	if err := os.WriteFile(path, []byte(id+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("state directory: %w", err)
	}
	return id, nil
}
