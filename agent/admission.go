package agent

import (
	"bufio"
	"fmt"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/skiffnode/skiff/cgroups"
	"github.com/skiffnode/skiff/internal/nodefeatures"
	"github.com/skiffnode/skiff/podspec"
)

// DefaultMaxPods is the kubelet's default --max-pods.
const DefaultMaxPods = 110

// NodeCapacity reads the machine's capacity: cpu (the CPUs this process
// may use), memory (MemTotal of meminfo, normally /proc/meminfo) and pods
// (maxPods) (D.15, H.7).
func NodeCapacity(meminfo string, maxPods int64) (v1.ResourceList, error) {
	mem, err := memTotal(meminfo)
	if err != nil {
		return nil, err
	}
	return v1.ResourceList{
		v1.ResourceCPU:    *resource.NewQuantity(int64(goruntime.NumCPU()), resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(mem, resource.BinarySI),
		v1.ResourcePods:   *resource.NewQuantity(maxPods, resource.DecimalSI),
	}, nil
}

// memTotal parses MemTotal (kB) from a meminfo file, in bytes.
func memTotal(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("memory capacity: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		v, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("memory capacity: MemTotal in %s: %w", path, err)
		}
		return kb * 1024, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("memory capacity: %w", err)
	}
	return 0, fmt.Errorf("memory capacity: no MemTotal in %s", path)
}

// Allocatable is capacity less the reservations and, for memory, the hard
// eviction threshold, as the kubelet computes node allocatable (D.15);
// negative results become zero. Pure.
func Allocatable(capacity v1.ResourceList, reserved ...v1.ResourceList) v1.ResourceList {
	out := capacity.DeepCopy()
	for _, r := range reserved {
		for name, q := range r {
			cur, ok := out[name]
			if !ok {
				continue
			}
			cur.Sub(q)
			if cur.Sign() < 0 {
				cur = *resource.NewQuantity(0, cur.Format)
			}
			out[name] = cur
		}
	}
	return out
}

// osFailure rejects a pod made for another OS than nodeOS, as the
// kubelet's predicate admission does before the resources: a
// kubernetes.io/os label of the pod that names another OS
// (PodOSSelectorNodeLabelDoesNotMatch), or spec.os (PodOSNotSupported).
// nil: the pod may run here. Pure.
func osFailure(pod *v1.Pod, nodeOS string) *podFailure {
	if label, ok := pod.Labels[v1.LabelOSStable]; ok && label != nodeOS {
		return &podFailure{Reason: "PodOSSelectorNodeLabelDoesNotMatch",
			Message: "Pod was rejected: Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"}
	}
	if pod.Spec.OS != nil && string(pod.Spec.OS.Name) != nodeOS {
		return &podFailure{Reason: "PodOSNotSupported", Message: "Pod was rejected: Failed to admit pod as the OS field doesn't match node OS"}
	}
	return nil
}

// admissionFailure checks whether pod fits next to the admitted pods
// within allocatable, in the kubelet's order (pods, cpu, memory), and
// describes the first shortage as the kubelet does: reason "OutOf<name>",
// message "Pod was rejected: Node didn't have enough resource: ...". nil
// means it fits. Pure.
func admissionFailure(pod *v1.Pod, admitted []*v1.Pod, allocatable v1.ResourceList) *podFailure {
	if allocatable == nil {
		return nil
	}
	if capacity, ok := allocatable[v1.ResourcePods]; ok && int64(len(admitted))+1 > capacity.Value() {
		return insufficient(v1.ResourcePods, 1, int64(len(admitted)), capacity.Value())
	}
	want := cgroups.EffectiveRequests(pod)
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		capacity, ok := allocatable[name]
		req := want[name]
		if !ok || req.IsZero() {
			continue
		}
		var used int64
		for _, p := range admitted {
			r := cgroups.EffectiveRequests(p)
			used += amount(name, r[name])
		}
		if used+amount(name, req) > amount(name, capacity) {
			return insufficient(name, amount(name, req), used, amount(name, capacity))
		}
	}
	return nil
}

