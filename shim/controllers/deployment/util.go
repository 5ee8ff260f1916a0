package deployment

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strconv"

	"github.com/davecgh/go-spew/spew"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
)

// Annotations and labels of upstream's pkg/controller/deployment/util.
const (
	RevisionAnnotation        = "deployment.kubernetes.io/revision"
	desiredReplicasAnnotation = "deployment.kubernetes.io/desired-replicas"
	maxReplicasAnnotation     = "deployment.kubernetes.io/max-replicas"
	revisionHistoryAnnotation = "deployment.kubernetes.io/revision-history"
	// HashLabel is appsv1.DefaultDeploymentUniqueLabelKey.
	HashLabel = appsv1.DefaultDeploymentUniqueLabelKey
)

// skipCopy are the deployment annotations not copied to ReplicaSets.
var skipCopy = map[string]bool{
	corev1.LastAppliedConfigAnnotation: true, RevisionAnnotation: true, revisionHistoryAnnotation: true,
	desiredReplicasAnnotation: true, maxReplicasAnnotation: true, "deprecated.deployment.rollback.to": true,
}

// ComputeHash is upstream's controller.ComputeHash: FNV-32a of the
// template as printed by spew (hashutil.DeepHashObject), then the
// collision count, encoded with rand.SafeEncodeString.
func ComputeHash(template *corev1.PodTemplateSpec, collisionCount *int32) string {
	h := fnv.New32a()
	printer := spew.ConfigState{Indent: " ", SortKeys: true, DisableMethods: true, SpewKeys: true}
	printer.Fprintf(h, "%#v", *template)
	if collisionCount != nil {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint32(b, uint32(*collisionCount))
		h.Write(b)
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// equalIgnoreHash compares templates without the pod-template-hash label.
func equalIgnoreHash(a, b *corev1.PodTemplateSpec) bool {
	a, b = a.DeepCopy(), b.DeepCopy()
	delete(a.Labels, HashLabel)
	delete(b.Labels, HashLabel)
	return equality.Semantic.DeepEqual(a, b)
}

// byCreation orders oldest first, then by name (ReplicaSetsByCreationTimestamp).
func byCreation(a, b *appsv1.ReplicaSet) int {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Compare(b.CreationTimestamp.Time)
	}
	return compareStrings(a.Name, b.Name)
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// findNewReplicaSet is the oldest ReplicaSet whose template is d's.
func findNewReplicaSet(d *appsv1.Deployment, rss []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	sorted := slices.Clone(rss)
	slices.SortFunc(sorted, byCreation)
	for _, rs := range sorted {
		if equalIgnoreHash(&rs.Spec.Template, &d.Spec.Template) {
			return rs
		}
	}
	return nil
}

// findOldReplicaSets returns every ReplicaSet but the new one.
func findOldReplicaSets(d *appsv1.Deployment, rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	newRS := findNewReplicaSet(d, rss)
	var old []*appsv1.ReplicaSet
	for _, rs := range rss {
		if newRS == nil || rs.UID != newRS.UID {
			old = append(old, rs)
		}
	}
	return old
}

// active keeps the non-nil ReplicaSets with spec.replicas > 0.
func active(rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, rs := range rss {
		if rs != nil && replicas(rs) > 0 {
			out = append(out, rs)
		}
	}
	return out
}

func replicas(rs *appsv1.ReplicaSet) int32 { return ptr.Deref(rs.Spec.Replicas, 1) }

func dReplicas(d *appsv1.Deployment) int32 { return ptr.Deref(d.Spec.Replicas, 1) }

// sum adds f over the non-nil ReplicaSets.
func sum(rss []*appsv1.ReplicaSet, f func(*appsv1.ReplicaSet) int32) int32 {
	var n int32
	for _, rs := range rss {
		if rs != nil {
			n += f(rs)
		}
	}
	return n
}

func statusReplicas(rs *appsv1.ReplicaSet) int32    { return rs.Status.Replicas }
func readyReplicas(rs *appsv1.ReplicaSet) int32     { return rs.Status.ReadyReplicas }
func availableReplicas(rs *appsv1.ReplicaSet) int32 { return rs.Status.AvailableReplicas }

// revision is the ReplicaSet's revision annotation, 0 if none.
func revision(rs *appsv1.ReplicaSet) int64 {
	n, _ := strconv.ParseInt(rs.Annotations[RevisionAnnotation], 10, 64)
	return n
}

func maxRevision(rss []*appsv1.ReplicaSet) int64 {
	var m int64
	for _, rs := range rss {
		m = max(m, revision(rs))
	}
	return m
}

// resolveFenceposts is upstream's ResolveFenceposts: maxSurge rounded up,
// maxUnavailable down, and not both zero.
func resolveFenceposts(d *appsv1.Deployment) (surge, unavailable int32) {
	ru := d.Spec.Strategy.RollingUpdate
	if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || ru == nil {
		return 0, 0
	}
	desired := int(dReplicas(d))
	s, _ := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(ru.MaxSurge, intstr.FromInt32(0)), desired, true)
	u, _ := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(ru.MaxUnavailable, intstr.FromInt32(0)), desired, false)
	if s == 0 && u == 0 {
		u = 1
	}
	return int32(s), int32(u)
}

