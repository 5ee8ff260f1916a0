package server

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/skiffnode/skiff/shim/pki"
	"github.com/skiffnode/skiff/shim/registry/generic"
)

// Bare core/v1 PersistentVolumes and PersistentVolumeClaims, as a build
// serves them (skiff-apiserver with upstream's strategies).
var (
	testVolumes = &generic.Kind{
		Version: "v1", Resource: "persistentvolumes", Singular: "persistentvolume", Status: true,
		New:     func() runtime.Object { return &corev1.PersistentVolume{} },
		NewList: func() runtime.Object { return &corev1.PersistentVolumeList{} },
	}
	testClaims = &generic.Kind{
		Version: "v1", Resource: "persistentvolumeclaims", Singular: "persistentvolumeclaim", Namespaced: true, Status: true,
		New:     func() runtime.Object { return &corev1.PersistentVolumeClaim{} },
		NewList: func() runtime.Object { return &corev1.PersistentVolumeClaimList{} },
	}
)

// TestNodeGetsItsPodsPersistentVolumes: a node reads the claim of its pod
// and the PersistentVolume bound to it (claimRef), and no other volume;
// it may not list them; another node may not read them.
func TestNodeGetsItsPodsPersistentVolumes(t *testing.T) {
	s, _, admin := startShimWith(t, Options{NodeName: "node-a", Kinds: []*generic.Kind{testVolumes, testClaims}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const ns = "vol"
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	claim, err := admin.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-data"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for name, ref := range map[string]*corev1.ObjectReference{
		"pv-data":  {Namespace: ns, Name: "data", UID: claim.UID},
		"pv-other": {Namespace: ns, Name: "other"},
	} {
		pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{ClaimRef: ref,
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/srv/" + name}}}}
		if _, err := admin.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod := testPod("app", "node-a")
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	if _, err := admin.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("a pod with a claim: %v", err)
	}
	nodeA := nodeClient(t, s.NodeKubeconfig)
	if _, err := nodeA.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{}); err != nil {
		t.Errorf("node-a gets its pod's claim: %v", err)
	}
	if pv, err := nodeA.CoreV1().PersistentVolumes().Get(ctx, "pv-data", metav1.GetOptions{}); err != nil || pv.Spec.HostPath == nil {
		t.Errorf("node-a gets the claim's volume: %v", err)
	}
	forbidden := func(what string, err error) {
		t.Helper()
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s: %v, want 403", what, err)
		}
	}
	_, err = nodeA.CoreV1().PersistentVolumes().Get(ctx, "pv-other", metav1.GetOptions{})
	forbidden("node-a gets a volume of another claim", err)
	_, err = nodeA.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	forbidden("node-a lists volumes", err)
	forbidden("node-a deletes the volume", nodeA.CoreV1().PersistentVolumes().Delete(ctx, "pv-data", metav1.DeleteOptions{}))
	_, err = otherNode(t, s).CoreV1().PersistentVolumes().Get(ctx, "pv-data", metav1.GetOptions{})
	forbidden("node-b gets node-a's pod's volume", err)
}

// otherNode is a client of node-b's identity on s.
func otherNode(t *testing.T, s *Server) kubernetes.Interface {
	t.Helper()
	bundle, err := pki.EnsureBundle(filepath.Dir(s.Kubeconfig), nil)
	if err != nil {
		t.Fatal(err)
	}
	path, err := pki.EnsureNodeKubeconfig(t.TempDir(), s.URL, bundle, "node-b")
	if err != nil {
		t.Fatal(err)
	}
	return nodeClient(t, path)
}
