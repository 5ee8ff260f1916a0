package agent

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
)

// loop is one of the agent's long-running goroutines beside the pod
// sources and the pod workers; Run starts each and waits for all of them.
type loop struct {
	name string
	run  func(ctx context.Context)
}

// loops lists the agent's loops, each where its Config asks for it: the
// relist (always; it runs the exit watcher), the probe changes, the
// emptyDir size limits (with a volume manager), the volume refresh on
// object changes, and the container GC.
func (a *Agent) loops() []loop {
	ls := []loop{{"relist", a.relist.run}}
	if a.cfg.ProbeChanges != nil {
		ls = append(ls, loop{"probe changes", a.drainProbeChanges})
	}
	if a.cfg.Volumes != nil {
		ls = append(ls, loop{"emptyDir size limits", a.volumes.sizeLimitLoop})
	}
	if a.cfg.ObjectChanges != nil {
		ls = append(ls, loop{"volume refresh", a.volumes.refreshVolumes})
	}
	if a.gc != nil {
		ls = append(ls, loop{"container GC", a.gc.run})
	}
	return ls
}

// drainProbeChanges wakes the worker of each pod whose probe result
// changed, until ctx is done.
func (a *Agent) drainProbeChanges(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case uid := <-a.cfg.ProbeChanges:
			a.wakeUID(uid)
		}
	}
}

func (a *Agent) wakeUID(uid types.UID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if w, ok := a.workers[uid]; ok {
		w.wake()
	}
}
