package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// TestInPlacePodResize: in-place pod resize through the API server's
// pods/resize (kubectl 1.37 and client-go), on the machine's cgroup
// version:
//   - cpu and memory of a running container change in place: its
//     restartCount and container ID stay, the new limits are in its cgroup
//     and the pod's, the status shows allocatedResources and resources,
//     and the kubelet's events are recorded;
//   - a container whose resizePolicy says RestartContainer for memory is
//     restarted with its new limit;
//   - a resize that does not fit next to another pod is Deferred, and
//     admitted once that pod is gone;
//   - a resize beyond the node's allocatable: a 1.37 API server refuses it
//     (PodResizeValidator); an older one (make e2e-skew) passes it on and
//     skiff shows it Infeasible.
func TestInPlacePodResize(t *testing.T) {
	cg := newCgroupEnv(t)
	e := NewEnv(t)
	c := startCluster(t, e)
	cs := c.Client()
	ctx := context.Background()
	opts := cg.args(apiAgentArgs(c)...)
	e.StartAgent(t, opts)
	t.Cleanup(func() { deleteAPIPods(t, cs) })
	node := waitNodeReady(t, cs)
	allocCPU := node.Status.Allocatable.Cpu().MilliValue()

	p := apiPod("resize", 1, "sleep 100000")
	p.Spec.Containers[0].Resources = requirements("100m", "32Mi", "200m", "64Mi")
	rc := p.Spec.Containers[0]
	rc.Name, rc.ResizePolicy = "rc", []v1.ContainerResizePolicy{{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}}
	p.Spec.Containers = append(p.Spec.Containers, rc)
	hog := apiPod("hog", 1, "sleep 100000")
	hog.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: *resource.NewMilliQuantity(allocCPU/2, resource.DecimalSI)}
	for _, pod := range []*v1.Pod{p, hog} {
		if _, err := cs.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	before := waitAPIPod(t, cs, "resize", "Ready", podReady)
	waitAPIPod(t, cs, "hog", "Ready", podReady)

	// In place, through kubectl.
	kubectl(t, c, "patch", "pod", "resize", "--subresource", "resize", "--patch",
		`{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"150m","memory":"48Mi"},"limits":{"cpu":"300m","memory":"96Mi"}}}]}}`)
	after := waitAPIPod(t, cs, "resize", "app resized in place", func(p *v1.Pod) bool {
		s := containerStatus(p, "app")
		return s != nil && s.Resources != nil && s.Resources.Limits.Memory().Value() == 96*mi &&
			s.AllocatedResources.Cpu().MilliValue() == 150 && p.Status.ObservedGeneration == p.Generation && noResizeConditions(p)
	})
	b, a := containerStatus(before, "app"), containerStatus(after, "app")
	if a.ContainerID != b.ContainerID || a.RestartCount != 0 {
		t.Errorf("app: %s (restarts %d), want %s resized without a restart", a.ContainerID, a.RestartCount, b.ContainerID)
	}
	mem := func(n int) string { return strconv.Itoa(n * mi) }
	cg.checkLimits(t, "resized container", podRel(after)+"/"+runtimeID(a.ContainerID), limits{quota: "30000", period: "100000", shares: "153", memory: mem(96), byRunc: true})
	cg.checkLimits(t, "resized pod", podRel(after), limits{quota: "50000", period: "100000", shares: "256", memory: mem(160)})
	waitEvent(t, cs, "resize", "ResizeCompleted", fmt.Sprintf(`Pod resize completed: {"containers":[{"name":"app","resources":{"limits":{"cpu":"300m","memory":"96Mi"},"requests":{"cpu":"150m","memory":"48Mi"}}},{"name":"rc","resources":{"limits":{"cpu":"200m","memory":"64Mi"},"requests":{"cpu":"100m","memory":"32Mi"}}}],"generation":%d}`, after.Generation))

	// RestartContainer for memory: rc restarts with its new limit.
	resizeContainer(t, cs, "resize", "rc", requirements("100m", "32Mi", "200m", "80Mi"))
	restarted := waitAPIPod(t, cs, "resize", "rc restarted with 80Mi", func(p *v1.Pod) bool {
		s := containerStatus(p, "rc")
		return s != nil && s.RestartCount == 1 && s.State.Running != nil && s.Resources != nil && s.Resources.Limits.Memory().Value() == 80*mi && noResizeConditions(p)
	})
	cg.checkLimits(t, "restarted container", podRel(restarted)+"/"+runtimeID(containerStatus(restarted, "rc").ContainerID), limits{memory: mem(80), byRunc: true})
	waitEvent(t, cs, "resize", "Killing", "Container rc resize requires restart")

	// Deferred next to hog, admitted once hog is gone: the pod would
	// request want and rc's 100m.
	want := allocCPU/2 + 100
	resizeContainer(t, cs, "resize", "app", requirements(strconv.FormatInt(want, 10)+"m", "48Mi", strconv.FormatInt(allocCPU, 10)+"m", "96Mi"))
	waitAPIPod(t, cs, "resize", "PodResizePending Deferred", func(p *v1.Pod) bool {
		cond := podConditionOf(p, v1.PodResizePending)
		return cond != nil && cond.Reason == v1.PodReasonDeferred && strings.HasPrefix(cond.Message, fmt.Sprintf("Node didn't have enough resource: cpu, requested: %d, used: %d", want+100, allocCPU/2))
	})
	if err := cs.CoreV1().Pods(namespace).Delete(ctx, "hog", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	admitted := waitAPIPod(t, cs, "resize", "deferred resize admitted", func(p *v1.Pod) bool {
		s := containerStatus(p, "app")
		return s != nil && s.AllocatedResources.Cpu().MilliValue() == want && noResizeConditions(p)
	})
	if s := containerStatus(admitted, "app"); s.RestartCount != 0 || s.ContainerID != b.ContainerID {
		t.Errorf("app restarted by the deferred resize: %s (restarts %d)", s.ContainerID, s.RestartCount)
	}

	// Beyond allocatable.
	over := strconv.FormatInt(allocCPU+1000, 10) + "m"
	err := patchResize(ctx, cs, "resize", "app", requirements(over, "48Mi", over, "96Mi"))
	var status apierrors.APIStatus
	switch {
	case err == nil:
		waitAPIPod(t, cs, "resize", "PodResizePending Infeasible", func(p *v1.Pod) bool {
			cond := podConditionOf(p, v1.PodResizePending)
			return cond != nil && cond.Reason == v1.PodReasonInfeasible && strings.HasPrefix(cond.Message, "Node didn't have enough capacity: cpu, requested: ")
		})
	case apierrors.IsForbidden(err) && errors.As(err, &status) && strings.Contains(status.Status().Message, "node didn't have enough allocatable resources: cpu"):
		t.Logf("the API server refused the resize itself: %v", err)
	default:
		t.Fatalf("resize beyond allocatable: %v", err)
	}
}

// TestInitContainerResize: skiff declares InPlacePodVerticalScalingInitContainers
// in node.status.declaredFeatures (NodeDeclaredFeatures), so the API
// server's NodeDeclaredFeatureValidator lets a running non-sidecar init
// container be resized through pods/resize; skiff changes its cgroup in
// place, without a restart, and shows the new resources in its status.
func TestInitContainerResize(t *testing.T) {
	cg := newCgroupEnv(t)
	e := NewEnv(t)
	c := startCluster(t, e)
	cs := c.Client()
	ctx := context.Background()
	e.StartAgent(t, cg.args(apiAgentArgs(c)...))
	t.Cleanup(func() { deleteAPIPods(t, cs) })
	node := waitNodeReady(t, cs)
	if !slices.Contains(node.Status.DeclaredFeatures, "InPlacePodVerticalScalingInitContainers") {
		t.Fatalf("node declaredFeatures %v, want InPlacePodVerticalScalingInitContainers", node.Status.DeclaredFeatures)
	}

	p := apiPod("init-resize", 1, "sleep 100000")
	p.Spec.InitContainers = []v1.Container{{Name: "init", Image: busyboxImage, Command: []string{"sleep", "100000"},
		Resources: requirements("100m", "32Mi", "200m", "64Mi")}}
	if _, err := cs.CoreV1().Pods(namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := waitAPIPod(t, cs, "init-resize", "init container running", func(p *v1.Pod) bool {
		s := containerStatus(p, "init")
		return s != nil && s.State.Running != nil
	})
	patch := `{"spec":{"initContainers":[{"name":"init","resources":{"requests":{"cpu":"150m","memory":"48Mi"},"limits":{"cpu":"300m","memory":"96Mi"}}}]}}`
	if _, err := cs.CoreV1().Pods(namespace).Patch(ctx, "init-resize", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "resize"); err != nil {
		t.Fatalf("resize of the init container: %v", err)
	}
	after := waitAPIPod(t, cs, "init-resize", "init container resized in place", func(p *v1.Pod) bool {
		s := containerStatus(p, "init")
		return s != nil && s.Resources != nil && s.Resources.Limits.Memory().Value() == 96*mi &&
			s.AllocatedResources.Cpu().MilliValue() == 150 && p.Status.ObservedGeneration == p.Generation && noResizeConditions(p)
	})
	b, a := containerStatus(before, "init"), containerStatus(after, "init")
	if a.ContainerID != b.ContainerID || a.RestartCount != 0 || a.State.Running == nil {
		t.Errorf("init: %s (restarts %d), want %s resized without a restart", a.ContainerID, a.RestartCount, b.ContainerID)
	}
	cg.checkLimits(t, "resized init container", podRel(after)+"/"+runtimeID(a.ContainerID),
		limits{quota: "30000", period: "100000", shares: "153", memory: strconv.Itoa(96 * mi), byRunc: true})
}

func requirements(reqCPU, reqMem, limCPU, limMem string) v1.ResourceRequirements {
	return v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(reqCPU), v1.ResourceMemory: resource.MustParse(reqMem)},
		Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse(limCPU), v1.ResourceMemory: resource.MustParse(limMem)},
	}
}

