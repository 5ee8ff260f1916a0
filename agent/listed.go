package agent

import (
	"context"
	"maps"
	"strconv"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffnode/skiff/runtime"
)

// What the agent does with each of the relist's listings (relistPods.listed):
// it terminates orphans, and once after the sources delivered, it cleans
// up the volumes and cgroups of pods nobody knows.

// listed kills orphans, and starts the one-off cleanups of orphaned
// volumes and stale cgroups (see relistPods).
func (a *Agent) listed(ctx context.Context, pods map[types.UID]bool) {
	a.killOrphans(ctx, pods)
	a.maybeCleanOrphanVolumes(ctx, pods)
	a.releaseOrphanUserNamespaces(pods)
	// Off the relist path: removing a cgroup that still holds
	// processes retries for seconds, and pod changes must not wait.
	a.mu.Lock()
	due := a.cfg.Cgroups != nil && a.sourcesReady && !a.staleCgroupsCleaned
	a.mu.Unlock()
	if due {
		// A copy: pods is refilled by the next listing.
		pods := maps.Clone(pods)
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			a.cleanStaleCgroups(ctx, pods)
		}()
	}
}

// killOrphans terminates pods that have sandboxes but that no source wants,
// once every source has delivered its first full list. The listing holds
// only refs, so an orphan's sandboxes are listed in full to rebuild it (one
// more CRI call per orphan, outside a.mu).
func (a *Agent) killOrphans(ctx context.Context, pods map[types.UID]bool) {
	var orphans []types.UID
	a.mu.Lock()
	if a.sourcesReady {
		for uid := range pods {
			if _, ok := a.workers[uid]; !ok && uid != "" {
				orphans = append(orphans, uid)
			}
		}
	}
	a.mu.Unlock()
	for _, uid := range orphans {
		sbs, err := a.cfg.Runtime.ListSandboxes(ctx, podSelector(string(uid)))
		if err != nil {
			if ctx.Err() == nil {
				a.log.Warn("listing sandboxes of orphan", "uid", uid, "err", err)
			}
			continue
		}
		var sb *runtime.Sandbox
		for _, s := range sbs {
			if types.UID(s.Labels[labelPodUID]) == uid {
				sb = s
			}
		}
		if sb == nil {
			continue // gone meanwhile
		}
		a.mu.Lock()
		// Checked again: a source may have delivered the pod meanwhile.
		if _, ok := a.workers[uid]; !ok {
			pod := orphanPod(sb)
			a.log.Info("terminating pod that no source wants", "pod", pod.Namespace+"/"+pod.Name, "uid", uid)
			a.startWorkerLocked(ctx, pod, true)
		}
		a.mu.Unlock()
	}
}

// orphanPod rebuilds enough of a pod from its sandbox to terminate it with
// the grace period it was created with.
func orphanPod(sb *runtime.Sandbox) *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: sb.Name, Namespace: sb.Namespace, UID: types.UID(sb.Labels[labelPodUID]),
	}}
	if g, err := strconv.ParseInt(sb.Annotations[annotationGracePeriod], 10, 64); err == nil {
		pod.Spec.TerminationGracePeriodSeconds = &g
	}
	return pod
}

// takeOneOff claims a one-off clean-up (done: its flag, under a.mu) once
// the sources have delivered their first full lists: it sets the flag and
// returns the UIDs of the pods the agent has workers for. ok is false when
// the clean-up is not enabled, not yet due, or already claimed.
func (a *Agent) takeOneOff(enabled bool, done *bool) (known map[types.UID]bool, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !enabled || !a.sourcesReady || *done {
		return nil, false
	}
	*done = true
	known = make(map[types.UID]bool, len(a.workers))
	for uid := range a.workers {
		known[uid] = true
	}
	return known, true
}

// maybeCleanOrphanVolumes removes, once after the sources delivered their
// first full lists, the pod directories of pods that neither a source nor
// the runtime knows (withSandbox: the UIDs the relist found), off the
// relist path. Orphans with sandboxes are terminated as orphans and tear
// their volumes down themselves.
func (a *Agent) maybeCleanOrphanVolumes(ctx context.Context, withSandbox map[types.UID]bool) {
	keep, ok := a.takeOneOff(a.cfg.Volumes != nil, &a.orphanVolumesCleaned)
	if !ok {
		return
	}
	maps.Copy(keep, withSandbox)
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		if err := a.cfg.Volumes.CleanOrphans(ctx, keep); err != nil && ctx.Err() == nil {
			a.log.Warn("cleaning orphaned pod volumes", "err", err)
		}
	}()
}

// releaseOrphanUserNamespaces frees, once after the sources delivered
// their first full lists, the user namespace IDs of pods that neither a
// source nor the runtime knows (withSandbox: the UIDs the relist found):
// pods that went while the agent was down, whose mapping files the
// restarted allocator loaded, as the kubelet's
// CleanupOrphanedPodUsernsAllocations. Pods with sandboxes are terminated
// as orphans and release theirs themselves.
func (a *Agent) releaseOrphanUserNamespaces(withSandbox map[types.UID]bool) {
	known, ok := a.takeOneOff(a.cfg.UserNamespaces != nil, &a.orphanUsernsReleased)
	if !ok {
		return
	}
	for _, pod := range a.cfg.UserNamespaces.Pods() {
		if uid := types.UID(pod); known[uid] || withSandbox[uid] {
			continue
		}
		a.log.Info("releasing an orphaned pod's user namespace", "uid", pod)
		if err := a.cfg.UserNamespaces.Release(pod); err != nil {
			a.log.Warn("releasing an orphaned pod's user namespace", "uid", pod, "err", err)
		}
	}
}

// cleanStaleCgroups removes, once after the sources delivered their first
// full lists, the pod cgroups of pods that neither a source nor the
// runtime knows (left by a crash). Pods with sandboxes are terminated as
// orphans and remove their cgroup themselves.
func (a *Agent) cleanStaleCgroups(ctx context.Context, withSandbox map[types.UID]bool) {
	known, ok := a.takeOneOff(a.cfg.Cgroups != nil, &a.staleCgroupsCleaned)
	if !ok {
		return
	}
	uids, err := a.cfg.Cgroups.ListPods(ctx)
	if err != nil {
		a.log.Warn("listing pod cgroups", "err", err)
		return
	}
	for _, uid := range uids {
		if known[uid] || withSandbox[uid] {
			continue
		}
		// Each removal of a cgroup that still holds processes retries for
		// seconds: stop at shutdown, which waits for this goroutine (the
		// next start cleans up the rest).
		if ctx.Err() != nil {
			return
		}
		a.log.Info("removing stale pod cgroup", "uid", uid)
		if err := a.cfg.Cgroups.RemovePod(ctx, uid); err != nil {
			a.log.Warn("removing stale pod cgroup", "uid", uid, "err", err)
		}
	}
}
