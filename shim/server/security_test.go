package server

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/skiffnode/skiff/shim/pki"
)

// TestShimSecurity (issue 17 security): the node identity of
// --node-name can do what a kubelet may (Node authorizer + NodeRestriction)
// and nothing more, another node's identity cannot touch the first node's
// objects, anonymous requests get 401, the admin may do everything.
func TestShimSecurity(t *testing.T) {
	s, cfg, admin := startShimWith(t, Options{NodeName: "node-a"})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	nodeA := nodeClient(t, s.NodeKubeconfig)
	bundle, err := pki.EnsureBundle(filepath.Dir(s.Kubeconfig), nil)
	if err != nil {
		t.Fatal(err)
	}
	otherPath, err := pki.EnsureNodeKubeconfig(t.TempDir(), s.URL, bundle, "node-b")
	if err != nil {
		t.Fatal(err)
	}
	nodeB := nodeClient(t, otherPath)
	forbidden := func(t *testing.T, what string, err error) {
		t.Helper()
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s: %v, want 403", what, err)
		}
		t.Logf("%s: %v", what, err)
	}
	ok := func(t *testing.T, what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	t.Run("17-sec-anonymous-401", func(t *testing.T) {
		anon := kubernetes.NewForConfigOrDie(rest.AnonymousClientConfig(cfg))
		_, err := anon.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
		if !apierrors.IsUnauthorized(err) {
			t.Errorf("anonymous create: %v, want 401", err)
		}
	})

	var node *corev1.Node
	t.Run("17-sec-node-registers", func(t *testing.T) {
		node, err = nodeA.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a",
			Labels: map[string]string{"kubernetes.io/hostname": "node-a"}}}, metav1.CreateOptions{})
		ok(t, "create own node", err)
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
		node, err = nodeA.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
		ok(t, "own node status", err)
		_, err = nodeA.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
		ok(t, "get own node", err)
		_, err = nodeA.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		forbidden(t, "list nodes", err)
		_, err = nodeA.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-c"}}, metav1.CreateOptions{})
		forbidden(t, "create another node", err)
		tainted := node.DeepCopy()
		tainted.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}
		_, err = nodeA.CoreV1().Nodes().Update(ctx, tainted, metav1.UpdateOptions{})
		forbidden(t, "change own taints", err)
		forbidden(t, "delete own node", nodeA.CoreV1().Nodes().Delete(ctx, "node-a", metav1.DeleteOptions{}))
	})

	t.Run("17-sec-node-lease", func(t *testing.T) {
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-a"},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("node-a"), LeaseDurationSeconds: ptr.To[int32](40)}}
		leases := nodeA.CoordinationV1().Leases(corev1.NamespaceNodeLease)
		lease, err := leases.Create(ctx, lease, metav1.CreateOptions{})
		ok(t, "create own lease", err)
		lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
		_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
		ok(t, "renew own lease", err)
		_, err = leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-x"}}, metav1.CreateOptions{})
		forbidden(t, "create another lease", err)
		_, err = nodeA.CoordinationV1().Leases("default").Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, metav1.CreateOptions{})
		forbidden(t, "lease outside kube-node-lease", err)
	})

	t.Run("17-sec-other-node-cannot-touch", func(t *testing.T) {
		_, err := nodeB.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
		forbidden(t, "get node-a", err)
		_, err = nodeB.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
		forbidden(t, "update node-a status", err)
		patch := []byte(`{"metadata":{"labels":{"x":"y"}}}`)
		_, err = nodeB.CoreV1().Nodes().Patch(ctx, "node-a", types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		forbidden(t, "patch node-a", err)
		leases := nodeB.CoordinationV1().Leases(corev1.NamespaceNodeLease)
		_, err = leases.Get(ctx, "node-a", metav1.GetOptions{})
		forbidden(t, "get node-a's lease", err)
		_, err = leases.Patch(ctx, "node-a", types.MergePatchType, []byte(`{"spec":{"holderIdentity":"node-b"}}`), metav1.PatchOptions{})
		forbidden(t, "patch node-a's lease", err)
		forbidden(t, "delete node-a's lease", leases.Delete(ctx, "node-a", metav1.DeleteOptions{}))
	})

	// The admin's objects: a namespace, secrets, a pod on each node.
	ns := "sec"
	_, err = admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	ok(t, "admin namespace", err)
	for _, name := range []string{"used", "unused"} {
		_, err = admin.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		ok(t, "admin secret", err)
	}
	web := testPod("web", "node-a")
	web.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "used"}}}}
	web, err = admin.CoreV1().Pods(ns).Create(ctx, web, metav1.CreateOptions{})
	ok(t, "admin pod on node-a", err)
	_, err = admin.CoreV1().Pods(ns).Create(ctx, testPod("theirs", "node-b"), metav1.CreateOptions{})
	ok(t, "admin pod on node-b", err)

	t.Run("17-sec-node-pods", func(t *testing.T) {
		pods := nodeA.CoreV1().Pods("")
		list, err := pods.List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=node-a"})
		ok(t, "list own pods", err)
		if len(list.Items) != 1 || list.Items[0].Name != "web" {
			t.Fatalf("own pods: %d", len(list.Items))
		}
		w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=node-a", ResourceVersion: list.ResourceVersion})
		ok(t, "watch own pods", err)
		defer w.Stop()
		_, err = pods.List(ctx, metav1.ListOptions{})
		forbidden(t, "list all pods", err)
		_, err = pods.List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=node-b"})
		forbidden(t, "list node-b's pods", err)
		_, err = nodeA.CoreV1().Pods(ns).Get(ctx, "web", metav1.GetOptions{})
		ok(t, "get own pod", err)
		_, err = nodeA.CoreV1().Pods(ns).Get(ctx, "theirs", metav1.GetOptions{})
		forbidden(t, "get node-b's pod", err)

		status := []byte(`{"status":{"phase":"Running"}}`)
		_, err = nodeA.CoreV1().Pods(ns).Patch(ctx, "web", types.StrategicMergePatchType, status, metav1.PatchOptions{}, "status")
		ok(t, "own pod status", err)
		if ev := nextEvent(t, w); ev.Type != watch.Modified || ev.Object.(*corev1.Pod).Status.Phase != corev1.PodRunning {
			t.Errorf("watch after status: %s", ev.Type)
		}
		_, err = nodeA.CoreV1().Pods(ns).Patch(ctx, "theirs", types.StrategicMergePatchType, status, metav1.PatchOptions{}, "status")
		forbidden(t, "node-b's pod status", err)
		forbidden(t, "delete node-b's pod", nodeA.CoreV1().Pods(ns).Delete(ctx, "theirs", metav1.DeleteOptions{}))
		_, err = nodeA.CoreV1().Pods(ns).Update(ctx, web, metav1.UpdateOptions{})
		forbidden(t, "update own pod spec", err)
	})

	t.Run("17-sec-node-secrets", func(t *testing.T) {
		_, err := nodeA.CoreV1().Secrets(ns).Get(ctx, "used", metav1.GetOptions{})
		ok(t, "secret of own pod", err)
		// skiff's agent reads it as a list and watch by name (apiclient.ObjectInformer).
		_, err = nodeA.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=used"})
		ok(t, "list secret of own pod by name", err)
		_, err = nodeA.CoreV1().Secrets(ns).Get(ctx, "unused", metav1.GetOptions{})
		forbidden(t, "unreferenced secret", err)
		_, err = nodeA.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
		forbidden(t, "list secrets", err)
		_, err = nodeB.CoreV1().Secrets(ns).Get(ctx, "used", metav1.GetOptions{})
		forbidden(t, "node-b reads node-a's pod's secret", err)
	})

	t.Run("17-sec-node-mirror-pods", func(t *testing.T) {
		mirror := testPod("static-node-a", "node-a")
		mirror.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "hash"}
		mirror.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "node-a", UID: node.UID, Controller: ptr.To(true)}}
		created, err := nodeA.CoreV1().Pods(ns).Create(ctx, mirror, metav1.CreateOptions{})
		ok(t, "own mirror pod", err)

		other := mirror.DeepCopy()
		other.Name, other.Spec.NodeName = "static-node-b", "node-b"
		_, err = nodeA.CoreV1().Pods(ns).Create(ctx, other, metav1.CreateOptions{})
		forbidden(t, "mirror pod for node-b", err)
		plain := testPod("plain", "node-a")
		_, err = nodeA.CoreV1().Pods(ns).Create(ctx, plain, metav1.CreateOptions{})
		forbidden(t, "ordinary pod", err)
		withSecret := mirror.DeepCopy()
		withSecret.Name = "static-secret"
		withSecret.Spec.Volumes = web.Spec.Volumes
		_, err = nodeA.CoreV1().Pods(ns).Create(ctx, withSecret, metav1.CreateOptions{})
		forbidden(t, "mirror pod referencing a secret", err)

		zero := int64(0)
		err = nodeA.CoreV1().Pods(ns).Delete(ctx, created.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero,
			Preconditions: &metav1.Preconditions{UID: &created.UID}})
		ok(t, "delete own mirror pod", err)
	})

	t.Run("17-sec-node-events", func(t *testing.T) {
		ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "web.1"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "web", UID: web.UID},
			Reason:         "Started", Type: corev1.EventTypeNormal}
		_, err := nodeA.CoreV1().Events(ns).Create(ctx, ev, metav1.CreateOptions{})
		ok(t, "create event", err)
		_, err = nodeA.CoreV1().Events(ns).Patch(ctx, "web.1", types.StrategicMergePatchType, []byte(`{"count":2}`), metav1.PatchOptions{})
		ok(t, "patch event", err)
		// Upstream's NodeRules grant events.k8s.io too since 1.37
		// (bootstrappolicy/policy.go).
		v1ev := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "web.2"}, EventTime: metav1.NowMicro(),
			Regarding: ev.InvolvedObject, Reason: "Started", Action: "Start", Type: corev1.EventTypeNormal,
			ReportingController: "skiff.io/kubelet", ReportingInstance: "node-a"}
		_, err = nodeA.EventsV1().Events(ns).Create(ctx, v1ev, metav1.CreateOptions{})
		ok(t, "create events.k8s.io event", err)
		_, err = nodeA.EventsV1().Events(ns).Patch(ctx, "web.1", types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{})
		ok(t, "patch events.k8s.io event", err)
		err = nodeA.EventsV1().Events(ns).Delete(ctx, "web.1", metav1.DeleteOptions{})
		forbidden(t, "delete events.k8s.io event", err)
	})

	t.Run("17-sec-node-refused", func(t *testing.T) {
		_, err := nodeA.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "mine"}}, metav1.CreateOptions{})
		forbidden(t, "create namespace", err)
		_, err = nodeA.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{})
		forbidden(t, "create configmap", err)
		_, err = nodeA.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}}, metav1.CreateOptions{})
		forbidden(t, "create secret", err)
		// Discovery and version stay readable (upstream's system:discovery).
		_, err = nodeA.Discovery().ServerVersion()
		ok(t, "version", err)
	})

	t.Run("17-sec-admin-everything", func(t *testing.T) {
		_, err := admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		ok(t, "list nodes", err)
		_, err = admin.CoreV1().Secrets(ns).Get(ctx, "unused", metav1.GetOptions{})
		ok(t, "get any secret", err)
		ok(t, "delete node-a's lease", admin.CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(ctx, "node-a", metav1.DeleteOptions{}))
		_, err = admin.CoreV1().Pods(ns).Create(ctx, testPod("plain", "node-b"), metav1.CreateOptions{})
		ok(t, "create an ordinary pod", err)
		// No scheduler: a pod without a node is placed on the shim's node
		// at create (singlenode), one naming another scheduler is not.
		placed, err := admin.CoreV1().Pods(ns).Create(ctx, testPod("unplaced", ""), metav1.CreateOptions{})
		ok(t, "create a pod without a node", err)
		if placed.Spec.NodeName != "node-a" {
			t.Errorf("pod without a node placed on %q, want node-a", placed.Spec.NodeName)
		}
		custom := testPod("custom-scheduler", "")
		custom.Spec.SchedulerName = "my-scheduler"
		custom, err = admin.CoreV1().Pods(ns).Create(ctx, custom, metav1.CreateOptions{})
		ok(t, "create a pod for another scheduler", err)
		if custom.Spec.NodeName != "" {
			t.Errorf("pod for my-scheduler placed on %q", custom.Spec.NodeName)
		}
		ok(t, "delete node-a", admin.CoreV1().Nodes().Delete(ctx, "node-a", metav1.DeleteOptions{}))
	})
}

// nodeClient is a client with the credentials of kubeconfig.
func nodeClient(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 100, 100 // no client-side throttling in the test
	return kubernetes.NewForConfigOrDie(cfg)
}

// testPod is a minimal valid pod bound to node.
func testPod(name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{NodeName: node,
			Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36", Command: []string{"sleep", "3600"}}}},
	}
}
