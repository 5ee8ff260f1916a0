package agent

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffnode/skiff/runtime"
)

// relistLoop lists all of skiff's sandboxes and containers every
// RelistPeriod (one pair of CRI calls however many pods), and at once when
// the runtime reports an exit; it wakes the workers of pods whose runtime
// state changed, and kills orphans.
func (a *Agent) relistLoop(ctx context.Context) {
	t := a.clock.NewTicker(a.cfg.RelistPeriod)
	defer t.Stop()
	exits := newExitQueue()
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		a.watchExits(ctx, exits)
	}()
	r := newRelister()
	var recheck <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		case <-exits.kick:
		case <-recheck:
		}
		recheck = nil
		d, err := a.relistOnce(ctx, r, exits)
		if err != nil {
			if ctx.Err() == nil {
				a.log.Warn("relist failed", "err", err)
			}
			continue
		}
		if d > 0 {
			recheck = a.clock.After(d)
		}
	}
}

// relister is what the relist loop keeps between listings. Owned by the
// relist loop's goroutine.
type relister struct {
	// prev is each pod's fingerprint at the previous listing.
	prev map[types.UID]string
}

func newRelister() *relister { return &relister{prev: map[types.UID]string{}} }

// relistOnce lists the runtime once, settles the reported exits, wakes the
// workers of pods whose runtime state changed since the previous listing,
// kills orphans and starts the one-off stale cgroup cleanup. It returns
// when to list again for exits not yet seen (0: at the next tick).
// Blocking (two CRI calls); not safe for concurrent use of r.
func (a *Agent) relistOnce(ctx context.Context, r *relister, exits *exitQueue) (time.Duration, error) {
	cur, sandboxes, live, err := a.relist(ctx)
	if err != nil {
		return 0, err
	}
	d := exits.settle(live, a.clock.Now())
	for uid, fp := range cur {
		if r.prev[uid] != fp {
			a.wakeUID(uid)
		}
	}
	r.prev = cur
	a.killOrphans(ctx, sandboxes)
	// Off the relist path: removing a cgroup that still holds
	// processes retries for seconds, and pod changes must not wait.
	a.mu.Lock()
	due := a.cfg.Cgroups != nil && a.sourcesReady && !a.staleCgroupsCleaned
	a.mu.Unlock()
	if due {
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			a.cleanStaleCgroups(ctx, sandboxes)
		}()
	}
	return d, nil
}

// relist returns a fingerprint of each pod's runtime state, one sandbox
// per pod UID, and the IDs of the running containers and ready sandboxes.
func (a *Agent) relist(ctx context.Context) (map[types.UID]string, map[types.UID]*runtime.Sandbox, map[string]bool, error) {
	rt := a.cfg.Runtime
	sbs, err := rt.ListSandboxes(ctx, managedSelector())
	if err != nil {
		return nil, nil, nil, fmt.Errorf("list sandboxes: %w", err)
	}
	cs, err := rt.ListContainers(ctx, runtime.ContainerFilter{Labels: managedSelector()})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("list containers: %w", err)
	}
	parts := map[types.UID][]string{}
	bySB := map[types.UID]*runtime.Sandbox{}
	live := map[string]bool{}
	for _, sb := range sbs {
		uid := types.UID(sb.Labels[labelPodUID])
		parts[uid] = append(parts[uid], "s"+sb.ID+sb.State.String())
		bySB[uid] = sb
		live[sb.ID] = sb.State == runtime.SandboxReady
	}
	for _, c := range cs {
		uid := types.UID(c.Labels[labelPodUID])
		parts[uid] = append(parts[uid], "c"+c.ID+c.State.String())
		live[c.ID] = c.State == runtime.ContainerRunning
	}
	out := make(map[types.UID]string, len(parts))
	for uid, p := range parts {
		sort.Strings(p)
		out[uid] = strings.Join(p, ",")
	}
	return out, bySB, live, nil
}

// killOrphans terminates pods that have sandboxes but that no source wants,
// once every source has delivered its first full list.
func (a *Agent) killOrphans(ctx context.Context, sandboxes map[types.UID]*runtime.Sandbox) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.sourcesReady {
		return
	}
	for uid, sb := range sandboxes {
		if _, ok := a.workers[uid]; ok || uid == "" {
			continue
		}
		pod := orphanPod(sb)
		a.log.Info("terminating pod that no source wants", "pod", pod.Namespace+"/"+pod.Name, "uid", uid)
		a.startWorkerLocked(ctx, pod, true)
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
