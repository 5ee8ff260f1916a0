package podspec

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestGitRepoRefused_CVE_2024_10220_CVE_2025_1767: skiff does not
// implement the gitRepo volume (the kubelet ran git on the host for it:
// kubernetes#128885, hooks of the cloned repository executed on the node;
// kubernetes#130786, another pod's local repository cloned): a pod with
// one is refused, naming the field.
func TestGitRepoRefused_CVE_2024_10220_CVE_2025_1767(t *testing.T) {
	for _, repo := range []string{"https://example.com/evil.git", "/var/lib/skiff/pods/other/volumes/x"} {
		p := volPod([]v1.Volume{{Name: "src", VolumeSource: v1.VolumeSource{GitRepo: &v1.GitRepoVolumeSource{Repository: repo, Directory: "."}}}},
			v1.VolumeMount{Name: "src", MountPath: "/src"})
		errs := Validate(p)
		if len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), "spec.volumes[0].gitRepo") {
			t.Errorf("gitRepo %s: %v, want refused naming spec.volumes[0].gitRepo", repo, errs)
		}
	}
}

// TestHostPathBacksteps: a hostPath whose path climbs with ".." is
// refused, as by the API server (validatePathNoBacksteps): what a policy
// matched on the path's prefix is what is mounted.
func TestHostPathBacksteps(t *testing.T) {
	for _, path := range []string{"/var/log/../../etc", "/data/..", "/data/../shadow"} {
		p := volPod([]v1.Volume{hostPathVol("h", path, v1.HostPathDirectory)}, v1.VolumeMount{Name: "h", MountPath: "/h"})
		if errs := Validate(p); len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), "must not contain '..'") {
			t.Errorf("hostPath %s: %v, want refused", path, errs)
		}
	}
}
