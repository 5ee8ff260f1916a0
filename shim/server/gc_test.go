package server

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// holdFinalizer keeps a dependent the collector deleted in place (with a
// deletionTimestamp) until the test removes it.
const holdFinalizer = "skiff.test/hold"

// TestGarbageCollector runs the seed checklist's owner-reference
// walk-throughs (I.66-I.68, S004 "Owner References", S002 "Owners and
// Dependents") against the shim's garbage collector, with configmaps.
func TestGarbageCollector(t *testing.T) {
	_, cfg, client := startShim(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := "gc-test"
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cms := client.CoreV1().ConfigMaps(ns)

	t.Run("I.66 deleting the child keeps the parent", func(t *testing.T) {
		parent := createCM(ctx, t, client, ns, "i66-parent")
		createCM(ctx, t, client, ns, "i66-child", ownedBy(parent, false))
		if err := cms.Delete(ctx, "i66-child", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// Background deletion of the parent then finds no child to collect.
		if _, err := cms.Get(ctx, "i66-parent", metav1.GetOptions{}); err != nil {
			t.Fatalf("parent after the child's deletion: %v", err)
		}
	})

	t.Run("I.66 I.67 Background deletes the child", func(t *testing.T) {
		parent := createCM(ctx, t, client, ns, "i67-parent")
		createCM(ctx, t, client, ns, "i67-child", ownedBy(parent, false))
		deleteWith(ctx, t, client, ns, "i67-parent", metav1.DeletePropagationBackground)
		waitGone(ctx, t, client, ns, "i67-parent")
		waitGone(ctx, t, client, ns, "i67-child")
	})

	t.Run("I.66 I.68 Orphan strips the owner reference", func(t *testing.T) {
		parent := createCM(ctx, t, client, ns, "i68o-parent")
		other := createCM(ctx, t, client, ns, "i68o-other")
		createCM(ctx, t, client, ns, "i68o-child", ownedBy(parent, true), ownedBy(other, false))
		deleteWith(ctx, t, client, ns, "i68o-parent", metav1.DeletePropagationOrphan)
		waitGone(ctx, t, client, ns, "i68o-parent")
		child, err := cms.Get(ctx, "i68o-child", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("orphaned child: %v", err)
		}
		if len(child.OwnerReferences) != 1 || child.OwnerReferences[0].UID != other.UID {
			t.Fatalf("orphaned child's owner references: %+v, want only %s", child.OwnerReferences, other.Name)
		}
	})

	t.Run("I.68 Foreground waits for blocking dependents only", func(t *testing.T) {
		parent := createCM(ctx, t, client, ns, "i68f-parent")
		createCM(ctx, t, client, ns, "i68f-blocking", ownedBy(parent, true), held)
		createCM(ctx, t, client, ns, "i68f-nonblocking", ownedBy(parent, false), held)
		deleteWith(ctx, t, client, ns, "i68f-parent", metav1.DeletePropagationForeground)
		// The collector deletes both dependents; they stay, held.
		for _, name := range []string{"i68f-blocking", "i68f-nonblocking"} {
			waitUntil(ctx, t, name+" deleted", func() bool {
				cm, err := cms.Get(ctx, name, metav1.GetOptions{})
				return err == nil && cm.DeletionTimestamp != nil
			})
		}
		p, err := cms.Get(ctx, "i68f-parent", metav1.GetOptions{})
		if err != nil || p.DeletionTimestamp == nil || !slices.Contains(p.Finalizers, metav1.FinalizerDeleteDependents) {
			t.Fatalf("parent while a blocking dependent remains: %v %+v", err, p)
		}
		release(ctx, t, client, ns, "i68f-blocking")
		waitGone(ctx, t, client, ns, "i68f-blocking")
		waitGone(ctx, t, client, ns, "i68f-parent")
		// The non-blocking dependent did not hold the parent.
		if _, err := cms.Get(ctx, "i68f-nonblocking", metav1.GetOptions{}); err != nil {
			t.Fatalf("non-blocking dependent: %v", err)
		}
		release(ctx, t, client, ns, "i68f-nonblocking")
		waitGone(ctx, t, client, ns, "i68f-nonblocking")
	})

	t.Run("I.66 an owner UID that does not match the live owner is absent", func(t *testing.T) {
		parent := createCM(ctx, t, client, ns, "uid-parent")
		stale := parent.DeepCopy()
		stale.UID = types.UID("00000000-0000-0000-0000-000000000001")
		createCM(ctx, t, client, ns, "uid-child", ownedBy(stale, false))
		waitGone(ctx, t, client, ns, "uid-child")
		if _, err := cms.Get(ctx, "uid-parent", metav1.GetOptions{}); err != nil {
			t.Fatalf("live owner: %v", err)
		}
	})

	t.Run("S002 owner in another namespace is absent, Warning OwnerRefInvalidNamespace", func(t *testing.T) {
		parent := createCM(ctx, t, client, ns, "xns-parent")
		child := createCM(ctx, t, client, "default", "xns-child", ownedBy(parent, false))
		waitGone(ctx, t, client, "default", "xns-child")
		waitEvent(ctx, t, client, "default", child.UID)
	})

	t.Run("a dependency circle deleted in the foreground goes whole", func(t *testing.T) {
		// The [Conformance] test "should not be blocked by dependency
		// circle", ten times at once: a retried unblocking once removed
		// the last one's owner references, which then stayed.
		fast := rest.CopyConfig(cfg)
		fast.QPS, fast.Burst = 200, 400
		c := kubernetes.NewForConfigOrDie(fast)
		var wg sync.WaitGroup
		for i := range 10 {
			wg.Go(func() { deleteCircle(ctx, t, c, ns, fmt.Sprintf("circle%d-", i)) })
		}
		wg.Wait()
	})

	t.Run("S002 cluster-scoped dependent of a namespaced owner is never collected", func(t *testing.T) {
		owner := createCM(ctx, t, client, ns, "cluster-owner")
		sentinel := createCM(ctx, t, client, ns, "cluster-sentinel", ownedBy(owner, false))
		child := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gc-cluster-child",
			OwnerReferences: []metav1.OwnerReference{ownerRef(owner, false)}}}
		created, err := client.CoreV1().Namespaces().Create(ctx, child, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		waitEvent(ctx, t, client, "default", created.UID)
		deleteWith(ctx, t, client, ns, owner.Name, metav1.DeletePropagationBackground)
		waitGone(ctx, t, client, ns, sentinel.Name)
		time.Sleep(time.Second) // both were queued together; give the other worker a moment
		got, err := client.CoreV1().Namespaces().Get(ctx, child.Name, metav1.GetOptions{})
		if err != nil || got.DeletionTimestamp != nil {
			t.Fatalf("cluster-scoped dependent: %v %+v", err, got)
		}
	})
}

// deleteCircle makes three configmaps prefix1..3 each the blocking owner
// of the next (3 owns 1), deletes the first in the foreground and waits
// for all three to be gone. Safe to run in several goroutines.
func deleteCircle(ctx context.Context, t *testing.T, c kubernetes.Interface, ns, prefix string) {
	cms := c.CoreV1().ConfigMaps(ns)
	var objs []*corev1.ConfigMap
	for i := range 3 {
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s%d", prefix, i+1)}}, metav1.CreateOptions{})
		if err != nil {
			t.Error(err)
			return
		}
		objs = append(objs, cm)
	}
	for i, cm := range objs {
		owner := objs[(i+2)%3]
		patch := fmt.Sprintf(`{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":%q,"uid":%q,"controller":true,"blockOwnerDeletion":true}]}}`, owner.Name, owner.UID)
		if _, err := cms.Patch(ctx, cm.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Error(err)
			return
		}
	}
	fg := metav1.DeletePropagationForeground
	if err := cms.Delete(ctx, objs[0].Name, metav1.DeleteOptions{PropagationPolicy: &fg, Preconditions: metav1.NewUIDPreconditions(string(objs[0].UID))}); err != nil {
		t.Error(err)
		return
	}
	var left []corev1.ConfigMap
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := cms.List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		left = slices.DeleteFunc(l.Items, func(cm corev1.ConfigMap) bool { return !strings.HasPrefix(cm.Name, prefix) })
		return len(left) == 0, nil
	})
	if err != nil {
		for _, cm := range left {
			t.Errorf("%s left: deleted %v, finalizers %q, owners %+v", cm.Name, cm.DeletionTimestamp != nil, cm.Finalizers, cm.OwnerReferences)
		}
	}
}

