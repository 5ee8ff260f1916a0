package server

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// TestPodResize: pods/resize as kube-apiserver 1.37 serves it, through
// client-go as kubectl's `patch --subresource resize` sends it: listed in
// discovery and OpenAPI, resources changed in place with the generation
// bumped and other changes dropped, the node's allocatable, QoS class and
// declared features enforced, nodes refused, and the node's resize status
// fields kept by pods/status.
func TestPodResize(t *testing.T) {
	s, _, admin := startShimWith(t, Options{NodeName: "node-a"})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	nodeA := nodeClient(t, s.NodeKubeconfig)
	registerNode(ctx, t, nodeA, "2", "2Gi")
	pods := admin.CoreV1().Pods("default")
	web, err := pods.Create(ctx, resizablePod("web", false), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	resize := func(c kubernetes.Interface, name, patch string) (*corev1.Pod, error) {
		return c.CoreV1().Pods("default").Patch(ctx, name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "resize")
	}
	appCPU := func(cpu string) string {
		return `{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"` + cpu + `"}}}]}}`
	}

	t.Run("discovery and OpenAPI list pods/resize", func(t *testing.T) { checkResizeListed(ctx, t, admin) })

	t.Run("patch resizes in place, bumps the generation, drops the rest", func(t *testing.T) {
		testResizePatch(ctx, t, admin, web)
	})

	t.Run("requests above the node's allocatable: 403", func(t *testing.T) {
		_, err := resize(admin, "web", `{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"3"},"limits":{"cpu":"4"}}}]}}`)
		want := `pods "web" is forbidden: node didn't have enough allocatable resources: cpu, requested: 3000, allocatable: 2000`
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("resize: %v, want 403 %q", err, want)
		}
	})

	t.Run("QoS class change: 422", func(t *testing.T) {
		_, err := resize(admin, "web", `{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"200m","memory":"256Mi"},"limits":{"cpu":"200m"}}}]}}`)
		want := `spec: Invalid value: "Burstable": Pod QOS Class may not change as a result of resizing`
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("resize: %v, want 422 %q", err, want)
		}
	})

	t.Run("init containers: app resize ok, init resize needs a declared feature", func(t *testing.T) {
		if _, err := pods.Create(ctx, resizablePod("with-init", true), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := resize(admin, "with-init", appCPU("120m")); err != nil {
			t.Errorf("app container resize: %v", err)
		}
		_, err := resize(admin, "with-init", `{"spec":{"initContainers":[{"name":"init","resources":{"requests":{"cpu":"80m"}}}]}}`)
		want := `pod update requires features InPlacePodVerticalScalingInitContainers which are not available on node "node-a"`
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("init container resize: %v, want 403 %q", err, want)
		}
	})

	t.Run("a node cannot resize", func(t *testing.T) {
		if _, err := resize(nodeA, "web", appCPU("160m")); !apierrors.IsForbidden(err) {
			t.Errorf("node's resize: %v, want 403", err)
		}
	})

	t.Run("status keeps the node's resize fields", func(t *testing.T) { testResizeStatus(ctx, t, nodeA, admin) })

	t.Run("pod updates bump the generation", func(t *testing.T) {
		cur, err := pods.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Spec.Containers[0].Image = "busybox:1.37"
		got, err := pods.Update(ctx, cur, metav1.UpdateOptions{})
		if err != nil || got.Generation != cur.Generation+1 {
			t.Errorf("update: %v, generation %d, want %d", err, got.GetGeneration(), cur.Generation+1)
		}
	})
}

