package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiffnode/skiff/runtime"
)

// annotationResources holds, as JSON, the resources a container was
// created with: what runs, for a worker that did not create it.
const annotationResources = "io.skiff.container.resources"

// containerResize is a running container whose resources are not its
// allocation yet.
type containerResize struct {
	Container *runtime.ContainerStatus
	// Old is what the container runs with, Want its allocation.
	Old, Want v1.ResourceRequirements
	// Call: what the runtime applies changes; else only what it does not
	// apply changed (a memory request, without a memory throttling
	// factor), and nothing is called.
	Call bool
}

// resizeRestartMessage is the Killing message of a container restarted
// because its resizePolicy says RestartContainer for a resource that
// changed (the kubelet's computePodResizeAction).
func resizeRestartMessage(name string) string {
	return fmt.Sprintf("Container %s resize requires restart", name)
}

// planResize compares each running container (but those in skip) with
// its allocation in pod: a change of a resource whose resizePolicy is
// RestartContainer restarts the container, any other change is made in
// place. A container whose running resources are unknown (created by a
// skiff without the annotation) is set to its allocation once, in place.
// Pure.
func planResize(pod *v1.Pod, latest map[string]*runtime.ContainerStatus, x planExtras, skip map[string]bool) (resizes []containerResize, restarts []unhealthyKill) {
	if x.Actuated == nil {
		return nil, nil
	}
	for _, c := range allContainers(pod) {
		cs := latest[c.Name]
		if cs == nil || cs.State != runtime.ContainerRunning || skip[cs.ID] {
			continue
		}
		old, known := x.Actuated(cs)
		if !known {
			resizes = append(resizes, containerResize{Container: cs, Old: c.Resources, Want: c.Resources, Call: true})
			continue
		}
		if apiequality.Semantic.DeepEqual(old, c.Resources) {
			continue
		}
		cpu := changed(old, c.Resources, v1.ResourceCPU)
		mem := changed(old, c.Resources, v1.ResourceMemory)
		if (cpu && resizePolicy(c, v1.ResourceCPU) == v1.RestartContainer) || (mem && resizePolicy(c, v1.ResourceMemory) == v1.RestartContainer) {
			restarts = append(restarts, unhealthyKill{Container: cs, Message: resizeRestartMessage(c.Name), Restart: true})
			continue
		}
		call := !reflect.DeepEqual(x.Limits.of(old), x.Limits.of(c.Resources))
		resizes = append(resizes, containerResize{Container: cs, Old: old, Want: c.Resources, Call: call})
	}
	return resizes, restarts
}

// changed reports whether the request or limit of name differs.
func changed(a, b v1.ResourceRequirements, name v1.ResourceName) bool {
	return !quantityEqual(a.Requests, b.Requests, name) || !quantityEqual(a.Limits, b.Limits, name)
}

func quantityEqual(a, b v1.ResourceList, name v1.ResourceName) bool {
	x, okA := a[name]
	y, okB := b[name]
	return okA == okB && x.Cmp(y) == 0
}

// resizePolicy is c's restart policy for resource name (default
// NotRequired).
func resizePolicy(c *v1.Container, name v1.ResourceName) v1.ResourceResizeRestartPolicy {
	for _, p := range c.ResizePolicy {
		if p.ResourceName == name {
			return p.RestartPolicy
		}
	}
	return v1.NotRequired
}

// actuated returns what running container cs runs with: what the worker
// set last, else what it was created with (its annotation).
func (w *podWorker) actuated(cs *runtime.ContainerStatus) (v1.ResourceRequirements, bool) {
	if r, ok := w.marks.actuated[cs.ID]; ok {
		return r, true
	}
	raw, ok := cs.Annotations[annotationResources]
	if !ok {
		return v1.ResourceRequirements{}, false
	}
	var r v1.ResourceRequirements
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		return v1.ResourceRequirements{}, false
	}
	return r, true
}

// takeAllocation notes a resize the agent admitted since the worker last
// looked: PodResizeInProgress is set, at the resize's generation.
func (w *podWorker) takeAllocation(version uint64, gen int64, accepted bool) {
	w.allocVersion = version
	if !accepted {
		return
	}
	now := metav1.NewTime(w.d.clock.Now())
	w.inProgress = &v1.PodCondition{Type: v1.PodResizeInProgress, Status: v1.ConditionTrue,
		ObservedGeneration: gen, LastProbeTime: now, LastTransitionTime: now}
}