type cmOption func(*corev1.ConfigMap)

func ownerRef(owner metav1.Object, block bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner.GetName(), UID: owner.GetUID(),
		BlockOwnerDeletion: ptr.To(block)}
}

func ownedBy(owner metav1.Object, block bool) cmOption {
	return func(cm *corev1.ConfigMap) { cm.OwnerReferences = append(cm.OwnerReferences, ownerRef(owner, block)) }
}

func held(cm *corev1.ConfigMap) { cm.Finalizers = append(cm.Finalizers, holdFinalizer) }

func createCM(ctx context.Context, t *testing.T, c kubernetes.Interface, ns, name string, opts ...cmOption) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": "v"}}
	for _, o := range opts {
		o(cm)
	}
	cm, err := c.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

func deleteWith(ctx context.Context, t *testing.T, c kubernetes.Interface, ns, name string, policy metav1.DeletionPropagation) {
	t.Helper()
	if err := c.CoreV1().ConfigMaps(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
		t.Fatal(err)
	}
}

// release removes the hold finalizer with a JSON patch, as S004 does.
func release(ctx context.Context, t *testing.T, c kubernetes.Interface, ns, name string) {
	t.Helper()
	patch := []byte(`[{"op":"remove","path":"/metadata/finalizers"}]`)
	if _, err := c.CoreV1().ConfigMaps(ns).Patch(ctx, name, types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

func waitGone(ctx context.Context, t *testing.T, c kubernetes.Interface, ns, name string) {
	t.Helper()
	waitUntil(ctx, t, "configmap "+ns+"/"+name+" gone", func() bool {
		_, err := c.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

// waitEvent waits for a Warning OwnerRefInvalidNamespace event about uid.
func waitEvent(ctx context.Context, t *testing.T, c kubernetes.Interface, ns string, uid types.UID) {
	t.Helper()
	waitUntil(ctx, t, "event OwnerRefInvalidNamespace", func() bool {
		evs, err := c.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.uid=" + string(uid)})
		if err != nil {
			return false
		}
		return slices.ContainsFunc(evs.Items, func(e corev1.Event) bool {
			return e.Reason == "OwnerRefInvalidNamespace" && e.Type == corev1.EventTypeWarning
		})
	})
}

// waitUntil is waitFor (namespace_test.go) of a condition without errors.
func waitUntil(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitFor(ctx, t, what, func() (bool, error) { return cond(), nil })
}
