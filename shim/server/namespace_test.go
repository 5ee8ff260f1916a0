package server

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// TestNamespaceLifecycle covers issue 17's namespace behaviour end to end
// on the in-process shim: admission, the registry's Terminating phase and
// /finalize, the namespace controller and the per-namespace objects.
func TestNamespaceLifecycle(t *testing.T) {
	_, cfg, client := startShim(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()

	t.Run("create in a missing namespace is 404", func(t *testing.T) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}
		_, err := client.CoreV1().ConfigMaps("nope").Create(ctx, cm, metav1.CreateOptions{})
		if !apierrors.IsNotFound(err) || err.Error() != `namespaces "nope" not found` {
			t.Fatalf("create in missing namespace: %v, want 404 namespaces \"nope\" not found", err)
		}
	})

	t.Run("I.26 immortal namespaces may not be deleted", func(t *testing.T) {
		for _, name := range []string{"default", "kube-system", "kube-public"} {
			err := client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "this namespace may not be deleted") {
				t.Errorf("delete %s: %v, want 403", name, err)
			}
		}
	})

	t.Run("I.28 I.50 new namespace: finalizer, phase, label, default objects", func(t *testing.T) {
		ns := createNamespace(ctx, t, client, "fresh")
		if !slices.Equal(ns.Spec.Finalizers, []corev1.FinalizerName{corev1.FinalizerKubernetes}) ||
			ns.Status.Phase != corev1.NamespaceActive || ns.Labels[corev1.LabelMetadataName] != "fresh" {
			t.Fatalf("new namespace: finalizers %v phase %q labels %v", ns.Spec.Finalizers, ns.Status.Phase, ns.Labels)
		}
		waitFor(ctx, t, "default ServiceAccount", func() (bool, error) {
			_, err := client.CoreV1().ServiceAccounts("fresh").Get(ctx, "default", metav1.GetOptions{})
			return err == nil, ignoreNotFound(err)
		})
		wantCA := string(cfg.CAData)
		waitForRootCA(ctx, t, client, "fresh", wantCA)
		// Recreated when deleted, restored when changed.
		if err := client.CoreV1().ConfigMaps("fresh").Delete(ctx, "kube-root-ca.crt", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitForRootCA(ctx, t, client, "fresh", wantCA)
		cm, err := client.CoreV1().ConfigMaps("fresh").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data["ca.crt"] = "tampered"
		if _, err := client.CoreV1().ConfigMaps("fresh").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitForRootCA(ctx, t, client, "fresh", wantCA)
	})

	t.Run("status may not set Terminating without deletion", func(t *testing.T) {
		ns, err := client.CoreV1().Namespaces().Get(ctx, "fresh", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ns.Status.Phase = corev1.NamespaceTerminating
		if _, err := client.CoreV1().Namespaces().UpdateStatus(ctx, ns, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
			t.Fatalf("status Terminating without deletionTimestamp: %v, want 422", err)
		}
	})

	t.Run("I.51 I.45 delete empties the namespace, then removes it", func(t *testing.T) {
		testNamespaceDeletion(ctx, t, client)
	})

	t.Run("I.50 I.69 PUT finalize with null finalizers completes deletion", func(t *testing.T) {
		createNamespace(ctx, t, client, "forced")
		if err := client.CoreV1().Namespaces().Delete(ctx, "forced", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// As kubectl proxy + curl in the seed (S004), within the controller's
		// deletion delay.
		body := `{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"forced"},"spec":{"finalizers":null}}`
		raw, err := client.CoreV1().RESTClient().Put().AbsPath("/api/v1/namespaces/forced/finalize").
			SetHeader("Content-Type", "application/json").Body([]byte(body)).DoRaw(ctx)
		if err != nil {
			t.Fatalf("PUT finalize: %v %s", err, raw)
		}
		if _, err := client.CoreV1().Namespaces().Get(ctx, "forced", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("after finalize: %v, want 404", err)
		}
	})
}

// testNamespaceDeletion deletes a namespace holding a configmap and a pod
// scheduled on a node that the test plays: the namespace turns
// Terminating, refuses new content (403), its pod gets a
// deletionTimestamp and stays until "the node" deletes it with grace 0,
// the configmap with it (pods go first); then the configmap goes and the
// namespace is gone. The delete asks for foreground propagation:
// with no garbage collector, the controller removes that finalizer too.
func testNamespaceDeletion(ctx context.Context, t *testing.T, client kubernetes.Interface) {
	const name = "doomed"
	createNamespace(ctx, t, client, name)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "conf"}, Data: map[string]string{"a": "1"}}
	if _, err := client.CoreV1().ConfigMaps(name).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.PodSpec{NodeName: "node-a",
			Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36"}}},
	}
	if _, err := client.CoreV1().Pods(name).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	err := client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)})
	if err != nil {
		t.Fatal(err)
	}
	ns, err := client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// foregroundDeletion may be gone already: the garbage collector
	// removes it at once from a namespace that owns nothing.
	if ns.DeletionTimestamp == nil || ns.Status.Phase != corev1.NamespaceTerminating {
		t.Fatalf("after delete: deletionTimestamp %v phase %q finalizers %v", ns.DeletionTimestamp, ns.Status.Phase, ns.Finalizers)
	}
	_, err = client.CoreV1().ConfigMaps(name).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late"}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "because it is being terminated") ||
		!apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		t.Fatalf("create in terminating namespace: %v, want 403", err)
	}

	var uid *metav1.Preconditions
	waitFor(ctx, t, "pod marked for deletion", func() (bool, error) {
		p, err := client.CoreV1().Pods(name).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		uid = &metav1.Preconditions{UID: &p.UID}
		return p.DeletionTimestamp != nil, nil
	})
	waitFor(ctx, t, "condition NamespaceContentRemaining", func() (bool, error) {
		ns, err := client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range ns.Status.Conditions {
			if c.Type == corev1.NamespaceContentRemaining && c.Status == corev1.ConditionTrue {
				return c.Reason == "SomeResourcesRemain" && strings.Contains(c.Message, "pods. has 1 resource instances"), nil
			}
		}
		return false, nil
	})
	if _, err := client.CoreV1().ConfigMaps(name).Get(ctx, "conf", metav1.GetOptions{}); err != nil {
		t.Fatalf("configmap while the pod remains: %v, want it kept (pods go first)", err)
	}
	// The node finishes the pod.
	err = client.CoreV1().Pods(name).Delete(ctx, "web", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0), Preconditions: uid})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "configmap deleted", func() (bool, error) {
		_, err := client.CoreV1().ConfigMaps(name).Get(ctx, "conf", metav1.GetOptions{})
		return apierrors.IsNotFound(err), ignoreNotFound(err)
	})
	waitFor(ctx, t, "namespace gone", func() (bool, error) {
		_, err := client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), ignoreNotFound(err)
	})
}

func createNamespace(ctx context.Context, t *testing.T, client kubernetes.Interface, name string) *corev1.Namespace {
	t.Helper()
	ns, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

func waitForRootCA(ctx context.Context, t *testing.T, client kubernetes.Interface, ns, want string) {
	t.Helper()
	waitFor(ctx, t, "kube-root-ca.crt in "+ns, func() (bool, error) {
		cm, err := client.CoreV1().ConfigMaps(ns).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		if err != nil {
			return false, ignoreNotFound(err)
		}
		return cm.Data["ca.crt"] == want, nil
	})
}

// waitFor polls cond every 100 ms for up to 30 s.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) { return cond() })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