// maxSurge is upstream's MaxSurge (0 unless RollingUpdate).
func maxSurge(d *appsv1.Deployment) int32 {
	s, _ := resolveFenceposts(d)
	return s
}

// maxUnavailable is upstream's MaxUnavailable, at most spec.replicas.
func maxUnavailable(d *appsv1.Deployment) int32 {
	if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || dReplicas(d) == 0 {
		return 0
	}
	_, u := resolveFenceposts(d)
	return min(u, dReplicas(d))
}

// newRSReplicas is upstream's NewRSNewReplicas: how big the new
// ReplicaSet may be now.
func newRSReplicas(d *appsv1.Deployment, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) int32 {
	if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType {
		return dReplicas(d)
	}
	current := sum(all, replicas)
	maxTotal := dReplicas(d) + maxSurge(d)
	if current >= maxTotal {
		return replicas(newRS)
	}
	return replicas(newRS) + min(maxTotal-current, dReplicas(d)-replicas(newRS))
}

// setReplicasAnnotations sets desired- and max-replicas; true if changed.
func setReplicasAnnotations(rs *appsv1.ReplicaSet, desired, maxReplicas int32) bool {
	changed := false
	for k, v := range map[string]string{desiredReplicasAnnotation: strconv.Itoa(int(desired)), maxReplicasAnnotation: strconv.Itoa(int(maxReplicas))} {
		if rs.Annotations[k] != v {
			if rs.Annotations == nil {
				rs.Annotations = map[string]string{}
			}
			rs.Annotations[k] = v
			changed = true
		}
	}
	return changed
}

// setNewRSAnnotations is upstream's SetNewReplicaSetAnnotations less the
// revision history: d's annotations, the revision if newer, and (for a
// ReplicaSet being created) the replicas annotations.
func setNewRSAnnotations(d *appsv1.Deployment, rs *appsv1.ReplicaSet, newRevision int64, exists bool) bool {
	changed := false
	for k, v := range d.Annotations {
		if skipCopy[k] {
			continue
		}
		if cur, ok := rs.Annotations[k]; ok && cur == v {
			continue
		}
		if rs.Annotations == nil {
			rs.Annotations = map[string]string{}
		}
		rs.Annotations[k] = v
		changed = true
	}
	if revision(rs) < newRevision {
		if rs.Annotations == nil {
			rs.Annotations = map[string]string{}
		}
		rs.Annotations[RevisionAnnotation] = strconv.FormatInt(newRevision, 10)
		changed = true
	}
	if !exists && setReplicasAnnotations(rs, dReplicas(d), dReplicas(d)+maxSurge(d)) {
		changed = true
	}
	return changed
}

// annotatedInt reads an integer annotation.
func annotatedInt(rs *appsv1.ReplicaSet, key string) (int32, bool) {
	v, ok := rs.Annotations[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 32)
	return int32(n), err == nil
}

// isSaturated: the new ReplicaSet has all the replicas, available.
func isSaturated(d *appsv1.Deployment, rs *appsv1.ReplicaSet) bool {
	if rs == nil {
		return false
	}
	desired, ok := annotatedInt(rs, desiredReplicasAnnotation)
	return ok && replicas(rs) == dReplicas(d) && desired == dReplicas(d) && rs.Status.AvailableReplicas == dReplicas(d)
}

// proportion is upstream's GetProportion/getReplicaSetFraction: rs's share
// of toAdd during proportional scaling.
func proportion(rs *appsv1.ReplicaSet, d *appsv1.Deployment, toAdd, added int32) int32 {
	if replicas(rs) == 0 || toAdd == 0 || toAdd == added {
		return 0
	}
	var fraction int32
	if dReplicas(d) == 0 {
		fraction = -replicas(rs)
	} else {
		annotated, ok := annotatedInt(rs, maxReplicasAnnotation)
		if !ok {
			annotated = d.Status.Replicas
		}
		size := float64(replicas(rs)*(dReplicas(d)+maxSurge(d))) / float64(annotated)
		fraction = int32(math.Round(size)) - replicas(rs)
	}
	allowed := toAdd - added
	if toAdd > 0 {
		return min(fraction, allowed)
	}
	return max(fraction, allowed)
}

// condition returns the deployment condition of type t, nil if absent.
func condition(st *appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

// setCondition is upstream's SetDeploymentCondition: no change if status
// and reason are the same; the transition time kept if the status is.
func setCondition(st *appsv1.DeploymentStatus, c appsv1.DeploymentCondition) {
	cur := condition(st, c.Type)
	if cur != nil && cur.Status == c.Status && cur.Reason == c.Reason {
		return
	}
	if cur != nil && cur.Status == c.Status {
		c.LastTransitionTime = cur.LastTransitionTime
	}
	removeCondition(st, c.Type)
	st.Conditions = append(st.Conditions, c)
}

func removeCondition(st *appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) {
	st.Conditions = slices.DeleteFunc(st.Conditions, func(c appsv1.DeploymentCondition) bool { return c.Type == t })
}

func newCondition(t appsv1.DeploymentConditionType, s corev1.ConditionStatus, reason, msg string, now metav1.Time) appsv1.DeploymentCondition {
	return appsv1.DeploymentCondition{Type: t, Status: s, Reason: reason, Message: msg, LastUpdateTime: now, LastTransitionTime: now}
}
