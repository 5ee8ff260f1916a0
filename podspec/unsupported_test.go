package podspec

import (
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestValidateRejectsUnsupportedFields: fields skiff does not implement are
// rejected with their path, never silently ignored.
func TestValidateRejectsUnsupportedFields(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(p *v1.Pod)
		path   string
	}{
		{"G.1 ephemeral volume", func(p *v1.Pod) {
			p.Spec.Volumes = []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{VolumeClaimTemplate: &v1.PersistentVolumeClaimTemplate{}}}}}
		}, "spec.volumes[0].ephemeral"},
		{"G.1 ephemeral volume with a template", func(p *v1.Pod) {
			p.Spec.Volumes = []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{VolumeClaimTemplate: &v1.PersistentVolumeClaimTemplate{
				Spec: v1.PersistentVolumeClaimSpec{AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}}}}}}}
		}, "spec.volumes[0].ephemeral"},
		{"G.1 nfs volume", func(p *v1.Pod) {
			p.Spec.Volumes = []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{NFS: &v1.NFSVolumeSource{Server: "s", Path: "/"}}}}
		}, "spec.volumes[0].nfs"},
		{"G.1 projected serviceAccountToken", func(p *v1.Pod) {
			p.Spec.Volumes = []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
				Sources: []v1.VolumeProjection{{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}}}}}}}
		}, "spec.volumes[0].projected.sources[0].serviceAccountToken"},
		{"G.1 emptyDir on huge pages", func(p *v1.Pod) {
			p.Spec.Volumes = []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumHugePages}}}}
		}, "spec.volumes[0].emptyDir.medium"},
		{"volumeDevices", func(p *v1.Pod) { p.Spec.Containers[0].VolumeDevices = []v1.VolumeDevice{{Name: "v"}} }, "spec.containers[0].volumeDevices"},
		{"lifecycle stopSignal", func(p *v1.Pod) {
			sig := v1.SIGTERM
			p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{StopSignal: &sig}
		}, "spec.containers[0].lifecycle.stopSignal"},
		{"ephemeralContainers", func(p *v1.Pod) {
			p.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "e"}}}
		}, "spec.ephemeralContainers"},
		{"topologySpreadConstraints", func(p *v1.Pod) {
			p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone"}}
		}, "spec.topologySpreadConstraints"},
		{"runtimeClassName", func(p *v1.Pod) { p.Spec.RuntimeClassName = ptr("gvisor") }, "spec.runtimeClassName"},
		{"overhead", func(p *v1.Pod) { p.Spec.Overhead = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")} }, "spec.overhead"},
		{"resources claims", func(p *v1.Pod) { p.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: "c"}} }, "spec.containers[0].resources.claims"},
		{"stdin", func(p *v1.Pod) { p.Spec.Containers[0].Stdin = true }, "spec.containers[0].stdin"},
		{"tty", func(p *v1.Pod) { p.Spec.InitContainers[0].TTY = true }, "spec.initContainers[0].tty"},
		{"windowsOptions", func(p *v1.Pod) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{WindowsOptions: &v1.WindowsSecurityContextOptions{RunAsUserName: ptr("u")}}
		}, "spec.containers[0].securityContext.windowsOptions"},
		{"windowsOptions false is still a choice", func(p *v1.Pod) {
			p.Spec.SecurityContext.WindowsOptions = &v1.WindowsSecurityContextOptions{HostProcess: ptr(false)}
		}, "spec.securityContext.windowsOptions"},
		{"seLinuxChangePolicy", func(p *v1.Pod) {
			p.Spec.SecurityContext.SELinuxChangePolicy = ptr(v1.SELinuxChangePolicyRecursive)
		}, "spec.securityContext.seLinuxChangePolicy"},
		{"generateName", func(p *v1.Pod) { p.GenerateName = "web-" }, "metadata.generateName"},
		{"ownerReferences", func(p *v1.Pod) { p.OwnerReferences = []metav1.OwnerReference{{Name: "o"}} }, "metadata.ownerReferences"},
		{"finalizers", func(p *v1.Pod) { p.Finalizers = []string{"example.com/f"} }, "metadata.finalizers"},
		{"topologySpreadConstraints", func(p *v1.Pod) { p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{MaxSkew: 1}} }, "spec.topologySpreadConstraints"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := validPod()
			tt.mutate(pod)
			got := errorStrings(Validate(pod))
			want := tt.path + ": Forbidden: not supported by skiff yet"
			if !strings.Contains(got, want) {
				t.Errorf("Validate() = %s\nwant an error %q", got, want)
			}
		})
	}
}

// TestValidateIgnoresEmptyUnsupportedFields: empty objects and lists carry
// no information ("lifecycle: {}", "volumes: []"), so they are accepted.
func TestValidateIgnoresEmptyUnsupportedFields(t *testing.T) {
	pod := validPod()
	pod.Spec.Volumes = []v1.Volume{}
	pod.Spec.Containers[0].Lifecycle = &v1.Lifecycle{}
	pod.Spec.Containers[0].SecurityContext = &v1.SecurityContext{}
	pod.Spec.Containers[0].Resources = v1.ResourceRequirements{Claims: []v1.ResourceClaim{}}
	if errs := Validate(pod); len(errs) != 0 {
		t.Errorf("Validate() = %s, want no errors", errorStrings(errs))
	}
}

// TestSupportedFieldPathsExist guards the allow-list against typos: every
// listed path must name a real field of v1.Pod.
func TestSupportedFieldPathsExist(t *testing.T) {
	known := map[string]bool{}
	typePatterns(reflect.TypeOf(v1.Pod{}), "", 0, known)
	for _, p := range supportedFieldPaths() {
		if !known[p] {
			t.Errorf("supportedFieldPaths() lists %q, which is not a v1.Pod field path", p)
		}
	}
}

// typePatterns records the JSON path patterns of all fields of type t.
func typePatterns(t reflect.Type, prefix string, depth int, out map[string]bool) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		if t.Kind() == reflect.Slice {
			prefix += "[*]"
		}
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || depth > 8 {
		return
	}
	for i := range t.NumField() {
		sf := t.Field(i)
		name, inline := jsonName(sf)
		if !sf.IsExported() || name == "-" {
			continue
		}
		if inline {
			typePatterns(sf.Type, prefix, depth+1, out)
			continue
		}
		p := joinPattern(prefix, name)
		out[p] = true
		typePatterns(sf.Type, p, depth+1, out)
	}
}
