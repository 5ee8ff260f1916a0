package agent

import (
	"time"
)

// What a service manager (systemd's sd_notify, cmd/skiff/systemd.go) needs to
// know of a running Agent: when its desired state is known, whether its loops
// still turn, and how many pods it runs.

// SourcesReady is closed once every source has delivered its first full
// list and the agent has reconciled them (workers started, new pods
// published as Pending), or at once in Run when there is no source. Safe
// for concurrent use.
func (a *Agent) SourcesReady() <-chan struct{} { return a.ready }

// markSourcesReadyLocked sets sourcesReady and closes SourcesReady's
// channel, once. a.mu held.
func (a *Agent) markSourcesReadyLocked() {
	if !a.sourcesReady {
		a.sourcesReady = true
		close(a.ready)
	}
}

// Heartbeat returns when the relist loop last finished an iteration (a
// listing, successful or not), or when it started; zero before Run. The
// beat is taken under the agent's lock, which every reconcile, worker start
// and end, and source update holds: a deadlocked agent or a relist stuck in a call
// that ignores its deadline stops the beats, like the kubelet's PLEG
// health check (relist not seen for 3 min). A listing's CRI calls are
// bounded by the runtime's request timeout, so a slow or failing runtime
// delays beats but does not stop them. Safe for concurrent use.
func (a *Agent) Heartbeat() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.heartbeat
}

// beat records a Heartbeat now. Relist loop only.
func (a *Agent) beat() {
	now := a.clock.Now()
	a.mu.Lock()
	a.heartbeat = now
	a.mu.Unlock()
}

// PodCounts returns how many of the pods the agent publishes are in phase
// Running, and how many it publishes in all (Pods without the copies).
// Safe for concurrent use.
func (a *Agent) PodCounts() (running, total int) {
	return a.status.counts()
}
