package agent

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
)

// volumeLoops are the agent's loops around the volume manager: the
// volume refresh on object changes and the emptyDir size limit check.
type volumeLoops struct {
	// vm: Config.Volumes (nil: no volume manager, no size limit loop).
	vm    VolumeManager
	clock clock.WithTicker
	log   *slog.Logger
	// changes: Config.ObjectChanges (nil: no refresh loop).
	changes <-chan struct{}
	// objectsChanged counts the object changes (shared with the workers,
	// see volumeRetry).
	objectsChanged atomic.Uint64
	pods           volumePods
}

// volumePods is the volume loops' port to the agent. Safe for concurrent
// use; both methods return quickly.
type volumePods interface {
	// sizeLimited returns the workers of the pods whose emptyDir usage is
	// measured.
	sizeLimited() []*podWorker
	// WakeAll asks every worker to sync now.
	WakeAll()
}

// refreshVolumes rewrites object-backed volumes (if there is a volume
// manager) each time the ConfigMaps and Secrets change, and then wakes
// every worker, until ctx is done: a pod waiting for a missing object
// (FailedMount, or CreateContainerConfigError for env) retries at once
// rather than at its next back-off. Object edits are rare (a file
// written), so waking all workers is cheap.
func (v *volumeLoops) refreshVolumes(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-v.changes:
		}
		v.objectsChanged.Add(1)
		if v.vm != nil {
			if err := v.vm.Refresh(ctx); err != nil && ctx.Err() == nil {
				v.log.Warn("refreshing volumes", "err", err)
			}
		}
		v.pods.WakeAll()
	}
}

// sizeLimitPeriod is how often emptyDir usage is measured (the kubelet's
// eviction manager's monitoring period).
const sizeLimitPeriod = 10 * time.Second

// sizeLimitLoop evicts, every sizeLimitPeriod, the pods whose disk
// emptyDir uses more than its sizeLimit, as the kubelet's eviction manager
// does, until ctx is done. The measuring (a directory walk) runs here, off
// the pod workers.
func (v *volumeLoops) sizeLimitLoop(ctx context.Context) {
	t := v.clock.NewTicker(sizeLimitPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			v.checkSizeLimits()
		}
	}
}

// checkSizeLimits measures the pods that have size-limited emptyDirs once.
func (v *volumeLoops) checkSizeLimits() {
	for _, w := range v.pods.sizeLimited() {
		over, err := v.vm.CheckSizeLimits(w.pod)
		if err != nil {
			w.log.Warn("measuring emptyDir usage", "err", err)
			continue
		}
		if over != nil {
			w.evict(EvictionSignalEmptyDirFsLimit, over.Message())
		}
	}
}