// applyResize actuates the in-place resizes: the pod cgroup grows to
// cover both the old and the new values, the containers change, and the
// pod cgroup takes its new values (so that no child ever exceeds its
// parent). A memory limit below what a container uses is refused, as the
// kubelet does. Once nothing is left to actuate (restarting: a container
// is being restarted for its resize), PodResizeInProgress is cleared and
// ResizeCompleted recorded. On failure it returns when to try again.
func (w *podWorker) applyResize(ctx context.Context, rs []containerResize, restarting bool) (retry time.Duration) {
	if len(rs) > 0 {
		if err := w.resizeContainers(ctx, rs); err != nil {
			if w.inProgress == nil {
				// No resize was asked for: only containers of an older
				// skiff were being set to what they should run with. Not
				// retried, and no condition.
				w.log.Warn("setting container resources", "err", err)
				for _, r := range rs {
					w.marks.actuated[r.Container.ID] = r.Want
				}
				return 0
			}
			w.resizeFailed(err)
			return w.retryDelay()
		}
		for _, r := range rs {
			w.marks.actuated[r.Container.ID] = r.Want
		}
	}
	if w.inProgress != nil && !restarting {
		w.event("", v1.EventTypeNormal, EventResizeCompleted, resizeMessage("Pod resize completed", w.pod, w.inProgress.ObservedGeneration, ""))
		w.log.Info("pod resize completed", "generation", w.inProgress.ObservedGeneration)
		w.inProgress = nil
	}
	return 0
}

// resizeContainers makes the runtime calls of applyResize.
func (w *podWorker) resizeContainers(ctx context.Context, rs []containerResize) error {
	var calls []containerResize
	for _, r := range rs {
		if r.Call {
			calls = append(calls, r)
		}
	}
	if len(calls) == 0 {
		return nil
	}
	if err := w.checkMemoryDecrease(calls); err != nil {
		return err
	}
	cg := w.d.cgroups
	if cg != nil {
		if err := cg.EnsurePod(ctx, grownPod(w.pod, calls)); err != nil {
			return fmt.Errorf("resize pod cgroup: %w", err)
		}
	}
	for _, r := range calls {
		res := w.d.limits.of(r.Want)
		if err := w.d.rt.UpdateContainerResources(ctx, r.Container.ID, res); err != nil {
			return fmt.Errorf("resize container %s: %w", r.Container.Name, err)
		}
		w.log.Info("container resized", "container", r.Container.Name, "cpuShares", res.CPUShares, "cpuQuota", res.CPUQuota, "memoryLimit", res.MemoryLimit)
	}
	if cg != nil {
		if err := cg.EnsurePod(ctx, w.pod); err != nil {
			return fmt.Errorf("resize pod cgroup: %w", err)
		}
	}
	return nil
}

// checkMemoryDecrease refuses a container memory limit set or lowered
// below the container's memory usage (validateMemoryResizeAction).
func (w *podWorker) checkMemoryDecrease(calls []containerResize) error {
	cg := w.d.cgroups
	if cg == nil {
		return nil
	}
	var errs []string
	for _, r := range calls {
		want, old := w.d.limits.of(r.Want).MemoryLimit, w.d.limits.of(r.Old).MemoryLimit
		if want == 0 || (old != 0 && want >= old) {
			continue
		}
		u, err := cg.ContainerUsage(w.pod, r.Container.ID)
		switch {
		case err != nil:
			errs = append(errs, fmt.Sprintf("missing container %q memory usage", r.Container.Name))
		case u.MemoryUsageBytes >= uint64(want):
			errs = append(errs, fmt.Sprintf("attempting to set container %q memory limit (%d) below current usage (%d)", r.Container.Name, want, u.MemoryUsageBytes))
		}
	}
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errors.New("cannot decrease memory limits: " + errs[0])
	default:
		return errors.New("cannot decrease memory limits: [" + strings.Join(errs, ", ") + "]")
	}
}

