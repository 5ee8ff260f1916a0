package probes

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// Result returns the current result of one probe of a container and true,
// or false if the container has no such probe (or was never added). The
// result is Unknown, Success or Failure, never Warning.
func (m *Manager) Result(podUID types.UID, containerName string, kind Kind) (Result, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entries[probeKey{podUID: podUID, container: containerName, kind: kind}]
	if e == nil {
		return Unknown, false
	}
	return e.result, true
}

// Started reports whether the container counts as started: it has no
// startup probe or its startup probe succeeded (B.11). A container that
// was never added counts as started. The caller checks that the container
// is running.
func (m *Manager) Started(podUID types.UID, containerName string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.startedLocked(podUID, containerName, "")
}

// startedLocked is Started; a non-empty containerID must also match the
// startup probe's container.
func (m *Manager) startedLocked(podUID types.UID, containerName, containerID string) bool {
	e := m.entries[probeKey{podUID: podUID, container: containerName, kind: Startup}]
	if e == nil {
		return true
	}
	if containerID != "" && e.containerID != containerID {
		return false
	}
	return e.result == Success
}

// Ready reports whether the probes let the container be ready: it has
// started (see Started) and has no readiness probe or its readiness probe
// last reached Success (B.10). Before its first success a readiness probe
// is Failure. The caller checks that the container is running: a container
// that is not running is never ready.
//
// When a started container is not ready, Ready also asks its readiness
// probe to run at once rather than at its next tick, as the kubelet's
// UpdatePodStatus does: a container whose startup probe just succeeded is
// probed for readiness without waiting up to a period. Ready never blocks
// on the probe; the verdict comes later through Changes. Unlike the
// kubelet, which asks again at every status update until the container is
// ready, Ready asks once per container: skiff computes status far more
// often, and under load (exec probes timing out on a busy 2-core node)
// every early round added load that made the next round time out too
// (bench density: 110 pods took 4x the raw CRI floor).
func (m *Manager) Ready(podUID types.UID, containerName string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.startedLocked(podUID, containerName, "") {
		return false
	}
	e := m.entries[probeKey{podUID: podUID, container: containerName, kind: Readiness}]
	if e == nil || e.result == Success {
		return true
	}
	if e.w != nil && !e.poked {
		e.poked = true
		e.w.poke()
	}
	return false
}

// LivenessFailed reports whether the container's liveness probe has failed
// failureThreshold times in a row (B.9). If so the agent must kill the
// container and apply the restart policy; message is the kubelet's Killing
// message ("Container app failed liveness probe"), to which the kubelet
// appends ", will be restarted" when the container will be restarted. The
// probe stays on hold until AddContainer reports a new container ID.
func (m *Manager) LivenessFailed(podUID types.UID, containerName string) (failed bool, message string) {
	return m.failed(podUID, containerName, Liveness)
}

// StartupFailed is LivenessFailed for the startup probe (B.11):
// "Container app failed startup probe".
func (m *Manager) StartupFailed(podUID types.UID, containerName string) (failed bool, message string) {
	return m.failed(podUID, containerName, Startup)
}

// failed reports whether the probe of kind is Failure.
func (m *Manager) failed(podUID types.UID, containerName string, kind Kind) (bool, string) {
	if r, ok := m.Result(podUID, containerName, kind); !ok || r != Failure {
		return false, ""
	}
	return true, fmt.Sprintf("Container %s failed %s probe", containerName, strings.ToLower(kind.String()))
}

// setResult implements workerOwner: it stores w's verdict unless w was
// replaced or removed, and sends on Changes when the result changed.
func (m *Manager) setResult(w *worker, r Result) {
	m.mu.Lock()
	e := m.entries[w.key]
	if e == nil || e.w != w {
		m.mu.Unlock()
		return
	}
	changed := e.result != r
	e.result = r
	if changed && w.key.kind != Liveness {
		m.checkpointChangedLocked()
	}
	m.mu.Unlock()
	if changed {
		w.log.Debug("probe result changed", "result", r)
		if m.cfg.Changes != nil {
			select {
			case m.cfg.Changes <- w.key.podUID:
			case <-m.ctx.Done():
			}
		}
	}
}

// started implements workerOwner.
func (m *Manager) started(w *worker) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.startedLocked(w.key.podUID, w.key.container, w.target.containerID)
}

// event implements workerOwner.
func (m *Manager) event(w *worker, eventType, reason, message string) {
	if m.cfg.Events != nil {
		m.cfg.Events(w.pod, w.key.container, eventType, reason, message)
	}
}
