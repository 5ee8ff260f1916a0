package pod

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/ptr"

	"github.com/skiffnode/skiff/podspec"
)

// resources returns the requirements of requests and limits given as
// quantity strings by resource name (nil: none).
func resources(requests, limits map[corev1.ResourceName]string) corev1.ResourceRequirements {
	list := func(m map[corev1.ResourceName]string) corev1.ResourceList {
		if m == nil {
			return nil
		}
		l := corev1.ResourceList{}
		for name, q := range m {
			l[name] = resource.MustParse(q)
		}
		return l
	}
	return corev1.ResourceRequirements{Requests: list(requests), Limits: list(limits)}
}

// runningPod is a defaulted, valid Burstable pod on n1 at generation 1
// whose container runs and reports its resources (a node with resize):
// app requests 100m/64Mi, limits 200m/128Mi; init container "init"
// requests 50m, limits 100m.
func runningPod() *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u1", Generation: 1, ResourceVersion: "5",
			Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: "n1",
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox:1.36",
				Resources: resources(map[corev1.ResourceName]string{"cpu": "50m"}, map[corev1.ResourceName]string{"cpu": "100m"})}},
			Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36",
				Resources: resources(map[corev1.ResourceName]string{"cpu": "100m", "memory": "64Mi"},
					map[corev1.ResourceName]string{"cpu": "200m", "memory": "128Mi"})}},
		},
	}
	podspec.SetDefaults(p)
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, QOSClass: corev1.PodQOSBurstable,
		ContainerStatuses: []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
			Resources: p.Spec.Containers[0].Resources.DeepCopy()}}}
	return p
}

// beforeUpdate runs the update path of the Store (rest.BeforeUpdate) with
// the strategy of subresource on sent over old.
func beforeUpdate(subresource string, sent, old *corev1.Pod) error {
	ctx := genericapirequest.WithNamespace(context.Background(), old.Namespace)
	return rest.BeforeUpdate(Kind.UpdateStrategy(subresource), ctx, sent, old)
}

// resizeCase is a pods/resize update of a runningPod.
type resizeCase struct {
	name    string
	change  func(sent *corev1.Pod) // the request, from a copy of old
	old     func(old *corev1.Pod)  // the stored pod, from runningPod
	wantErr string                 // substring of the 422's message; "" for success
	wantGen int64
	check   func(t *testing.T, got *corev1.Pod)
}

// app returns the resources of p's first container.
func app(p *corev1.Pod) *corev1.ResourceRequirements { return &p.Spec.Containers[0].Resources }