// resizeFailed shows a failed actuation as PodResizeInProgress with
// reason Error, and records ResizeError when that changed the condition.
// The resize is tried again at the next sync.
func (w *podWorker) resizeFailed(err error) {
	w.log.Warn("resizing pod", "err", err)
	gen := w.pod.Generation
	if w.inProgress != nil {
		gen = w.inProgress.ObservedGeneration
	}
	msg := err.Error()
	if c := w.inProgress; c != nil && c.Reason == v1.PodReasonError && c.Message == msg {
		return
	}
	now := metav1.NewTime(w.d.clock.Now())
	since := now
	if c := w.inProgress; c != nil && c.Reason == v1.PodReasonError {
		since = c.LastTransitionTime // the reason holds: only the message moved
	}
	w.inProgress = &v1.PodCondition{Type: v1.PodResizeInProgress, Status: v1.ConditionTrue, Reason: v1.PodReasonError,
		Message: msg, ObservedGeneration: gen, LastProbeTime: now, LastTransitionTime: since}
	w.event("", v1.EventTypeWarning, EventResizeError, resizeMessage("Pod resize error", w.pod, gen, msg))
}

// grownPod is pod with each container of calls at the larger of its old
// and wanted cpu and memory (a missing limit being the largest). Pure.
func grownPod(pod *v1.Pod, calls []containerResize) *v1.Pod {
	out := pod.DeepCopy()
	byName := map[string]containerResize{}
	for _, r := range calls {
		byName[r.Container.Name] = r
	}
	for _, c := range allContainers(out) {
		r, ok := byName[c.Name]
		if !ok {
			continue
		}
		c.Resources = v1.ResourceRequirements{
			Requests: larger(r.Old.Requests, r.Want.Requests, false),
			Limits:   larger(r.Old.Limits, r.Want.Limits, true),
		}
	}
	return out
}

// larger is the per-resource maximum of cpu and memory in a and b; for
// limits, a resource missing from either is unlimited, so missing.
func larger(a, b v1.ResourceList, limits bool) v1.ResourceList {
	out := v1.ResourceList{}
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		x, okA := a[name]
		y, okB := b[name]
		switch {
		case limits && (!okA || !okB):
		case !okA && !okB:
		case x.Cmp(y) >= 0 && okA:
			out[name] = x.DeepCopy()
		default:
			out[name] = y.DeepCopy()
		}
	}
	return out
}

// resizeConditions are the pod's PodResizePending and PodResizeInProgress
// conditions.
func (w *podWorker) resizeConditions() []v1.PodCondition {
	var out []v1.PodCondition
	if c := w.resize.pendingCondition(); c != nil {
		out = append(out, *c)
	}
	if w.inProgress != nil {
		out = append(out, *w.inProgress)
	}
	return out
}

// statusResources sets allocatedResources (the allocation's requests) and
// resources (what a running container runs with, else its allocation) of
// each status of a container the runtime has, as the kubelet does (a
// container not created yet gets neither). Pure but for actuated.
func statusResources(containers []*v1.Container, statuses []v1.ContainerStatus, latest map[string]*runtime.ContainerStatus, actuated func(*runtime.ContainerStatus) (v1.ResourceRequirements, bool)) {
	for i := range statuses {
		s := &statuses[i]
		var c *v1.Container
		for _, x := range containers {
			if x.Name == s.Name {
				c = x
			}
		}
		cs := latest[s.Name]
		if c == nil || cs == nil {
			continue
		}
		res := c.Resources.DeepCopy()
		if cs.State == runtime.ContainerRunning && actuated != nil {
			if r, ok := actuated(cs); ok {
				res = r.DeepCopy()
			}
		}
		s.Resources = res
		s.AllocatedResources = c.Resources.Requests.DeepCopy()
	}
}

// resourcesAnnotation is the JSON of r for annotationResources.
func resourcesAnnotation(r v1.ResourceRequirements) string {
	b, err := json.Marshal(v1.ResourceRequirements{Requests: r.Requests, Limits: r.Limits})
	if err != nil {
		return ""
	}
	return string(b)
}

// adoptAllocation makes alloc the allocation of a pod that ran before the
// agent started (before the worker runs; see allocationFromStatus).
func (w *podWorker) adoptAllocation(alloc *v1.Pod) {
	if alloc == w.pod {
		return
	}
	w.resize = newResizeState(alloc)
	w.pod = withAllocation(w.desired, alloc)
}
