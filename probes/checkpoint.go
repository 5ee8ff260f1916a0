package probes

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// The probe checkpoint carries readiness and startup results across agent
// restarts: an agent restart must not flip a Ready condition (the
// kubelet's KEP-4781). The Manager writes, per container ID, whether the
// container's readiness probe last reached Success and whether its startup
// probe succeeded; a new Manager loads the file, and AddContainer for a
// container ID found there starts from those results instead of the
// defaults (readiness Failure, startup not started) until this Manager's
// own probes report.
//
// Writes are coalesced: a result change schedules one write
// checkpointDelay later that carries every change made meanwhile, so the
// file is written at most once per checkpointDelay, by one writer
// goroutine of the Manager. A kill -9 can lose the changes of the last
// checkpointDelay; Stop writes what is pending.

// checkpointDelay is how long a result change waits before it is written,
// gathering the changes made meanwhile into one write.
const checkpointDelay = time.Second

// restoreGrace is how long loaded entries that no AddContainer claimed are
// kept in the file: long enough for a restarted agent to re-add every
// running container. Container IDs are never reused, so an entry kept for
// a container that is gone only costs a line of the file.
const restoreGrace = 5 * time.Minute

// checkpointVersion is the file format's version; another is ignored.
const checkpointVersion = 1

// checkpointFile is the JSON file.
type checkpointFile struct {
	Version    int                        `json:"version"`
	Containers map[string]checkpointEntry `json:"containers"` // by container ID
}

// checkpointEntry is what is kept of one container. Only true results are
// worth keeping: false is where a new Manager starts anyway.
type checkpointEntry struct {
	PodUID    types.UID `json:"podUID"`
	Container string    `json:"container"`
	Ready     bool      `json:"ready,omitempty"`   // readiness probe at Success
	Started   bool      `json:"started,omitempty"` // startup probe succeeded
}

// checkpoint is the Manager's side of the file. Its fields other than
// path, kick and writeMu are guarded by the Manager's mu.
type checkpoint struct {
	path string
	// kick (1-buffered) wakes the writer goroutine when dirty is set.
	kick chan struct{}
	// restored holds loaded entries no AddContainer has claimed yet.
	restored map[string]checkpointEntry
	loadedAt time.Time
	// dirty: results changed since the last write, which is due when
	// timer fires. The timer is made when the change is, on the Manager's
	// clock, so a fake clock's Step cannot slip in between.
	dirty bool
	timer clock.Timer
	// closed: Stop wrote the last checkpoint; nothing is written after.
	closed bool
	// writeMu serialises snapshot+write pairs, so an older snapshot never
	// overwrites a newer one. Lock order: writeMu, then the Manager's mu.
	writeMu sync.Mutex
}

// loadCheckpoint reads the checkpoint at path. A missing file is an empty
// checkpoint; an unreadable one is logged by the caller through the error
// and then treated as empty. path "" disables checkpointing (nil).
func loadCheckpoint(path string, clk clock.PassiveClock) (*checkpoint, error) {
	if path == "" {
		return nil, nil
	}
	cp := &checkpoint{path: path, kick: make(chan struct{}, 1), restored: map[string]checkpointEntry{}, loadedAt: clk.Now()}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return cp, nil
	}
	if err != nil {
		return cp, fmt.Errorf("probe checkpoint: %w", err)
	}
	var f checkpointFile
	if err := json.Unmarshal(data, &f); err != nil {
		return cp, fmt.Errorf("probe checkpoint %s: %w", path, err)
	}
	if f.Version != checkpointVersion {
		return cp, fmt.Errorf("probe checkpoint %s: version %d, want %d", path, f.Version, checkpointVersion)
	}
	for id, e := range f.Containers {
		cp.restored[id] = e
	}
	return cp, nil
}

