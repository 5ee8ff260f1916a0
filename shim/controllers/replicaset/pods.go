package replicaset

import (
	"slices"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/skiffnode/skiff/shim/controllers/controllerref"
)

// deletionCostAnnotation orders pods for scale-down (lower cost first).
const deletionCostAnnotation = "controller.kubernetes.io/pod-deletion-cost"

// controllerKind is what ReplicaSets' controller references name.
var controllerKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")

// podFromTemplate is upstream's GetPodFromTemplate: the template's labels,
// annotations, finalizers and spec, generateName "<rs>-", the ReplicaSet
// as controller.
func podFromTemplate(rs *appsv1.ReplicaSet) *corev1.Pod {
	t := rs.Spec.Template.DeepCopy()
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    rs.Name + "-",
			Namespace:       rs.Namespace,
			Labels:          t.Labels,
			Annotations:     t.Annotations,
			Finalizers:      t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{*controllerref.NewControllerRef(rs, controllerKind)},
		},
		Spec: t.Spec,
	}
}

// isActive is upstream's IsPodActive: not finished, not being deleted.
func isActive(p *corev1.Pod) bool {
	return p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed && p.DeletionTimestamp == nil
}

// readyCondition returns the pod's Ready condition, nil if absent.
func readyCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// IsReady is true when the pod's Ready condition is True.
func IsReady(p *corev1.Pod) bool {
	c := readyCondition(p)
	return c != nil && c.Status == corev1.ConditionTrue
}

// IsAvailable is upstream's podutil.IsPodAvailable: ready for at least
// minReadySeconds at now.
func IsAvailable(p *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	c := readyCondition(p)
	if c == nil || c.Status != corev1.ConditionTrue {
		return false
	}
	d := time.Duration(minReadySeconds) * time.Second
	return minReadySeconds == 0 || (!c.LastTransitionTime.IsZero() && c.LastTransitionTime.Add(d).Before(now))
}

// podsToDelete picks the n pods to delete first, upstream's
// ActivePodsWithRanks order (pkg/controller/controller_utils.go) less the
// per-node rank (one node) and the logarithmic time buckets: unscheduled
// before scheduled; Pending, Unknown, then Running; not ready before
// ready; lower deletion cost; ready for a shorter time; more restarts;
// newer before older.
func podsToDelete(pods []*corev1.Pod, n int) []*corev1.Pod {
	sorted := slices.Clone(pods)
	slices.SortStableFunc(sorted, comparePods)
	return sorted[:min(n, len(sorted))]
}

// phaseRank orders the phases for deletion.
var phaseRank = map[corev1.PodPhase]int{corev1.PodPending: 0, corev1.PodUnknown: 1, corev1.PodRunning: 2}

// comparePods is negative if a should be deleted before b.
func comparePods(a, b *corev1.Pod) int {
	if (a.Spec.NodeName == "") != (b.Spec.NodeName == "") {
		return boolFirst(a.Spec.NodeName == "")
	}
	if pa, pb := phaseRank[a.Status.Phase], phaseRank[b.Status.Phase]; pa != pb {
		return pa - pb
	}
	if IsReady(a) != IsReady(b) {
		return boolFirst(!IsReady(a))
	}
	if ca, cb := deletionCost(a), deletionCost(b); ca != cb {
		return cmpInt(ca, cb)
	}
	if IsReady(a) && IsReady(b) {
		ta, tb := readyCondition(a).LastTransitionTime, readyCondition(b).LastTransitionTime
		if !ta.Equal(&tb) {
			return -ta.Compare(tb.Time) // ready more recently first
		}
	}
	if ra, rb := restarts(a), restarts(b); ra != rb {
		return cmpInt(rb, ra)
	}
	return -a.CreationTimestamp.Compare(b.CreationTimestamp.Time)
}

func boolFirst(aFirst bool) int {
	if aFirst {
		return -1
	}
	return 1
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func deletionCost(p *corev1.Pod) int {
	n, err := strconv.Atoi(p.Annotations[deletionCostAnnotation])
	if err != nil {
		return 0
	}
	return n
}

func restarts(p *corev1.Pod) int {
	n := 0
	for _, s := range p.Status.ContainerStatuses {
		n += int(s.RestartCount)
	}
	return n
}

// calculateStatus is upstream's calculateStatus (replica_set_utils.go):
// counts over the claimed active pods and the ReplicaFailure condition
// from the last manageReplicas error.
func calculateStatus(rs *appsv1.ReplicaSet, pods []*corev1.Pod, manageErr error, now time.Time) appsv1.ReplicaSetStatus {
	st := *rs.Status.DeepCopy()
	template := labels.SelectorFromSet(rs.Spec.Template.Labels)
	st.Replicas, st.FullyLabeledReplicas, st.ReadyReplicas, st.AvailableReplicas = int32(len(pods)), 0, 0, 0
	for _, p := range pods {
		if template.Matches(labels.Set(p.Labels)) {
			st.FullyLabeledReplicas++
		}
		if IsReady(p) {
			st.ReadyReplicas++
			if IsAvailable(p, rs.Spec.MinReadySeconds, now) {
				st.AvailableReplicas++
			}
		}
	}
	i := slices.IndexFunc(st.Conditions, func(c appsv1.ReplicaSetCondition) bool { return c.Type == appsv1.ReplicaSetReplicaFailure })
	switch {
	case manageErr != nil && i < 0:
		reason := "FailedCreate"
		if len(pods) > int(ptr.Deref(rs.Spec.Replicas, 1)) {
			reason = "FailedDelete"
		}
		st.Conditions = append(st.Conditions, appsv1.ReplicaSetCondition{Type: appsv1.ReplicaSetReplicaFailure,
			Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now), Reason: reason, Message: manageErr.Error()})
	case manageErr == nil && i >= 0:
		st.Conditions = slices.Delete(st.Conditions, i, i+1)
	}
	return st
}
