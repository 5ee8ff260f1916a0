package nodestatus

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// TestInitialLabelsTaints_H1_H9: the default labels, user labels over
// them (as the kubelet lets them), taints, the attach/detach annotation.
func TestInitialLabelsTaints_H1_H9(t *testing.T) {
	taints := []v1.Taint{{Key: "os", Value: "edge", Effect: v1.TaintEffectNoSchedule}}
	n := Initial(Registration{
		Name: "edge-1", Hostname: "edge-1", OS: "linux", Arch: "arm64",
		Labels: map[string]string{"role": "edge", v1.LabelArchStable: "custom"},
		Taints: taints,
	})
	want := "beta.kubernetes.io/arch=arm64 beta.kubernetes.io/os=linux kubernetes.io/arch=custom kubernetes.io/hostname=edge-1 kubernetes.io/os=linux role=edge"
	var got []string
	for _, k := range slices.Sorted(maps.Keys(n.Labels)) {
		got = append(got, k+"="+n.Labels[k])
	}
	if strings.Join(got, " ") != want {
		t.Errorf("labels %s\nwant   %s", strings.Join(got, " "), want)
	}
	if n.Name != "edge-1" || n.Kind != "Node" || fmt.Sprint(n.Spec.Taints) != fmt.Sprint(taints) {
		t.Errorf("node %s %s taints %v", n.Kind, n.Name, n.Spec.Taints)
	}
	if n.Annotations["volumes.kubernetes.io/controller-managed-attach-detach"] != "true" {
		t.Errorf("annotations %v", n.Annotations)
	}
	taints[0].Key = "changed"
	if n.Spec.Taints[0].Key != "os" {
		t.Error("Initial shares the caller's taints slice")
	}
}

// TestSetStatus_H5_H7_H8: addresses (InternalIPs then Hostname),
// capacity, allocatable, nodeInfo, daemon endpoint; images largest first,
// at most MaxImages, at most MaxNamesPerImage names, digests first.
func TestSetStatus_H5_H7_H8(t *testing.T) {
	var imgs []Image
	for i := range MaxImages + 2 {
		imgs = append(imgs, Image{RepoTags: []string{fmt.Sprintf("img%d:1", i)}, Size: int64(i)})
	}
	imgs = append(imgs, Image{
		RepoDigests: []string{"big@sha256:1", "big@sha256:2"},
		RepoTags:    []string{"big:1", "big:2", "big:3", "big:4"}, Size: 1 << 30,
	})
	n := &v1.Node{}
	n.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeExternalIP, Address: "203.0.113.9"}}
	f := Facts{
		Hostname: "edge-1", InternalIPs: []net.IP{net.ParseIP("192.0.2.2"), net.ParseIP("fd00::2")},
		Capacity:    v1.ResourceList{v1.ResourcePods: resource.MustParse("110")},
		Allocatable: v1.ResourceList{v1.ResourcePods: resource.MustParse("100")},
		Info:        v1.NodeSystemInfo{KernelVersion: "6.1.0", OperatingSystem: "linux", ContainerRuntimeVersion: "containerd://1.6.20"},
		Images:      imgs, KubeletPort: 10250,
	}
	SetStatus(n, f)
	st := n.Status
	if got := fmt.Sprint(st.Addresses); got != "[{InternalIP 192.0.2.2} {InternalIP fd00::2} {Hostname edge-1}]" {
		t.Errorf("addresses %s", got)
	}
	if st.Capacity.Pods().Value() != 110 || st.Allocatable.Pods().Value() != 100 {
		t.Errorf("capacity %v allocatable %v", st.Capacity, st.Allocatable)
	}
	if st.NodeInfo.ContainerRuntimeVersion != "containerd://1.6.20" || st.DaemonEndpoints.KubeletEndpoint.Port != 10250 {
		t.Errorf("nodeInfo %+v endpoints %+v", st.NodeInfo, st.DaemonEndpoints)
	}
	if len(st.Images) != MaxImages {
		t.Fatalf("%d images, want %d", len(st.Images), MaxImages)
	}
	first, last := st.Images[0], st.Images[MaxImages-1]
	if fmt.Sprint(first.Names) != "[big@sha256:1 big@sha256:2 big:1 big:2 big:3]" || first.SizeBytes != 1<<30 {
		t.Errorf("largest image %+v", first)
	}
	if fmt.Sprint(last.Names) != "[img3:1]" {
		t.Errorf("smallest image listed %+v, want img3:1 (the two smallest dropped)", last)
	}
	f.Capacity[v1.ResourcePods] = resource.MustParse("1")
	if n.Status.Capacity.Pods().Value() != 110 {
		t.Error("SetStatus shares the caller's capacity")
	}
	if st.RuntimeHandlers != nil || st.Features != nil {
		t.Errorf("containerd 1.6 reports no handlers or features: %v %v", st.RuntimeHandlers, st.Features)
	}
	yes := true
	f.RuntimeHandlers = []v1.NodeRuntimeHandler{{Name: "", Features: &v1.NodeRuntimeHandlerFeatures{UserNamespaces: &yes, RecursiveReadOnlyMounts: &yes}}}
	f.Features = &v1.NodeFeatures{SupplementalGroupsPolicy: &yes}
	SetStatus(n, f)
	if len(n.Status.RuntimeHandlers) != 1 || !*n.Status.RuntimeHandlers[0].Features.UserNamespaces || !*n.Status.Features.SupplementalGroupsPolicy {
		t.Errorf("runtime handlers %v features %v", n.Status.RuntimeHandlers, n.Status.Features)
	}
	f.Features.SupplementalGroupsPolicy = nil
	if n.Status.Features.SupplementalGroupsPolicy == nil {
		t.Error("SetStatus shares the caller's features")
	}
	f.DeclaredFeatures = []string{"InPlacePodVerticalScalingInitContainers"}
	SetStatus(n, f)
	f.DeclaredFeatures[0] = "changed"
	if fmt.Sprint(n.Status.DeclaredFeatures) != "[InPlacePodVerticalScalingInitContainers]" {
		t.Errorf("declared features %v", n.Status.DeclaredFeatures)
	}
}

