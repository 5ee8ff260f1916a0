package server

import (
	"context"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/skiffnode/skiff/shim/controllers/deployment"
)

// TestDeployments runs `kubectl create deployment` walk-throughs against
// the shim's ReplicaSet and Deployment controllers (checklist J.1, J.2,
// I.68). No agent runs: the test plays the node, marking pods Running and
// Ready through pods/status and finishing graceful deletions.
func TestDeployments(t *testing.T) {
	_, cfg, _ := startShimWith(t, Options{NodeName: "node-a"})
	// client-go's default 5 QPS would throttle the node's polling (gotcha 18).
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 200, 400
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ns := "apps-test"
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	go playNode(ctx, client, ns)
	deps := client.AppsV1().Deployments(ns)

	var firstRS *appsv1.ReplicaSet
	t.Run("J.1 a Deployment gets one ReplicaSet with pod-template-hash and 3 controlled pods", func(t *testing.T) {
		d, err := deps.Create(ctx, newDeployment("nginx", 3), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		hash := deployment.ComputeHash(&d.Spec.Template, nil)
		firstRS = waitReplicaSet(ctx, t, client, ns, "nginx-"+hash)
		if firstRS.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != hash ||
			firstRS.Spec.Selector.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey] != hash ||
			firstRS.Annotations[deployment.RevisionAnnotation] != "1" {
			t.Fatalf("replicaset: %+v", firstRS.ObjectMeta)
		}
		checkControlledBy(t, firstRS.OwnerReferences, "Deployment", d.UID)
		pods := waitPods(ctx, t, client, ns, "app=nginx", 3)
		for _, p := range pods {
			checkControlledBy(t, p.OwnerReferences, "ReplicaSet", firstRS.UID)
			if p.Spec.NodeName != "node-a" || p.GenerateName != firstRS.Name+"-" {
				t.Errorf("pod %s: node %q generateName %q", p.Name, p.Spec.NodeName, p.GenerateName)
			}
		}
	})

	t.Run("J.1 ready pods make the Deployment Available", func(t *testing.T) {
		d := waitRollout(ctx, t, client, ns, "nginx")
		if d.Status.AvailableReplicas != 3 || d.Annotations[deployment.RevisionAnnotation] != "1" ||
			!hasCondition(d, appsv1.DeploymentAvailable, "MinimumReplicasAvailable") ||
			!hasCondition(d, appsv1.DeploymentProgressing, "NewReplicaSetAvailable") {
			t.Fatalf("status: %+v annotations %v", d.Status, d.Annotations)
		}
	})

	t.Run("J.1 scale subresource to 1 deletes 2 pods", func(t *testing.T) {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			scale, err := deps.GetScale(ctx, "nginx", metav1.GetOptions{})
			if err != nil {
				return err
			}
			scale.Spec.Replicas = 1
			_, err = deps.UpdateScale(ctx, "nginx", scale, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		waitPods(ctx, t, client, ns, "app=nginx", 1)
		d := waitRollout(ctx, t, client, ns, "nginx")
		if d.Status.Replicas != 1 || d.Status.AvailableReplicas != 1 {
			t.Fatalf("status after scale: %+v", d.Status)
		}
	})

	t.Run("J.2 an image change rolls out a second ReplicaSet", func(t *testing.T) {
		updateDeployment(ctx, t, client, ns, "nginx", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](3) })
		waitRollout(ctx, t, client, ns, "nginx")
		updateDeployment(ctx, t, client, ns, "nginx", func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Image = "nginx:1.27"
		})
		// maxSurge 25% of 3 rounds up to 1, maxUnavailable down to 0.
		d := waitRolloutChecking(ctx, t, client, ns, "nginx", func(rss []appsv1.ReplicaSet) {
			var spec, available int32
			for _, rs := range rss {
				spec += *rs.Spec.Replicas
				available += rs.Status.AvailableReplicas
			}
			if spec > 4 || available < 3 {
				t.Fatalf("during the rollout: %d replicas (max 4), %d available (min 3)", spec, available)
			}
		})
		rss, err := client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=nginx"})
		if err != nil || len(rss.Items) != 2 {
			t.Fatalf("replicasets: %v %d", err, len(rss.Items))
		}
		for _, rs := range rss.Items {
			want := int32(3)
			if rs.UID == firstRS.UID {
				want = 0
			} else if rs.Annotations[deployment.RevisionAnnotation] != "2" {
				t.Errorf("new replicaset revision %q", rs.Annotations[deployment.RevisionAnnotation])
			}
			if *rs.Spec.Replicas != want || rs.Status.Replicas != want {
				t.Errorf("replicaset %s: spec %d status %d, want %d", rs.Name, *rs.Spec.Replicas, rs.Status.Replicas, want)
			}
		}
		pods := waitPods(ctx, t, client, ns, "app=nginx", 3)
		for _, p := range pods {
			if p.Spec.Containers[0].Image != "nginx:1.27" {
				t.Errorf("pod %s runs %s", p.Name, p.Spec.Containers[0].Image)
			}
		}
		if d.Annotations[deployment.RevisionAnnotation] != "2" || d.Status.UpdatedReplicas != 3 {
			t.Errorf("deployment: %v %+v", d.Annotations, d.Status)
		}
	})

	t.Run("J.2 Recreate stops the old pods before creating new ones", func(t *testing.T) {
		d := newDeployment("recreate", 2)
		d.Spec.Strategy.Type = appsv1.RecreateDeploymentStrategyType
		if _, err := deps.Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitRollout(ctx, t, client, ns, "recreate")
		var oldHash string
		updateDeployment(ctx, t, client, ns, "recreate", func(d *appsv1.Deployment) {
			oldHash = deployment.ComputeHash(&d.Spec.Template, nil)
			d.Spec.Template.Spec.Containers[0].Image = "nginx:1.27"
		})
		newSel := "app=recreate," + appsv1.DefaultDeploymentUniqueLabelKey + "!=" + oldHash
		oldSel := "app=recreate," + appsv1.DefaultDeploymentUniqueLabelKey + "=" + oldHash
		waitUntil(ctx, t, "recreate rollout", func() bool {
			newPods := listPods(ctx, t, client, ns, newSel)
			if len(newPods) > 0 {
				if old := listPods(ctx, t, client, ns, oldSel); len(old) > 0 {
					t.Fatalf("new pods %d while %d old pods remain", len(newPods), len(old))
				}
			}
			markReady(ctx, t, client, ns)
			got, err := deps.Get(ctx, "recreate", metav1.GetOptions{})
			return err == nil && rolledOut(got)
		})
	})

	t.Run("I.68 Foreground deletion waits for ReplicaSets and pods", func(t *testing.T) {
		deleteDeployment(ctx, t, deps, "nginx", metav1.DeletePropagationForeground)
		d, err := deps.Get(ctx, "nginx", metav1.GetOptions{})
		if err == nil && (d.DeletionTimestamp == nil || !slices.Contains(d.Finalizers, metav1.FinalizerDeleteDependents)) {
			t.Fatalf("deployment during foreground deletion: %+v", d.ObjectMeta)
		}
		waitUntil(ctx, t, "nginx and its dependents gone", func() bool {
			_, err := deps.Get(ctx, "nginx", metav1.GetOptions{})
			return apierrors.IsNotFound(err) && len(listRS(ctx, t, client, ns, "app=nginx")) == 0 &&
				len(listPods(ctx, t, client, ns, "app=nginx")) == 0
		})
	})

	t.Run("I.68 Background deletion removes ReplicaSets and pods", func(t *testing.T) {
		deleteDeployment(ctx, t, deps, "recreate", metav1.DeletePropagationBackground)
		waitUntil(ctx, t, "recreate and its dependents gone", func() bool {
			_, err := deps.Get(ctx, "recreate", metav1.GetOptions{})
			return apierrors.IsNotFound(err) && len(listRS(ctx, t, client, ns, "app=recreate")) == 0 &&
				len(listPods(ctx, t, client, ns, "app=recreate")) == 0
		})
	})

	t.Run("I.68 Orphan deletion keeps the ReplicaSet and its pods", func(t *testing.T) {
		if _, err := deps.Create(ctx, newDeployment("orphan", 2), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitRollout(ctx, t, client, ns, "orphan")
		deleteDeployment(ctx, t, deps, "orphan", metav1.DeletePropagationOrphan)
		waitUntil(ctx, t, "orphan gone", func() bool {
			_, err := deps.Get(ctx, "orphan", metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
		var rs appsv1.ReplicaSet
		waitUntil(ctx, t, "replicaset orphaned", func() bool {
			rss := listRS(ctx, t, client, ns, "app=orphan")
			if len(rss) == 1 {
				rs = rss[0]
			}
			return len(rss) == 1 && len(rs.OwnerReferences) == 0
		})
		time.Sleep(time.Second) // the GC and the controller had their chance
		pods := listPods(ctx, t, client, ns, "app=orphan")
		if len(pods) != 2 {
			t.Fatalf("orphaned replicaset's pods: %d", len(pods))
		}
		for _, p := range pods {
			checkControlledBy(t, p.OwnerReferences, "ReplicaSet", rs.UID)
		}
	})
}

// updateDeployment applies change to the current Deployment, retrying on
// conflicts with the controller's status writes.
func updateDeployment(ctx context.Context, t *testing.T, client kubernetes.Interface, ns, name string, change func(*appsv1.Deployment)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(d)
		_, err = client.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// playNode finishes the graceful deletions of ns's pods, as the node
// would once their containers stopped, until ctx ends.
func playNode(ctx context.Context, client kubernetes.Interface, ns string) {
	for ctx.Err() == nil {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err == nil {
			for _, p := range pods.Items {
				if p.DeletionTimestamp != nil {
					_ = client.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0),
						Preconditions: &metav1.Preconditions{UID: &p.UID}})
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// markReady sets every live pod of ns Running and Ready, as its node would.
func markReady(ctx context.Context, t *testing.T, client kubernetes.Interface, ns string) {
	t.Helper()
	for _, p := range listPods(ctx, t, client, ns, "") {
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodRunning {
			continue
		}
		now := metav1.Now()
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}
		if _, err := client.CoreV1().Pods(ns).UpdateStatus(ctx, &p, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			t.Fatalf("mark %s ready: %v", p.Name, err)
		}
	}
}

// waitRollout marks pods ready until the Deployment's rollout is done as
// `kubectl rollout status` sees it, and returns it.
func waitRollout(ctx context.Context, t *testing.T, client kubernetes.Interface, ns, name string) *appsv1.Deployment {
	t.Helper()
	return waitRolloutChecking(ctx, t, client, ns, name, func([]appsv1.ReplicaSet) {})
}

// waitRolloutChecking is waitRollout calling check with the Deployment's
// ReplicaSets (label app=name) at every poll.
func waitRolloutChecking(ctx context.Context, t *testing.T, client kubernetes.Interface, ns, name string, check func([]appsv1.ReplicaSet)) *appsv1.Deployment {
	t.Helper()
	var d *appsv1.Deployment
	waitUntil(ctx, t, "rollout of "+name, func() bool {
		check(listRS(ctx, t, client, ns, "app="+name))
		markReady(ctx, t, client, ns)
		var err error
		d, err = client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && rolledOut(d)
	})
	return d
}

// rolledOut is kubectl's DeploymentStatusViewer's success condition.
func rolledOut(d *appsv1.Deployment) bool {
	st, n := d.Status, *d.Spec.Replicas
	return d.Generation <= st.ObservedGeneration && st.UpdatedReplicas == n && st.Replicas == n &&
		st.AvailableReplicas == n && hasCondition(d, appsv1.DeploymentProgressing, "NewReplicaSetAvailable")
}

func hasCondition(d *appsv1.Deployment, typ appsv1.DeploymentConditionType, reason string) bool {
	return slices.ContainsFunc(d.Status.Conditions, func(c appsv1.DeploymentCondition) bool {
		return c.Type == typ && c.Reason == reason && c.Status == corev1.ConditionTrue
	})
}

func checkControlledBy(t *testing.T, refs []metav1.OwnerReference, kind string, uid types.UID) {
	t.Helper()
	if len(refs) != 1 || refs[0].Kind != kind || refs[0].UID != uid ||
		!ptr.Deref(refs[0].Controller, false) || !ptr.Deref(refs[0].BlockOwnerDeletion, false) {
		t.Errorf("owner references %+v, want one %s %v controller blocking", refs, kind, uid)
	}
}

func waitReplicaSet(ctx context.Context, t *testing.T, client kubernetes.Interface, ns, name string) *appsv1.ReplicaSet {
	t.Helper()
	var rs *appsv1.ReplicaSet
	waitUntil(ctx, t, "replicaset "+name, func() bool {
		var err error
		rs, err = client.AppsV1().ReplicaSets(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil
	})
	return rs
}

// waitPods waits for exactly n pods matching sel, none terminating.
func waitPods(ctx context.Context, t *testing.T, client kubernetes.Interface, ns, sel string, n int) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	waitUntil(ctx, t, "pods "+sel, func() bool {
		pods = listPods(ctx, t, client, ns, sel)
		return len(pods) == n && !slices.ContainsFunc(pods, func(p corev1.Pod) bool { return p.DeletionTimestamp != nil })
	})
	return pods
}

func listPods(ctx context.Context, t *testing.T, client kubernetes.Interface, ns, sel string) []corev1.Pod {
	t.Helper()
	l, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func listRS(ctx context.Context, t *testing.T, client kubernetes.Interface, ns, sel string) []appsv1.ReplicaSet {
	t.Helper()
	l, err := client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func deleteDeployment(ctx context.Context, t *testing.T, deps interface {
	Delete(context.Context, string, metav1.DeleteOptions) error
}, name string, policy metav1.DeletionPropagation) {
	t.Helper()
	if err := deps.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
		t.Fatal(err)
	}
}