// patchResize sets container's resources through pods/resize.
func patchResize(ctx context.Context, cs kubernetes.Interface, pod, container string, r v1.ResourceRequirements) error {
	patch := fmt.Sprintf(`{"spec":{"containers":[{"name":%q,"resources":{"requests":{"cpu":%q,"memory":%q},"limits":{"cpu":%q,"memory":%q}}}]}}`,
		container, r.Requests.Cpu().String(), r.Requests.Memory().String(), r.Limits.Cpu().String(), r.Limits.Memory().String())
	_, err := cs.CoreV1().Pods(namespace).Patch(ctx, pod, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "resize")
	return err
}

func resizeContainer(t *testing.T, cs kubernetes.Interface, pod, container string, r v1.ResourceRequirements) {
	t.Helper()
	if err := patchResize(context.Background(), cs, pod, container, r); err != nil {
		t.Fatalf("resize %s/%s: %v", pod, container, err)
	}
}

func noResizeConditions(p *v1.Pod) bool {
	return podConditionOf(p, v1.PodResizePending) == nil && podConditionOf(p, v1.PodResizeInProgress) == nil
}

func podConditionOf(p *v1.Pod, typ v1.PodConditionType) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == typ {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// runtimeID is the runtime's ID of a status's containerID.
func runtimeID(containerID string) string {
	_, id, _ := strings.Cut(containerID, "://")
	return id
}

// TestControlPlaneResize: in-place resize through skiff's own control
// plane (the shim's pods/resize and its PodResizeValidator), on the
// machine's cgroup version (the v2 VM runs it too): the container's and
// the pod's cgroups take the new cpu and memory limits without a restart;
// a resize beyond the node's allocatable is refused by the shim.
func TestControlPlaneResize(t *testing.T) {
	cg := newCgroupEnv(t)
	e := NewEnv(t)
	e.StartAgent(t, cg.args(controlPlaneArgs(t, e)...))
	cs, kubeconfig := adminClient(t, e)
	ctx := context.Background()
	node := waitNodeReady(t, cs)
	t.Cleanup(func() { deleteAPIPods(t, cs) })

	p := apiPod("cp-resize", 1, "sleep 100000")
	p.Spec.NodeName = ""
	p.Spec.Containers[0].Resources = requirements("100m", "32Mi", "200m", "64Mi")
	if _, err := cs.CoreV1().Pods(namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := waitAPIPod(t, cs, "cp-resize", "Ready", podReady)

	patch := `{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"150m","memory":"48Mi"},"limits":{"cpu":"300m","memory":"96Mi"}}}]}}`
	if k := os.Getenv("SKIFF_CONTROLPLANE"); k != "" {
		out, err := exec.Command(k, "kubectl", "--kubeconfig", kubeconfig, "-n", namespace, "patch", "pod", "cp-resize", "--subresource", "resize", "--patch", patch).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl patch --subresource resize: %v\n%s", err, out)
		}
	} else if _, err := cs.CoreV1().Pods(namespace).Patch(ctx, "cp-resize", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "resize"); err != nil {
		t.Fatal(err)
	}
	after := waitAPIPod(t, cs, "cp-resize", "resized in place", func(p *v1.Pod) bool {
		s := containerStatus(p, "app")
		return s != nil && s.Resources != nil && s.Resources.Limits.Memory().Value() == 96*mi && p.Generation == 2 &&
			p.Status.ObservedGeneration == 2 && noResizeConditions(p)
	})
	b, a := containerStatus(before, "app"), containerStatus(after, "app")
	if a.ContainerID != b.ContainerID || a.RestartCount != 0 {
		t.Errorf("app: %s (restarts %d), want %s resized without a restart", a.ContainerID, a.RestartCount, b.ContainerID)
	}
	mem := func(n int) string { return strconv.Itoa(n * mi) }
	cg.checkLimits(t, "resized container", podRel(after)+"/"+runtimeID(a.ContainerID), limits{quota: "30000", period: "100000", shares: "153", memory: mem(96), byRunc: true})
	cg.checkLimits(t, "resized pod", podRel(after), limits{quota: "30000", period: "100000", shares: "153", memory: mem(96)})

	over := strconv.FormatInt(node.Status.Allocatable.Cpu().MilliValue()+1000, 10) + "m"
	err := patchResize(ctx, cs, "cp-resize", "app", requirements(over, "48Mi", over, "96Mi"))
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "node didn't have enough allocatable resources: cpu") {
		t.Errorf("resize beyond allocatable through the shim: %v, want Forbidden (PodResizeValidator)", err)
	}
}
