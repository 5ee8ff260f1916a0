package node

import (
	"encoding/json"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/cgroups"
	"github.com/skiffnode/skiff/runtime"
)

// TestFeatureFailure: a pod that needs what the runtime lacks is refused
// with a reason naming the feature and the runtime; one that needs
// nothing special, or what the runtime has, is admitted.
func TestFeatureFailure(t *testing.T) {
	no, yes := false, true
	strict := v1.SupplementalGroupsPolicyStrict
	userns := func(p *v1.Pod) { p.Spec.HostUsers = &no }
	imageVol := func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "busybox"}}}}
	}
	all := runtime.Features{UserNamespaces: true, ImageVolumes: true, SupplementalGroupsPolicy: true, RecursiveReadOnlyMounts: true}
	tests := []struct {
		name       string
		mutate     func(*v1.Pod)
		f          runtime.Features
		wantReason string
		wantMsg    string
	}{
		{"plain pod on containerd 1.6", func(*v1.Pod) {}, runtime.Features{}, "", ""},
		{"hostUsers true", func(p *v1.Pod) { p.Spec.HostUsers = &yes }, runtime.Features{}, "", ""},
		{"hostUsers false on containerd 1.6", userns, runtime.Features{}, "UserNamespacesNotSupported",
			"can't set `spec.hostUsers: false`, runtime does not support user namespaces (containerd 1.6.20)"},
		{"hostUsers false on containerd 2", userns, all, "", ""},
		{"image volume on containerd 1.6", imageVol, runtime.Features{}, "ImageVolumesNotSupported",
			`volume "data": image volumes are not supported by the runtime (containerd 1.6.20)`},
		{"image volume on containerd 2", imageVol, all, "", ""},
		{"Strict on containerd 1.6", func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{SupplementalGroupsPolicy: &strict}
		}, runtime.Features{}, "SupplementalGroupsPolicyNotSupported", "SupplementalGroupsPolicy=Strict is not supported in this node"},
	}
	for _, tt := range tests {
		p := &v1.Pod{}
		tt.mutate(p)
		reason, msg := featureFailure(p, tt.f, "containerd 1.6.20")
		if reason != tt.wantReason || msg != tt.wantMsg {
			t.Errorf("%s: %q %q, want %q %q", tt.name, reason, msg, tt.wantReason, tt.wantMsg)
		}
		ok, r, _ := featureAdmitter(tt.f, "containerd 1.6.20")(p)
		if ok != (tt.wantReason == "") || !strings.EqualFold(r, tt.wantReason) {
			t.Errorf("%s: admitter %v %q", tt.name, ok, r)
		}
	}
}

// TestNodeRuntimeFeatures: the node status lists every handler with both
// features (containerd 2.4: "" and runc), sorted by name, and the runtime-wide
// supplementalGroupsPolicy; containerd 1.6 reports neither.
func TestNodeRuntimeFeatures(t *testing.T) {
	h, f := nodeRuntimeFeatures(runtime.Features{})
	if h != nil || f != nil {
		t.Errorf("containerd 1.6: %v %v, want none", h, f)
	}
	h, f = nodeRuntimeFeatures(runtime.Features{Reported: true, SupplementalGroupsPolicy: true, Handlers: []runtime.Handler{
		{Name: "kata", UserNamespaces: true}, {Name: "", UserNamespaces: true, RecursiveReadOnlyMounts: true}}})
	got, _ := json.Marshal(struct {
		H []v1.NodeRuntimeHandler `json:"runtimeHandlers"`
		F *v1.NodeFeatures        `json:"features"`
	}{h, f})
	want := `{"runtimeHandlers":[{"name":"","features":{"recursiveReadOnlyMounts":true,"userNamespaces":true}},` +
		`{"name":"kata","features":{"recursiveReadOnlyMounts":false,"userNamespaces":true}}],"features":{"supplementalGroupsPolicy":true}}`
	if string(got) != want {
		t.Errorf("status %s\nwant   %s", got, want)
	}
}

// TestOOMGroupKill: memory.oom.group only on cgroup v2, unless
// --single-process-oom-kill.
func TestOOMGroupKill(t *testing.T) {
	for _, tt := range []struct {
		mode   cgroups.Mode
		single bool
		want   bool
	}{{cgroups.V2, false, true}, {cgroups.V2, true, false}, {cgroups.V1, false, false}, {cgroups.V1, true, false}} {
		if got := oomGroupKill(tt.mode, tt.single); got != tt.want {
			t.Errorf("oomGroupKill(%v, %v) = %v, want %v", tt.mode, tt.single, got, tt.want)
		}
	}
}
