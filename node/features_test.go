package node

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

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
