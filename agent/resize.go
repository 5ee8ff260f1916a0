package agent

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffnode/skiff/cgroups"
)

// In-place pod resize (InPlacePodVerticalScaling, GA in 1.35): a source's
// new object of a running pod whose container resources changed (an API
// server's pods/resize) is a resize. The agent admits it next to the other
// pods, as the kubelet's allocation manager does; an admitted resize is the
// pod's new allocation, which the worker actuates (resize_apply.go).

// Event reasons of resizes (pkg/kubelet/events).
const (
	EventResizeStarted    = "ResizeStarted"
	EventResizeCompleted  = "ResizeCompleted"
	EventResizeDeferred   = "ResizeDeferred"
	EventResizeInfeasible = "ResizeInfeasible"
	EventResizeError      = "ResizeError"
)

// resizeState is a pod's allocation: the pod object whose container
// resources the agent admitted, and the PodResizePending condition of a
// resize it could not admit. The agent writes it under its lock; the
// worker reads it. Safe for concurrent use.
type resizeState struct {
	mu        sync.Mutex
	allocated *v1.Pod
	// version counts the allocations; accepted is the generation of the
	// last resize admitted (0: none), acceptedVersion its version.
	version, acceptedVersion uint64
	accepted                 int64
	pending                  *v1.PodCondition
}

func newResizeState(pod *v1.Pod) *resizeState { return &resizeState{allocated: pod} }

// allocation returns the allocated pod and its version.
func (r *resizeState) allocation() (*v1.Pod, uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.allocated, r.version
}

// allocatedPod is the pod whose container resources are allocated.
func (r *resizeState) allocatedPod() *v1.Pod {
	p, _ := r.allocation()
	return p
}

// allocationSince returns the allocated pod and its version and, read
// under the same lock, the generation of a resize admitted after version
// seen and whether there is one.
func (r *resizeState) allocationSince(seen uint64) (alloc *v1.Pod, version uint64, accepted int64, newer bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.allocated, r.version, r.accepted, r.acceptedVersion > seen
}

// pendingCondition returns a copy of the PodResizePending condition, nil
// for none.
func (r *resizeState) pendingCondition() *v1.PodCondition {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending == nil {
		return nil
	}
	c := *r.pending
	return &c
}

// isDeferred reports whether a Deferred resize waits to be retried.
func (r *resizeState) isDeferred() bool {
	c := r.pendingCondition()
	return c != nil && c.Reason == v1.PodReasonDeferred
}

// accept makes p's container resources the allocation.
func (r *resizeState) accept(p *v1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.allocated, r.pending = p, nil
	r.version++
	r.accepted, r.acceptedVersion = p.Generation, r.version
}

// clearPending drops the PodResizePending condition (the resize was
// reverted or admitted).
func (r *resizeState) clearPending() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending = nil
}

// setPending sets PodResizePending as the kubelet's status manager does:
// any reason but Infeasible becomes Deferred, the transition time moves
// only with the reason; a retry with the same outcome changes nothing.
// It reports whether the reason or the generation
// changed (the kubelet then records an event).
func (r *resizeState) setPending(f *admitResult, gen int64, now time.Time) bool {
	reason := v1.PodReasonDeferred
	if f.Reason == v1.PodReasonInfeasible {
		reason = v1.PodReasonInfeasible
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.pending
	if old != nil && old.Reason == reason && old.Message == f.Message && old.ObservedGeneration == gen {
		return false // unchanged: the retry leaves the status as it is
	}
	c := &v1.PodCondition{Type: v1.PodResizePending, Status: v1.ConditionTrue, Reason: reason, Message: f.Message,
		ObservedGeneration: gen, LastProbeTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now)}
	if old != nil && old.Reason == reason {
		c.LastTransitionTime = old.LastTransitionTime
	}
	r.pending = c
	return old == nil || old.Reason != reason || old.ObservedGeneration != gen
}

// admitResult is why a resize cannot be allocated now: Reason is the
// admit handler's (Infeasible, or OutOfcpu and the like, which the
// condition shows as Deferred).
type admitResult struct {
	Reason, Message string
}

// resourcesDiffer reports whether any container of desired has other
// resources than in allocated (same pod, another object). Pure.
func resourcesDiffer(desired, allocated *v1.Pod) bool {
	if desired == allocated {
		return false
	}
	want := containerResourcesByName(allocated)
	for _, c := range allContainers(desired) {
		if r, ok := want[c.Name]; ok && !apiequality.Semantic.DeepEqual(r, c.Resources) {
			return true
		}
	}
	return false
}

func containerResourcesByName(pod *v1.Pod) map[string]v1.ResourceRequirements {
	out := map[string]v1.ResourceRequirements{}
	for _, c := range allContainers(pod) {
		out[c.Name] = c.Resources
	}
	return out
}

// withAllocation returns desired with the container resources of
// allocated: desired itself when they are the same, else a copy. Pure.
func withAllocation(desired, allocated *v1.Pod) *v1.Pod {
	if !resourcesDiffer(desired, allocated) {
		return desired
	}
	res := containerResourcesByName(allocated)
	out := desired.DeepCopy()
	for _, c := range allContainers(out) {
		if r, ok := res[c.Name]; ok {
			c.Resources = *r.DeepCopy()
		}
	}
	return out
}