// TestSetStatusKeepsOthersExtendedResources: an extended resource another
// client put in the Node's capacity stays (and is allocatable in full), as
// with the kubelet; the node's own resources are replaced, a stale native
// one goes, and the node's own allocatable wins.
func TestSetStatusKeepsOthersExtendedResources(t *testing.T) {
	q := resource.MustParse
	node := &v1.Node{Status: v1.NodeStatus{
		Capacity: v1.ResourceList{
			v1.ResourceCPU: q("8"), "example.com/dongle": q("3"), "hugepages-2Mi": q("2Mi"),
			"kubernetes.io/thing": q("1"), "requests.example.com/x": q("1"),
		},
		Allocatable: v1.ResourceList{v1.ResourceCPU: q("7"), "example.com/dongle": q("1"), "example.com/stale": q("4")},
	}}
	SetStatus(node, Facts{
		Capacity:    v1.ResourceList{v1.ResourceCPU: q("2"), v1.ResourcePods: q("110"), "example.com/gpu": q("1")},
		Allocatable: v1.ResourceList{v1.ResourceCPU: q("2"), v1.ResourcePods: q("110"), "example.com/gpu": q("0")},
	})
	str := func(l v1.ResourceList) string {
		var out []string
		for _, k := range slices.Sorted(maps.Keys(l)) {
			v := l[k]
			out = append(out, string(k)+"="+v.String())
		}
		return strings.Join(out, " ")
	}
	if got, want := str(node.Status.Capacity), "cpu=2 example.com/dongle=3 example.com/gpu=1 pods=110"; got != want {
		t.Errorf("capacity %s, want %s", got, want)
	}
	if got, want := str(node.Status.Allocatable), "cpu=2 example.com/dongle=3 example.com/gpu=0 pods=110"; got != want {
		t.Errorf("allocatable %s, want %s", got, want)
	}
}

// TestNeedsReport_H10: a status is sent when it changed in anything but
// the heartbeats, or every 5 minutes anyway.
func TestNeedsReport_H10(t *testing.T) {
	sent := withCapacity()
	SetConditions(sent, Health{}, t0, nil)
	beat := sent.DeepCopy()
	SetConditions(beat, Health{}, t0.Add(10*time.Second), nil)
	pressure := sent.DeepCopy()
	SetConditions(pressure, Health{DiskPressure: true}, t0.Add(10*time.Second), nil)
	image := beat.DeepCopy()
	image.Status.Images = []v1.ContainerImage{{Names: []string{"new:1"}}}
	declared := beat.DeepCopy()
	declared.Status.DeclaredFeatures = []string{"InPlacePodVerticalScalingInitContainers"}
	userns := beat.DeepCopy()
	userns.Status.NodeInfo.RunningInUserNamespace = ptr.To(false)
	sentDeclared := sent.DeepCopy()
	sentDeclared.Status.DeclaredFeatures = []string{"Another"}
	tests := []struct {
		name   string
		status *v1.NodeStatus
		at     time.Duration
		want   bool
	}{
		{"heartbeat only", &beat.Status, 10 * time.Second, false},
		{"heartbeat only, just before 5 min", &beat.Status, DefaultReportFrequency - time.Second, false},
		{"heartbeat only, at 5 min", &beat.Status, DefaultReportFrequency, true},
		{"condition changed", &pressure.Status, 10 * time.Second, true},
		{"images changed", &image.Status, 10 * time.Second, true},
		{"nothing sent yet", &beat.Status, 0, true},
		// An API server older than 1.35 drops declaredFeatures.
		{"declared features the server dropped", &declared.Status, 10 * time.Second, false},
		{"declared features changed", &declared.Status, 10 * time.Second, true},
		{"runningInUserNamespace the server dropped", &userns.Status, 10 * time.Second, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prev := &sent.Status
			switch tc.name {
			case "nothing sent yet":
				prev = nil
			case "declared features changed":
				prev = &sentDeclared.Status
			}
			if got := NeedsReport(prev, tc.status, t0, t0.Add(tc.at), 0); got != tc.want {
				t.Errorf("NeedsReport = %t, want %t", got, tc.want)
			}
		})
	}
}
