package stream

import (
	"sync"
	"testing"
	"time"
)

// CommitWaitsOpenToQueries is how many waits of commits (a producer flush,
// an offset or transaction commit) the App's current units ran with the
// query lock released.
func CommitWaitsOpenToQueries(a *App) uint64 {
	var n uint64
	for _, u := range a.currentUnits() {
		n += u.cm.openedToQueries.Load()
	}
	return n
}

// WidenCommitWaits makes every commit wait open to queries last at least
// pause more, for the test's duration: a window too short to be hit on an
// in-process broker becomes one queries land in.
func WidenCommitWaits(t *testing.T, pause func()) {
	testCommitWait = pause
	t.Cleanup(func() { testCommitWait = nil })
}

// SetRestoreChunks sets how many bytes a restore reads of a store's
// changelog before it applies them, and holds unapplied in all, for the
// test's duration.
func SetRestoreChunks(t *testing.T, chunk, buffer int) {
	oldChunk, oldBuffer := restoreChunkBytes, restoreBufferBytes
	restoreChunkBytes, restoreBufferBytes = chunk, buffer
	t.Cleanup(func() { restoreChunkBytes, restoreBufferBytes = oldChunk, oldBuffer })
}

// SetFirstPollWait sets how long a unit's first poll may block, for the
// test's duration.
func SetFirstPollWait(t *testing.T, d time.Duration) {
	old := firstPollWait
	firstPollWait = d
	t.Cleanup(func() { firstPollWait = old })
}

// SetRestoreApplySlots sets how many restore chunks an App created during
// the test writes at once.
func SetRestoreApplySlots(t *testing.T, n int) {
	old := restoreApplySlots
	restoreApplySlots = func() int { return n }
	t.Cleanup(func() { restoreApplySlots = old })
}

// SetRestoreStallAfter sets how long an active restore may stand still
// before its changelog is read again, for the test's duration.
func SetRestoreStallAfter(t *testing.T, d time.Duration) {
	old := restoreStallAfter
	restoreStallAfter = d
	t.Cleanup(func() { restoreStallAfter = old })
}

// PauseRestoreOnce makes the next restore that reads partition of topic
// stop fetching it as it starts, as a client that dropped it would.
func PauseRestoreOnce(t *testing.T, topic string, partition int32) {
	var once sync.Once
	testPauseRestore = func(tp string, p int32) (paused bool) {
		if tp == topic && p == partition {
			once.Do(func() { paused = true })
		}
		return paused
	}
	t.Cleanup(func() { testPauseRestore = nil })
}