// amount is the kubelet's unit of a resource in messages: millicores for
// cpu, else the plain value.
func amount(name v1.ResourceName, q resource.Quantity) int64 {
	if name == v1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

func insufficient(name v1.ResourceName, requested, used, capacity int64) *podFailure {
	msg := fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d", name, requested, used, capacity)
	return &podFailure{Reason: "OutOf" + string(name), Message: "Pod was rejected: " + msg}
}

// admitLocked decides, before w runs, whether its pod fits next to the
// pods already admitted that have not finished; a rejected pod fails at
// once (phase Failed) and never gets a sandbox. A terminating pod counts
// until its containers and sandboxes are stopped, not until they are
// removed (the kubelet's filterOutInactivePods). Running pods are not
// touched.
func (a *Agent) admitLocked(w *podWorker) {
	admitted := a.admittedLocked(w.uid)
	// The kubelet's order: sysctls, the OS, resources, host ports, AppArmor, the
	// declared node features, then the others (node shutdown); skiff's
	// own allow-list of API pod fields comes before the features.
	f := a.deps.security.sysctlFailure(w.initial)
	if f == nil {
		f = osFailure(w.initial, goruntime.GOOS)
	}
	if f == nil {
		f = admissionFailure(w.resize.allocatedPod(), admitted, a.cfg.Allocatable)
	}
	if f == nil {
		f = hostPortsFailure(w.initial, listedPods(a.desired(), admitted))
	}
	if f == nil {
		f = a.deps.security.appArmorFailure(w.initial)
	}
	if f == nil {
		f = unsupportedFieldsFailure(w.initial, a.running[w.uid])
	}
	if f == nil {
		f = declaredFeaturesFailure(w.initial, a.cfg.DeclaredFeatures)
	}
	if f == nil {
		f = a.admitByOthers(w.initial)
	}
	if f == nil {
		return
	}
	w.rejected, w.failure = true, f
	w.log.Warn("pod rejected", "reason", f.Reason, "message", f.Message)
	w.event("", v1.EventTypeWarning, f.Reason, strings.TrimPrefix(f.Message, "Pod was rejected: "))
}

// declaredFeaturesFailure rejects a pod that needs a node feature the
// node does not declare in node.status.declaredFeatures, as the kubelet's
// declaredFeaturesAdmitHandler (a RestartAllContainers restart rule needs
// RestartAllContainersOnContainerExits, say). nil: none needed. Pure.
func declaredFeaturesFailure(pod *v1.Pod, declared *nodefeatures.Set) *podFailure {
	missing, err := declared.MissingForPod(pod)
	switch {
	case err != nil:
		return &podFailure{Reason: "PodFeatureUnsupported", Message: "Pod was rejected: Failed to infer pod's feature requirements: " + err.Error()}
	case len(missing) > 0:
		return &podFailure{Reason: "PodFeatureUnsupported",
			Message: "Pod was rejected: Pod requires node features that are not available: " + strings.Join(missing, ", ")}
	}
	return nil
}

// checkUpdateFeatures records, as the kubelet does, a warning event on a
// pod whose update (old to updated) needs node features the node does not
// declare; the update is applied all the same (the API server's
// NodeDeclaredFeatureValidator refuses such updates before they get here).
func (a *Agent) checkUpdateFeatures(old, updated *v1.Pod) {
	if old == nil {
		return
	}
	missing, err := a.cfg.DeclaredFeatures.MissingForUpdate(old, updated)
	if err != nil {
		a.log.Error("pod update's node features", "pod", updated.Namespace+"/"+updated.Name, "err", err)
		return
	}
	if len(missing) > 0 {
		list := strings.Join(missing, ", ")
		a.log.Error("pod requires node features that are not available", "pod", updated.Namespace+"/"+updated.Name, "missingFeatures", list)
		a.deps.events.PodEvent(updated, v1.EventTypeWarning, EventFailedNodeDeclaredFeaturesCheck, "Pod requires node features that are not available: "+list)
	}
}

// unsupportedFieldsFailure rejects an API pod that sets fields skiff does
// not implement (podspec.UnsupportedAPIPodFields), so that none is ignored
// silently: reason PodFeatureUnsupported, the fields named. Static pods
// were checked when their file was read; an API pod that already runs
// here (started by an older skiff) is left running. nil: admitted. Pure.
func unsupportedFieldsFailure(pod *v1.Pod, running bool) *podFailure {
	if running || isStaticPod(pod) || pod.Annotations[configSourceAnnotation] == "" {
		return nil
	}
	errs := podspec.UnsupportedAPIPodFields(pod)
	if len(errs) == 0 {
		return nil
	}
	paths := make([]string, 0, len(errs))
	for _, e := range errs {
		paths = append(paths, e.Field)
	}
	return &podFailure{Reason: "PodFeatureUnsupported",
		Message: "Pod was rejected: Pod uses fields this node does not implement: " + strings.Join(paths, ", ") + " (not supported by skiff yet)"}
}
