package agent

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffnode/skiff/volumes"
)

// The Agent's side of its loops' ports: what the container GC (gcPods),
// the volume loops (volumePods) and the relist (relistPods) ask of it.
// Each method takes the agent's lock for a moment and returns quickly.

// liveUIDs returns the UIDs of the pods that have a worker, and whether
// every source has delivered its pods.
func (a *Agent) liveUIDs() (map[types.UID]bool, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	live := make(map[types.UID]bool, len(a.workers))
	for uid := range a.workers {
		live[uid] = true
	}
	return live, a.sourcesReady
}

// hasWorker reports whether pod uid has a worker now.
func (a *Agent) hasWorker(uid types.UID) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.workers[uid]
	return ok
}

// sizeLimited returns the workers of the pods that run (not terminating,
// not orphans) with size-limited disk emptyDirs.
func (a *Agent) sizeLimited() []*podWorker {
	a.mu.Lock()
	defer a.mu.Unlock()
	var ws []*podWorker
	for _, w := range a.workers {
		if term, _ := w.req.isTerminating(); !term && !w.orphan && volumes.HasSizeLimits(w.given) {
			ws = append(ws, w)
		}
	}
	return ws
}

// relistSaw records that the relist found pod uid's runtime state changed
// (wake: also wake its worker; a pod that is gone only marks it, its
// worker learns of it at its next resync, which is then full). Safe for
// concurrent use.
func (a *Agent) relistSaw(uid types.UID, wake bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if w, ok := a.workers[uid]; ok {
		w.relistChanges.Add(1)
		if wake {
			w.wake()
		}
	}
}