// resizeFailure decides whether desired (a resized pod) can be allocated
// next to others within allocatable: requests beyond allocatable can
// never fit (Infeasible, the 1.34 kubelet's message: newer API servers
// refuse such a resize themselves, PodResizeValidator); requests that do
// not fit next to the other pods wait (the admission's reason, shown as
// Deferred). nil: it fits. Pure.
func resizeFailure(desired *v1.Pod, others []*v1.Pod, allocatable v1.ResourceList) *admitResult {
	if allocatable == nil {
		return nil
	}
	want := cgroups.EffectiveRequests(desired)
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		capacity, ok := allocatable[name]
		req := want[name]
		if ok && amount(name, req) > amount(name, capacity) {
			return &admitResult{Reason: v1.PodReasonInfeasible, Message: fmt.Sprintf(
				"Node didn't have enough capacity: %s, requested: %d, capacity: %d", name, amount(name, req), amount(name, capacity))}
		}
	}
	if f := admissionFailure(desired, others, allocatable); f != nil {
		return &admitResult{Reason: f.Reason, Message: strings.TrimPrefix(f.Message, "Pod was rejected: ")}
	}
	return nil
}

// resizeMessage is the kubelet's resize event message: prefix, then the
// containers' resources and the generation as JSON (events/resize.go).
func resizeMessage(prefix string, pod *v1.Pod, gen int64, errMsg string) string {
	type alloc struct {
		Name      string                  `json:"name"`
		Resources v1.ResourceRequirements `json:"resources,omitempty"`
	}
	summary := struct {
		InitContainers []alloc `json:"initContainers,omitempty"`
		Containers     []alloc `json:"containers,omitempty"`
		Generation     int64   `json:"generation"`
		Error          string  `json:"error,omitempty"`
	}{Generation: gen, Error: errMsg}
	for _, c := range pod.Spec.InitContainers {
		summary.InitContainers = append(summary.InitContainers, alloc{c.Name, c.Resources})
	}
	for _, c := range pod.Spec.Containers {
		summary.Containers = append(summary.Containers, alloc{c.Name, c.Resources})
	}
	b, err := json.Marshal(summary)
	if err != nil {
		return prefix
	}
	return prefix + ": " + string(b)
}

// admittedLocked returns the allocated pods that count for admission: the
// workers' pods that are neither rejected, stopped nor finished, but the
// one of UID except (a.mu held).
func (a *Agent) admittedLocked(except types.UID) []*v1.Pod {
	var admitted []*v1.Pod
	for uid, o := range a.workers {
		if uid == except || o.orphan || o.rejected || o.stopped.Load() {
			continue
		}
		if p := a.status.get(uid); p != nil && (p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed) {
			continue
		}
		admitted = append(admitted, o.resize.allocatedPod())
	}
	return admitted
}

// resizeLocked handles p, a source's new object of w's pod: container
// resources other than the allocation are a resize, admitted next to the
// other pods or left pending; resources back at the allocation clear a
// pending resize (a.mu held).
func (a *Agent) resizeLocked(w *podWorker, p *v1.Pod) {
	if w.orphan || w.rejected || finished(p) {
		return
	}
	if !resourcesDiffer(p, w.resize.allocatedPod()) {
		w.resize.clearPending()
		w.wake()
		return
	}
	f := resizeFailure(p, a.admittedLocked(w.uid), a.cfg.Allocatable)
	if f == nil {
		w.resize.accept(p)
		w.wake()
		a.log.Info("pod resize admitted", "pod", p.Namespace+"/"+p.Name, "generation", p.Generation)
		a.deps.events.PodEvent(p, v1.EventTypeNormal, EventResizeStarted, resizeMessage("Pod resize started", p, p.Generation, ""))
		return
	}
	if w.resize.setPending(f, p.Generation, a.clock.Now()) {
		w.wake()
		reason := EventResizeDeferred
		if f.Reason == v1.PodReasonInfeasible {
			reason = EventResizeInfeasible
		}
		a.log.Info("pod resize pending", "pod", p.Namespace+"/"+p.Name, "reason", f.Reason, "message", f.Message)
		a.deps.events.PodEvent(p, v1.EventTypeWarning, reason, resizeMessage("Pod resize "+f.Reason, p, p.Generation, f.Message))
	}
}

// retryResizesLocked admits the deferred resizes that fit now, in name
// order (a.mu held): other pods may have gone or shrunk.
func (a *Agent) retryResizesLocked() {
	var ws []*podWorker
	for _, w := range a.workers {
		if w.resize.isDeferred() {
			ws = append(ws, w)
		}
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].initial.Name < ws[j].initial.Name })
	for _, w := range ws {
		a.resizeLocked(w, w.given)
	}
}

// allocationFromStatus is the allocation of an API pod that ran before the
// agent started, as its status reports what its containers run with
// (containerStatuses[].resources): a resize still pending then is not
// taken as admitted, as the kubelet's allocation checkpoint keeps it
// (decision 100). pod itself when the status tells nothing else. Pure.
func allocationFromStatus(pod *v1.Pod) *v1.Pod {
	running := map[string]*v1.ResourceRequirements{}
	for _, list := range [][]v1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for i := range list {
			if r := list[i].Resources; r != nil {
				running[list[i].Name] = r
			}
		}
	}
	var out *v1.Pod
	for i, c := range allContainers(pod) {
		r, ok := running[c.Name]
		if !ok || apiequality.Semantic.DeepEqual(*r, c.Resources) {
			continue
		}
		if out == nil {
			out = pod.DeepCopy()
		}
		allContainers(out)[i].Resources = *r.DeepCopy()
	}
	if out == nil {
		return pod
	}
	return out
}
