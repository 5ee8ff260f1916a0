package nodedeclaredfeatures

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/utils/ptr"
)

// fakeNodes serves nodes from a map.
type fakeNodes map[string]*corev1.Node

func (f fakeNodes) Node(_ context.Context, name string) (*corev1.Node, error) {
	if n, ok := f[name]; ok {
		return n, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("nodes"), name)
}

// pod is a pod on nodeName at generation gen with an init container
// ("init", a sidecar if sidecar) and an app container requesting
// initCPU and appCPU.
func pod(nodeName string, gen int64, sidecar bool, initCPU, appCPU string) *corev1.Pod {
	req := func(cpu string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Generation: gen},
		Spec: corev1.PodSpec{NodeName: nodeName,
			InitContainers: []corev1.Container{{Name: "init", Resources: req(initCPU)}},
			Containers:     []corev1.Container{{Name: "app", Resources: req(appCPU)}}},
	}
	if sidecar {
		p.Spec.InitContainers[0].RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	}
	return p
}

func TestNodeDeclaredFeatures(t *testing.T) {
	skiff := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "skiff"}} // declares nothing
	declaring := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "declaring"},
		Status: corev1.NodeStatus{DeclaredFeatures: []string{"InPlacePodVerticalScalingInitContainers"}}}
	nodes := fakeNodes{"skiff": skiff, "declaring": declaring}
	cases := []struct {
		name     string
		sub      string
		obj, old *corev1.Pod
		wantErr  string
	}{
		{name: "app container resize needs nothing", sub: "resize", obj: pod("skiff", 2, false, "1", "2"), old: pod("skiff", 1, false, "1", "1")},
		{name: "sidecar resize needs nothing", sub: "resize", obj: pod("skiff", 2, true, "2", "1"), old: pod("skiff", 1, true, "1", "1")},
		{name: "init container resize on a node without the feature", sub: "resize",
			obj: pod("skiff", 2, false, "2", "1"), old: pod("skiff", 1, false, "1", "1"),
			wantErr: `pods "web" is forbidden: pod update requires features InPlacePodVerticalScalingInitContainers which are not available on node "skiff"`},
		{name: "init container resize on a node declaring it", sub: "resize",
			obj: pod("declaring", 2, false, "2", "1"), old: pod("declaring", 1, false, "1", "1")},
		{name: "missing node", sub: "resize", obj: pod("gone", 2, false, "2", "1"), old: pod("gone", 1, false, "1", "1"),
			wantErr: `node "gone" not found`},
		{name: "generation unchanged", sub: "resize", obj: pod("skiff", 1, false, "2", "1"), old: pod("skiff", 1, false, "1", "1")},
		{name: "status not checked", sub: "status", obj: pod("skiff", 2, false, "2", "1"), old: pod("skiff", 1, false, "1", "1")},
		{name: "unbound pod", sub: "resize", obj: pod("", 2, false, "2", "1"), old: pod("", 1, false, "1", "1")},
	}
	p := New(nodes, version.MajorMinor(1, 37))
	if err := p.ValidateInitialization(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := admission.NewAttributesRecord(tc.obj, tc.old, corev1.SchemeGroupVersion.WithKind("Pod"), "ns", "web",
				corev1.SchemeGroupVersion.WithResource("pods"), tc.sub, admission.Update, &metav1.UpdateOptions{}, false,
				&user.DefaultInfo{Name: "admin"})
			err := p.Validate(context.Background(), a, nil)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("error %v, want none", err)
				}
				return
			}
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want a 403 with %q", err, tc.wantErr)
			}
		})
	}
}
