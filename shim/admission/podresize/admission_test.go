package podresize

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
)

// fakeNodes serves nodes from a map, or err.
type fakeNodes struct {
	nodes map[string]*corev1.Node
	err   error
}

func (f fakeNodes) Node(_ context.Context, name string) (*corev1.Node, error) {
	if f.err != nil {
		return nil, f.err
	}
	if n, ok := f.nodes[name]; ok {
		return n, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("nodes"), name)
}

func node(name, os string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")}}}
	if os != "" {
		n.Labels[corev1.LabelOSStable] = os
	}
	return n
}

// pod is a pod on nodeName at generation gen whose container requests cpu
// and memory, with an init container requesting 1 cpu.
func pod(nodeName string, gen int64, cpu, memory string) *corev1.Pod {
	req := func(cpu, memory string) corev1.ResourceRequirements {
		l := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
		if memory != "" {
			l[corev1.ResourceMemory] = resource.MustParse(memory)
		}
		return corev1.ResourceRequirements{Requests: l}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Generation: gen},
		Spec: corev1.PodSpec{NodeName: nodeName,
			InitContainers: []corev1.Container{{Name: "init", Resources: req("1", "")}},
			Containers:     []corev1.Container{{Name: "app", Resources: req(cpu, memory)}}},
	}
}

func TestResizeValidator(t *testing.T) {
	nodes := fakeNodes{nodes: map[string]*corev1.Node{"linux": node("linux", "linux"), "unlabelled": node("unlabelled", ""),
		"windows": node("windows", "windows")}}
	old := pod("linux", 1, "1", "1Gi")
	cases := []struct {
		name        string
		sub         string
		nodes       Nodes
		obj, old    runtime.Object
		wantErr     string // substring of the 403's message; "" for none
		wantReason  metav1.CauseType
		wantRequest bool // a 400 instead of a 403
	}{
		{name: "within allocatable", sub: "resize", obj: pod("linux", 2, "2", "2Gi"), old: old},
		{name: "all of allocatable", sub: "resize", obj: pod("linux", 2, "4", "8Gi"), old: old},
		{name: "node without os label", sub: "resize", obj: pod("unlabelled", 2, "2", "2Gi"), old: pod("unlabelled", 1, "1", "1Gi")},
		{name: "cpu above allocatable", sub: "resize", obj: pod("linux", 2, "5", "1Gi"), old: old, wantReason: ReasonNodeCapacity,
			wantErr: `pods "web" is forbidden: node didn't have enough allocatable resources: cpu, requested: 5000, allocatable: 4000`},
		{name: "memory above allocatable", sub: "resize", obj: pod("linux", 2, "1", "9Gi"), old: old, wantReason: ReasonNodeCapacity,
			wantErr: "node didn't have enough allocatable resources: memory, requested: 9663676416, allocatable: 8589934592"},
		{name: "both above allocatable", sub: "resize", obj: pod("linux", 2, "5", "9Gi"), old: old, wantReason: ReasonNodeCapacity,
			wantErr: "cpu, requested: 5000, allocatable: 4000; memory, requested: 9663676416"},
		// The init container (1 cpu) runs before the app containers: the
		// pod needs max(init, sum of app containers), 3.5 and not 4.5.
		{name: "init container counted as the kubelet does", sub: "resize", obj: pod("linux", 2, "3500m", "1Gi"), old: old},
		{name: "windows node", sub: "resize", obj: pod("windows", 2, "2", "1Gi"), old: pod("windows", 1, "1", "1Gi"),
			wantReason: ReasonUnsupportedPlatform, wantErr: `pod resize is only supported on linux nodes, node "windows" is "windows"`},
		{name: "missing node", sub: "resize", obj: pod("gone", 2, "2", "1Gi"), old: pod("gone", 1, "1", "1Gi"), wantErr: `node "gone" not found`},
		{name: "node read fails", sub: "resize", nodes: fakeNodes{err: errors.New("boom")}, obj: pod("linux", 2, "2", "1Gi"), old: old,
			wantErr: `failed to get node "linux": boom`},
		{name: "main resource not checked", sub: "", obj: pod("linux", 2, "10", "1Gi"), old: old},
		{name: "status not checked", sub: "status", obj: pod("linux", 2, "10", "1Gi"), old: old},
		{name: "generation unchanged", sub: "resize", obj: pod("linux", 1, "10", "1Gi"), old: old},
		{name: "unbound pod", sub: "resize", obj: pod("", 2, "10", "1Gi"), old: pod("", 1, "1", "1Gi")},
		{name: "not a pod", sub: "resize", obj: &corev1.Node{}, old: old, wantRequest: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lookup := tc.nodes
			if lookup == nil {
				lookup = nodes
			}
			p := New(lookup)
			if err := p.ValidateInitialization(); err != nil {
				t.Fatal(err)
			}
			a := admission.NewAttributesRecord(tc.obj, tc.old, corev1.SchemeGroupVersion.WithKind("Pod"), "ns", "web",
				corev1.SchemeGroupVersion.WithResource("pods"), tc.sub, admission.Update, &metav1.UpdateOptions{}, false,
				&user.DefaultInfo{Name: "admin"})
			err := p.Validate(context.Background(), a, nil)
			checkErr(t, err, tc.wantErr, tc.wantReason, tc.wantRequest)
		})
	}
}

// checkErr checks err: nil when want is empty (and no 400 is wanted),
// else a 403 whose message contains want and whose causes hold reason.
func checkErr(t *testing.T, err error, want string, reason metav1.CauseType, badRequest bool) {
	t.Helper()
	switch {
	case badRequest:
		if !apierrors.IsBadRequest(err) {
			t.Fatalf("error %v, want a 400", err)
		}
		return
	case want == "":
		if err != nil {
			t.Fatalf("error %v, want none", err)
		}
		return
	}
	var status *apierrors.StatusError
	if !errors.As(err, &status) || !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want a 403 with %q", err, want)
	}
	if reason == "" {
		return
	}
	for _, c := range status.ErrStatus.Details.Causes {
		if c.Type == reason {
			return
		}
	}
	t.Errorf("causes %v, want %s", status.ErrStatus.Details.Causes, reason)
}
