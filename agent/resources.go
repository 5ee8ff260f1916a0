package agent

import (
	"context"
	"errors"
	"os"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffnode/skiff/cgroups"
	"github.com/skiffnode/skiff/podspec/qos"
	"github.com/skiffnode/skiff/runtime"
)

// PodCgroups is what the agent needs of pod-level cgroups (implemented by
// *cgroups.Manager). All methods are idempotent and safe for concurrent use.
type PodCgroups interface {
	// CgroupParent is the sandbox's CgroupParent for pod (pure naming).
	CgroupParent(pod *v1.Pod) string
	// EnsurePod creates the pod's cgroup and sizes it; before the sandbox.
	EnsurePod(ctx context.Context, pod *v1.Pod) error
	// RemovePod removes the pod's cgroup; a missing one is not an error.
	RemovePod(ctx context.Context, uid types.UID) error
	// ListPods lists the UIDs of existing pod cgroups.
	ListPods(ctx context.Context) ([]types.UID, error)
	// UpdateQoS sizes the QoS parents for the active pods.
	UpdateQoS(ctx context.Context, pods []*v1.Pod) error
	// ContainerOOMKills reads the OOM-kill counter of a container's cgroup.
	ContainerOOMKills(pod *v1.Pod, containerID string) (uint64, error)
	// PodUsage and ContainerUsage sample cpu and memory accounting.
	PodUsage(pod *v1.Pod) (*cgroups.Usage, error)
	ContainerUsage(pod *v1.Pod, containerID string) (*cgroups.Usage, error)
}

// qosClass is the pod's QoS class as upstream computes it (D.6).
func qosClass(pod *v1.Pod) v1.PodQOSClass { return qos.Class(pod) }

// ensurePodCgroup creates the pod's cgroup before its sandbox (D.4).
func (w *podWorker) ensurePodCgroup(ctx context.Context) error {
	if cg := w.d.cgroups; cg != nil {
		return cg.EnsurePod(ctx, w.pod)
	}
	return nil
}

// removePodCgroup removes the pod's cgroup once its sandboxes are gone;
// a failure is logged (the stale cleanup at the next start retries).
func (w *podWorker) removePodCgroup(ctx context.Context) {
	if cg := w.d.cgroups; cg != nil {
		if err := cg.RemovePod(ctx, w.uid); err != nil {
			w.log.Warn("removing pod cgroup", "err", err)
		}
	}
}

// updateQoSLocked sizes the QoS parents for the desired pods.
func (a *Agent) updateQoSLocked(ctx context.Context, want map[types.UID]*v1.Pod) {
	if a.cfg.Cgroups == nil {
		return
	}
	pods := make([]*v1.Pod, 0, len(want))
	for _, p := range want {
		switch w := a.workers[p.UID]; {
		case w == nil:
			pods = append(pods, p)
		case !w.rejected:
			pods = append(pods, w.resize.allocatedPod())
		}
	}
	if err := a.cfg.Cgroups.UpdateQoS(ctx, pods); err != nil {
		a.log.Warn("updating QoS cgroups", "err", err)
	}
}

// oomExitCode is 128+SIGKILL, what a process killed by the OOM killer
// exits with.
const oomExitCode = 137

// settleOOM reports an exited container as OOMKilled when the runtime's
// reason is missing or the generic "Error" for exit 137 and the container
// cgroup's OOM-kill counter says so (D.14). Each container ID is checked
// once; a cgroup already removed by the runtime leaves the reason as is.
func (w *podWorker) settleOOM(st *podState) {
	cg := w.d.cgroups
	if cg == nil {
		return
	}
	for i, cs := range st.Containers {
		if cs.State != runtime.ContainerExited || cs.ExitCode != oomExitCode || (cs.Reason != "" && cs.Reason != "Error") {
			continue
		}
		oom, ok := w.marks.oomChecked[cs.ID]
		if !ok {
			n, err := cg.ContainerOOMKills(w.pod, cs.ID)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				w.log.Debug("reading OOM-kill counter", "container", cs.Name, "err", err)
			}
			oom = err == nil && n > 0
			w.marks.oomChecked[cs.ID] = oom
		}
		if oom {
			c := *cs
			c.Reason = reasonOOMKilled
			st.Containers[i] = &c
		}
	}
}

// reasonOOMKilled is the kubelet's reason for a container killed by the
// OOM killer.
const reasonOOMKilled = "OOMKilled"
