package manifests

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
		{"volumes", func(p *v1.Pod) { p.Spec.Volumes = []v1.Volume{{Name: "v"}} }, "spec.volumes"},
		{"volumeMounts", func(p *v1.Pod) { p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "v", MountPath: "/v"}} }, "spec.containers[0].volumeMounts"},
		{"volumeDevices", func(p *v1.Pod) { p.Spec.Containers[0].VolumeDevices = []v1.VolumeDevice{{Name: "v"}} }, "spec.containers[0].volumeDevices"},
		{"lifecycle stopSignal", func(p *v1.Pod) {
			sig := v1.SIGTERM
			p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{StopSignal: &sig}
		}, "spec.containers[0].lifecycle.stopSignal"},
		{"ephemeralContainers", func(p *v1.Pod) {
			p.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "e"}}}
		}, "spec.ephemeralContainers"},
		{"hostPID", func(p *v1.Pod) { p.Spec.HostPID = true }, "spec.hostPID"},
		{"hostIPC", func(p *v1.Pod) { p.Spec.HostIPC = true }, "spec.hostIPC"},
		{"hostUsers false", func(p *v1.Pod) { p.Spec.HostUsers = ptr(false) }, "spec.hostUsers"},
		{"affinity", func(p *v1.Pod) {
			p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{}}}}}
		}, "spec.affinity"},
		{"runtimeClassName", func(p *v1.Pod) { p.Spec.RuntimeClassName = ptr("gvisor") }, "spec.runtimeClassName"},
		{"overhead", func(p *v1.Pod) { p.Spec.Overhead = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")} }, "spec.overhead"},
		{"env fileKeyRef", func(p *v1.Pod) {
			p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "A", ValueFrom: &v1.EnvVarSource{FileKeyRef: &v1.FileKeySelector{VolumeName: "v", Path: "p", Key: "k"}}}}
		}, "spec.containers[0].env[0].valueFrom.fileKeyRef"},
		{"resizePolicy", func(p *v1.Pod) { p.Spec.Containers[0].ResizePolicy = []v1.ContainerResizePolicy{{ResourceName: "cpu"}} }, "spec.containers[0].resizePolicy"},
		{"resources claims", func(p *v1.Pod) { p.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: "c"}} }, "spec.containers[0].resources.claims"},
		{"stdin", func(p *v1.Pod) { p.Spec.Containers[0].Stdin = true }, "spec.containers[0].stdin"},
		{"tty", func(p *v1.Pod) { p.Spec.InitContainers[0].TTY = true }, "spec.initContainers[0].tty"},
		{"capabilities", func(p *v1.Pod) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{Capabilities: &v1.Capabilities{Add: []v1.Capability{"NET_ADMIN"}}}
		}, "spec.containers[0].securityContext.capabilities"},
		{"readOnlyRootFilesystem false is still a choice", func(p *v1.Pod) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{ReadOnlyRootFilesystem: ptr(false)}
		}, "spec.containers[0].securityContext.readOnlyRootFilesystem"},
		{"pod fsGroup", func(p *v1.Pod) { p.Spec.SecurityContext.FSGroup = ptr(int64(1)) }, "spec.securityContext.fsGroup"},
		{"generateName", func(p *v1.Pod) { p.GenerateName = "web-" }, "metadata.generateName"},
		{"ownerReferences", func(p *v1.Pod) { p.OwnerReferences = []metav1.OwnerReference{{Name: "o"}} }, "metadata.ownerReferences"},
		{"finalizers", func(p *v1.Pod) { p.Finalizers = []string{"example.com/f"} }, "metadata.finalizers"},
		{"spec.volumes on init image pull secrets", func(p *v1.Pod) { p.Spec.ImagePullSecrets = []v1.LocalObjectReference{{Name: "s"}} }, "spec.imagePullSecrets"},
		{"topologySpreadConstraints", func(p *v1.Pod) { p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{MaxSkew: 1}} }, "spec.topologySpreadConstraints"},
		{"shareProcessNamespace", func(p *v1.Pod) { p.Spec.ShareProcessNamespace = ptr(true) }, "spec.shareProcessNamespace"},
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
