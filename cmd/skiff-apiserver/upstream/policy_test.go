package upstream

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// TestDisruptionBudgetOfReplicationController: upstream's replication
// manager runs an RC's pods (and scales them through the scale
// subresource); once they are ready (as a kubelet would report them) the
// disruption controller writes the budget's status: one disruption
// allowed of two pods with minAvailable 1; pods/eviction then evicts one
// pod and refuses the other (429). A budget with both bounds is refused
// with upstream's message.
func TestDisruptionBudgetOfReplicationController(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := startServer(ctx, t)
	labels := map[string]string{"app": "rc"}
	rc := &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Name: "rc"},
		Spec: corev1.ReplicationControllerSpec{Replicas: ptr.To[int32](2), Selector: labels, Template: &corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}},
	}
	if _, err := client.CoreV1().ReplicationControllers("default").Create(ctx, rc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := func() []corev1.Pod {
		list, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=rc"})
		if err != nil {
			t.Fatal(err)
		}
		return list.Items
	}
	waitFor(ctx, t, "the RC's two pods", func() bool { return len(pods()) == 2 })
	for _, p := range pods() {
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
		if _, err := client.CoreV1().Pods("default").UpdateStatus(ctx, &p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	bad := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "bad"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: labels}},
	}
	_, err := client.PolicyV1().PodDisruptionBudgets("default").Create(ctx, bad, metav1.CreateOptions{})
	if want := "minAvailable and maxUnavailable cannot be both set"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("both bounds: %v, want %q", err, want)
	}
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "rc"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels}},
	}
	if _, err := client.PolicyV1().PodDisruptionBudgets("default").Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var status string
	waitFor(ctx, t, "the budget's status: 2 expected, 2 healthy, 1 desired, 1 allowed", func() bool {
		got, err := client.PolicyV1().PodDisruptionBudgets("default").Get(ctx, "rc", metav1.GetOptions{})
		if err != nil {
			return false
		}
		s := got.Status
		status = fmt.Sprintf("%d expected, %d healthy, %d desired, %d allowed", s.ExpectedPods, s.CurrentHealthy, s.DesiredHealthy, s.DisruptionsAllowed)
		return status == "2 expected, 2 healthy, 1 desired, 1 allowed" && s.ObservedGeneration == got.Generation
	})

	// Eviction: the first pod goes, taking the one disruption; the second
	// is refused with upstream's 429 while the budget allows none.
	ready := pods()
	evict := func(name string) error {
		return client.CoreV1().Pods("default").EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}})
	}
	if err := evict(ready[0].Name); err != nil {
		t.Fatalf("evict %s with one disruption allowed: %v", ready[0].Name, err)
	}
	// The eviction records the pod in the budget's disrupted pods; the
	// disruption controller drops it again once it sees the pod being
	// deleted, so either is right here.
	got, err := client.PolicyV1().PodDisruptionBudgets("default").Get(ctx, "rc", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, recorded := got.Status.DisruptedPods[ready[0].Name]
	pod, err := client.CoreV1().Pods("default").Get(ctx, ready[0].Name, metav1.GetOptions{})
	deleting := apierrors.IsNotFound(err) || (err == nil && pod.DeletionTimestamp != nil)
	if !recorded && !deleting {
		t.Errorf("after the eviction the budget's disrupted pods are %v and the pod is not being deleted (%v), want %s recorded or deleted", got.Status.DisruptedPods, err, ready[0].Name)
	}
	err = evict(ready[1].Name)
	if !apierrors.IsTooManyRequests(err) || !strings.Contains(err.Error(), "Cannot evict pod as it would violate the pod's disruption budget.") {
		t.Errorf("evict %s with no disruption allowed: %v, want 429", ready[1].Name, err)
	}
	if _, err := client.CoreV1().Pods("default").Get(ctx, ready[1].Name, metav1.GetOptions{}); err != nil {
		t.Errorf("the pod refused eviction: %v", err)
	}

	scale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "rc", Namespace: "default"}, Spec: autoscalingv1.ScaleSpec{Replicas: 3}}
	if _, err := client.CoreV1().ReplicationControllers("default").UpdateScale(ctx, "rc", scale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "three pods after the scale", func() bool { return len(pods()) == 3 })

	// A v1 delete without a propagation policy orphans the pods, as
	// kube-apiserver's: the RC is kept with the orphan finalizer for the
	// garbage collector.
	if err := client.CoreV1().ReplicationControllers("default").Delete(ctx, "rc", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted, err := client.CoreV1().ReplicationControllers("default").Get(ctx, "rc", metav1.GetOptions{})
	switch {
	case err == nil:
		if !slices.Contains(deleted.Finalizers, metav1.FinalizerOrphanDependents) {
			t.Errorf("deleted RC's finalizers %v, want %q", deleted.Finalizers, metav1.FinalizerOrphanDependents)
		}
	case apierrors.IsNotFound(err): // orphaned already: the pods stay, without their owner
		left := pods()
		if len(left) != 3 || slices.ContainsFunc(left, func(p corev1.Pod) bool { return len(p.OwnerReferences) > 0 }) {
			t.Errorf("RC gone, its pods %d, want 3 orphans", len(left))
		}
	default:
		t.Fatal(err)
	}
}