// resizeCases: what upstream's podResizeStrategy keeps, and
// ValidatePodResize's refusals with their messages.
func resizeCases() []resizeCase {
	return []resizeCase{
		{name: "cpu and memory of a container", change: func(p *corev1.Pod) {
			app(p).Requests["cpu"], app(p).Limits["memory"] = resource.MustParse("150m"), resource.MustParse("256Mi")
		}, wantGen: 2, check: func(t *testing.T, got *corev1.Pod) {
			if q := app(got).Requests["cpu"]; q.String() != "150m" {
				t.Errorf("cpu request %s, want 150m", q.String())
			}
		}},
		{name: "other changes dropped", change: func(p *corev1.Pod) {
			app(p).Requests["cpu"] = resource.MustParse("150m")
			p.Spec.Containers[0].Image = "busybox:1.37"
			p.Spec.ActiveDeadlineSeconds = ptr.To[int64](30)
			p.Labels = map[string]string{"app": "other"}
			p.Status.Phase = corev1.PodFailed
		}, wantGen: 2, check: func(t *testing.T, got *corev1.Pod) {
			if got.Spec.Containers[0].Image != "busybox:1.36" || got.Spec.ActiveDeadlineSeconds != nil ||
				got.Labels["app"] != "web" || got.Status.Phase != corev1.PodRunning {
				t.Errorf("non-resize changes kept: image %s, deadline %v, labels %v, phase %s", got.Spec.Containers[0].Image,
					got.Spec.ActiveDeadlineSeconds, got.Labels, got.Status.Phase)
			}
		}},
		{name: "no change keeps the generation", change: func(*corev1.Pod) {}, wantGen: 1},
		{name: "image only: dropped, generation kept", change: func(p *corev1.Pod) { p.Spec.Containers[0].Image = "nginx" }, wantGen: 1},
		{name: "init container", change: func(p *corev1.Pod) {
			p.Spec.InitContainers[0].Resources.Requests["cpu"] = resource.MustParse("80m")
		}, wantGen: 2},
		{name: "pod without running containers", old: func(p *corev1.Pod) { p.Status.ContainerStatuses = nil }, change: func(p *corev1.Pod) {
			app(p).Requests["cpu"] = resource.MustParse("150m")
		}, wantGen: 2},
		{name: "QoS class change", change: func(p *corev1.Pod) {
			*app(p) = resources(map[corev1.ResourceName]string{"cpu": "200m", "memory": "128Mi"}, map[corev1.ResourceName]string{"cpu": "200m", "memory": "128Mi"})
			p.Spec.InitContainers[0].Resources = resources(map[corev1.ResourceName]string{"cpu": "100m", "memory": "32Mi"},
				map[corev1.ResourceName]string{"cpu": "100m", "memory": "32Mi"})
		}, wantErr: `spec: Invalid value: "Burstable": Pod QOS Class may not change as a result of resizing`},
		{name: "request removed", change: func(p *corev1.Pod) { delete(app(p).Requests, "memory") },
			wantErr: "spec.containers[0].resources.requests: Forbidden: resource requests cannot be removed"},
		{name: "limit removed", change: func(p *corev1.Pod) { delete(app(p).Limits, "cpu") },
			wantErr: "spec.containers[0].resources.limits: Forbidden: resource limits cannot be removed"},
		{name: "another resource", change: func(p *corev1.Pod) { app(p).Requests["ephemeral-storage"] = resource.MustParse("1Gi") },
			wantErr: "spec: Forbidden: only cpu and memory resources are mutable"},
		{name: "container added", change: func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "more", Image: "busybox"})
		}, wantErr: "spec.containers: Forbidden: containers may not be added or removed on resize"},
		{name: "container renamed", change: func(p *corev1.Pod) { p.Spec.Containers[0].Name = "renamed" },
			wantErr: "spec.containers[0].name: Forbidden: containers may not be renamed or reordered on resize"},
		{name: "request above limit", change: func(p *corev1.Pod) { app(p).Requests["cpu"] = resource.MustParse("300m") },
			wantErr: "spec.containers[0].resources.requests[cpu]: Invalid value: \"300m\": must be less than or equal to cpu limit of 200m"},
		// Upstream copies resizePolicy but refuses a change of it.
		{name: "resizePolicy changed", change: func(p *corev1.Pod) {
			p.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: "cpu", RestartPolicy: corev1.NotRequired}}
		}, wantErr: "spec: Forbidden: only cpu and memory resources are mutable"},
		{name: "non-sidecar init container restarted by its resize", old: func(p *corev1.Pod) {
			p.Spec.InitContainers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: "cpu", RestartPolicy: corev1.RestartContainer}}
		}, change: func(p *corev1.Pod) { p.Spec.InitContainers[0].Resources.Requests["cpu"] = resource.MustParse("80m") },
			wantErr: "spec.initContainers[0]: Forbidden: non-sidecar init containers with a resize policy of RestartContainer cannot be resized"},
		{name: "static pod", old: func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"} },
			change: func(p *corev1.Pod) { app(p).Requests["cpu"] = resource.MustParse("150m") }, wantErr: "Forbidden: static pods cannot be resized"},
		{name: "windows pod", old: func(p *corev1.Pod) { p.Spec.OS = &corev1.PodOS{Name: corev1.Windows} },
			change: func(p *corev1.Pod) { app(p).Requests["cpu"] = resource.MustParse("150m") }, wantErr: "Forbidden: windows pods cannot be resized"},
		{name: "running container without resources status", old: func(p *corev1.Pod) { p.Status.ContainerStatuses[0].Resources = nil },
			change:  func(p *corev1.Pod) { app(p).Requests["cpu"] = resource.MustParse("150m") },
			wantErr: "spec: Forbidden: Pod running on node without support for resize"},
	}
}

func TestResize(t *testing.T) {
	for _, tc := range resizeCases() {
		t.Run(tc.name, func(t *testing.T) {
			old := runningPod()
			if tc.old != nil {
				tc.old(old)
			}
			sent := old.DeepCopy()
			tc.change(sent)
			err := beforeUpdate("resize", sent, old)
			if tc.wantErr != "" {
				if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want a 422 with %q", err, tc.wantErr)
				}
				t.Log(err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if sent.Generation != tc.wantGen {
				t.Errorf("generation %d, want %d", sent.Generation, tc.wantGen)
			}
			if tc.check != nil {
				tc.check(t, sent)
			}
		})
	}
}

func TestResizeIsUpdateOnly(t *testing.T) {
	s := Kind.UpdateStrategy("resize")
	if s == nil || s.AllowCreateOnUpdate(context.Background()) {
		t.Fatalf("resize strategy %v: nil or allows create on update", s)
	}
	if Kind.UpdateStrategy("binding") != nil {
		t.Error("a strategy for an unknown subresource")
	}
}
