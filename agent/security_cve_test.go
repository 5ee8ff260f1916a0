package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/runtime"
)

// TestSeccompLocalhostEmpty_CVE_2023_2431: a container whose effective
// seccomp profile is Localhost without a profile, or with an empty one
// (which API validation accepts), is refused with the kubelet's
// CreateContainerConfigError message (kubernetes#118690: it ran
// unconfined); a Localhost profile that names a file, or a container
// field that overrides the pod's empty one, runs with it.
func TestSeccompLocalhostEmpty_CVE_2023_2431(t *testing.T) {
	empty, named := "", "audit.json"
	localhost := func(p *string) *v1.SeccompProfile {
		return &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: p}
	}
	tests := []struct {
		name          string
		pod, ctr      *v1.SeccompProfile
		refused       bool
		wantProfile   runtime.ProfileType
		wantLocalhost string
	}{
		{"container Localhost, empty profile", nil, localhost(&empty), true, 0, ""},
		{"container Localhost, no profile", nil, localhost(nil), true, 0, ""},
		{"pod Localhost, empty profile", localhost(&empty), nil, true, 0, ""},
		{"pod Localhost empty, container RuntimeDefault", localhost(&empty), &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}, false, runtime.ProfileRuntimeDefault, ""},
		{"container Localhost, a profile", nil, localhost(&named), false, runtime.ProfileLocalhost, "/var/lib/skiff/seccomp/audit.json"},
	}
	p, err := newSecurityPolicy(SecurityConfig{SeccompProfileRoot: "/var/lib/skiff/seccomp"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{SecurityContext: &v1.PodSecurityContext{SeccompProfile: tt.pod},
				Containers: []v1.Container{{Name: "app", SecurityContext: &v1.SecurityContext{SeccompProfile: tt.ctr}}}}}
			var spec runtime.ContainerSpec
			err := p.completeContainerSpec(context.Background(), nil, pod, &pod.Spec.Containers[0], &spec)
			var ce *configError
			if tt.refused {
				if !errors.As(err, &ce) || err.Error() != "localhostProfile must be set if seccompProfile type is Localhost." {
					t.Errorf("completeContainerSpec = %v, want the kubelet's configuration error", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("completeContainerSpec = %v", err)
			}
			if got := spec.Security.Seccomp; got == nil || got.Type != tt.wantProfile || got.LocalhostRef != tt.wantLocalhost {
				t.Errorf("seccomp = %+v, want %v %q", got, tt.wantProfile, tt.wantLocalhost)
			}
		})
	}
}

// TestAPIDataVolumeMountsReadOnly_CVE_2017_1002102: a container mounts a
// configMap, secret, downwardAPI or projected volume (PodVolume.ReadOnly)
// read-only even when its volumeMount says readOnly: false, by subPath
// too: kubernetes#60814's fix (ReadOnlyAPIDataVolumes), without which a
// container could plant symlinks for the atomic writer to follow. An
// emptyDir stays writable.
func TestAPIDataVolumeMountsReadOnly_CVE_2017_1002102(t *testing.T) {
	cfg, scratch := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(cfg, "k"), []byte("v"), 0o644); err != nil {
		t.Fatal(err)
	}
	vols := map[string]PodVolume{"cfg": {HostPath: cfg, ReadOnly: true}, "scratch": {HostPath: scratch}}
	c := &v1.Container{Name: "app", VolumeMounts: []v1.VolumeMount{
		{Name: "cfg", MountPath: "/cfg", ReadOnly: false},
		{Name: "cfg", MountPath: "/k", SubPath: "k", ReadOnly: false},
		{Name: "scratch", MountPath: "/scratch"},
	}}
	ms, err := containerMounts(c, vols, nil, nil, mountOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, true, false} {
		if ms[i].ReadOnly != want {
			t.Errorf("mount %s: ReadOnly %v, want %v", ms[i].ContainerPath, ms[i].ReadOnly, want)
		}
	}
}