// restoredResultLocked returns the checkpointed result of the probe of
// kind of containerID and true, or false if there is none. Caller holds
// the Manager's mu.
func (m *Manager) restoredResultLocked(containerID string, k Kind) (Result, bool) {
	if m.cp == nil {
		return Unknown, false
	}
	e, ok := m.cp.restored[containerID]
	switch {
	case !ok:
		return Unknown, false
	case k == Readiness && e.Ready, k == Startup && e.Started:
		return Success, true
	}
	return Unknown, false
}

// claimRestoredLocked forgets the loaded entry of containerID: from now on
// the Manager's own entries hold its results. Caller holds mu.
func (m *Manager) claimRestoredLocked(containerID string) {
	if m.cp != nil {
		delete(m.cp.restored, containerID)
	}
}

// forgetRestoredPodLocked drops unclaimed loaded entries of pod uid (it was
// removed). Caller holds mu.
func (m *Manager) forgetRestoredPodLocked(uid types.UID) {
	if m.cp == nil {
		return
	}
	for id, e := range m.cp.restored {
		if e.PodUID == uid {
			delete(m.cp.restored, id)
			m.checkpointChangedLocked()
		}
	}
}

// checkpointChangedLocked schedules a write of the checkpoint
// checkpointDelay from now unless one is scheduled already. Caller holds
// mu. Never blocks.
func (m *Manager) checkpointChangedLocked() {
	cp := m.cp
	if cp == nil || cp.closed || cp.dirty {
		return
	}
	cp.dirty, cp.timer = true, m.clock.NewTimer(checkpointDelay)
	select {
	case cp.kick <- struct{}{}:
	default:
	}
}

// runCheckpointWriter writes the checkpoint when a write is due, until the
// Manager stops. It is the Manager's one goroutine besides the workers.
func (m *Manager) runCheckpointWriter() {
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-m.cp.kick:
		}
		m.mu.Lock()
		t := m.cp.timer
		m.mu.Unlock()
		select {
		case <-m.ctx.Done():
			return
		case <-t.C():
		}
		m.writeCheckpoint(false)
	}
}

// writeCheckpoint writes the checkpoint if results changed since the last
// write. With last, later writes are disabled: Stop calls it before it
// drops the results, which the next agent needs. Blocks on file I/O.
func (m *Manager) writeCheckpoint(last bool) {
	if m.cp == nil {
		return
	}
	m.cp.writeMu.Lock()
	defer m.cp.writeMu.Unlock()
	m.mu.Lock()
	if m.cp.closed || !m.cp.dirty {
		m.cp.closed = m.cp.closed || last
		m.mu.Unlock()
		return
	}
	m.cp.dirty = false
	m.cp.closed = last
	m.cp.timer.Stop()
	f := m.snapshotLocked()
	m.mu.Unlock()
	if err := writeFileAtomic(m.cp.path, f); err != nil {
		// A missing checkpoint only costs readiness flips at the next restart.
		m.log.Warn("writing the probe checkpoint", "path", m.cp.path, "err", err)
	}
}

// snapshotLocked returns the file's content: the true readiness and startup
// results of every probed container, plus loaded entries not yet claimed
// while they are younger than restoreGrace. Caller holds mu.
func (m *Manager) snapshotLocked() checkpointFile {
	f := checkpointFile{Version: checkpointVersion, Containers: map[string]checkpointEntry{}}
	if m.clock.Since(m.cp.loadedAt) < restoreGrace {
		for id, e := range m.cp.restored {
			f.Containers[id] = e
		}
	} else {
		clear(m.cp.restored)
	}
	for key, e := range m.entries {
		if e.result != Success || key.kind == Liveness {
			continue
		}
		c := f.Containers[e.containerID]
		c.PodUID, c.Container = key.podUID, key.container
		if key.kind == Readiness {
			c.Ready = true
		} else {
			c.Started = true
		}
		f.Containers[e.containerID] = c
	}
	return f
}

// writeFileAtomic writes v as JSON to path through a temporary file in
// the same directory and a rename, so readers see the old or the new file.
func writeFileAtomic(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename: nothing left to remove
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