// testResizePatch resizes web by a strategic merge patch that also tries
// to change its image and labels (dropped), then by UpdateResize: each
// bumps the generation.
func testResizePatch(ctx context.Context, t *testing.T, admin kubernetes.Interface, web *corev1.Pod) {
	pods := admin.CoreV1().Pods("default")
	got, err := pods.Patch(ctx, "web", types.StrategicMergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}},`+
		`"spec":{"containers":[{"name":"app","image":"nginx","resources":{"requests":{"cpu":"150m"},"limits":{"memory":"256Mi"}}}]}}`),
		metav1.PatchOptions{}, "resize")
	if err != nil {
		t.Fatal(err)
	}
	c := got.Spec.Containers[0]
	if q, m := c.Resources.Requests[corev1.ResourceCPU], c.Resources.Limits[corev1.ResourceMemory]; q.String() != "150m" || m.String() != "256Mi" {
		t.Errorf("resources %v, want cpu request 150m, memory limit 256Mi", c.Resources)
	}
	if got.Generation != web.Generation+1 || c.Image != web.Spec.Containers[0].Image || got.Labels["x"] != "" {
		t.Errorf("generation %d (was %d), image %s, labels %v: want +1, unchanged, unchanged", got.Generation, web.Generation, c.Image, got.Labels)
	}
	got.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("100Mi")
	updated, err := pods.UpdateResize(ctx, "web", got, metav1.UpdateOptions{})
	if err != nil || updated.Generation != got.Generation+1 {
		t.Fatalf("UpdateResize: %v, generation %d", err, updated.GetGeneration())
	}
}

// registerNode creates the client's Node, node-a, Linux, with cpu and
// memory allocatable, as the agent does.
func registerNode(ctx context.Context, t *testing.T, c kubernetes.Interface, cpu, memory string) {
	t.Helper()
	node, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a",
		Labels: map[string]string{corev1.LabelOSStable: "linux"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	list := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
	node.Status.Capacity, node.Status.Allocatable = list, list
	if _, err := c.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// resizablePod is a Burstable pod (app: requests 100m/64Mi, limits
// 200m/128Mi), with a non-sidecar init container if withInit.
func resizablePod(name string, withInit bool) *corev1.Pod {
	p := testPod(name, "")
	p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
	}
	if withInit {
		p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox:1.36", Command: []string{"true"},
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m")}}}}
	}
	return p
}

// checkResizeListed: pods/resize in the core group's discovery (get,
// patch, update, as kube-apiserver) and in /openapi/v3/api/v1.
func checkResizeListed(ctx context.Context, t *testing.T, admin kubernetes.Interface) {
	list, err := admin.Discovery().ServerResourcesForGroupVersion("v1")
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == "pods/resize" })
	if i < 0 {
		t.Fatal("discovery lists no pods/resize")
	}
	if r := list.APIResources[i]; r.Kind != "Pod" || !r.Namespaced || !slices.Equal(slices.Sorted(slices.Values(r.Verbs)), []string{"get", "patch", "update"}) {
		t.Errorf("pods/resize: kind %s namespaced %v verbs %v", r.Kind, r.Namespaced, r.Verbs)
	}
	body, err := admin.Discovery().RESTClient().Get().AbsPath("/openapi/v3/api/v1").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct{ Paths map[string]json.RawMessage }
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	if _, ok := doc.Paths["/api/v1/namespaces/{namespace}/pods/{name}/resize"]; !ok {
		t.Error("/openapi/v3/api/v1 has no pods/resize path")
	}
}

// testResizeStatus plays the node: it reports the resize through
// pods/status (allocatedResources, resources, PodResizeInProgress with
// its observedGeneration), which must be kept, and kept again by an
// update that clears observedGeneration; then reports a running
// container without resources (a node without resize): 422.
func testResizeStatus(ctx context.Context, t *testing.T, nodeA, admin kubernetes.Interface) {
	pod, err := nodeA.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	app := pod.Spec.Containers[0]
	pod.Status.ObservedGeneration = pod.Generation
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Image: app.Image, Ready: true,
		State:              corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
		AllocatedResources: app.Resources.Requests, Resources: app.Resources.DeepCopy()}}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue,
		ObservedGeneration: pod.Generation}}
	if pod, err = nodeA.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	gen := pod.Generation
	pod.Status.ObservedGeneration, pod.Status.Conditions[0].ObservedGeneration = 0, 0
	if pod, err = nodeA.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	cs := pod.Status.ContainerStatuses[0]
	if cs.AllocatedResources == nil || cs.Resources == nil || pod.Status.ObservedGeneration != gen ||
		len(pod.Status.Conditions) != 1 || pod.Status.Conditions[0].ObservedGeneration != gen {
		t.Errorf("status %+v: want allocatedResources, resources and observedGeneration %d kept", pod.Status, gen)
	}
	patch := `{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"170m"}}}]}}`
	if _, err := admin.CoreV1().Pods("default").Patch(ctx, "web", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "resize"); err != nil {
		t.Errorf("resize of a pod whose node reports resources: %v", err)
	}
	if pod, err = nodeA.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	pod.Status.ContainerStatuses[0].Resources = nil
	if _, err = nodeA.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	patch = `{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"180m"}}}]}}`
	_, err = admin.CoreV1().Pods("default").Patch(ctx, "web", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "resize")
	if want := "Pod running on node without support for resize"; !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("resize: %v, want 422 %q", err, want)
	}
}
