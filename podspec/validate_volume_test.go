package podspec

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// volPod returns validPod with volumes vols; the app container mounts
// each of mounts.
func volPod(vols []v1.Volume, mounts ...v1.VolumeMount) *v1.Pod {
	p := validPod()
	p.Spec.Volumes = vols
	p.Spec.Containers[0].VolumeMounts = mounts
	SetDefaults(p)
	return p
}

func emptyDirVol(name string) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}
}

func hostPathVol(name, path string, typ v1.HostPathType) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: path, Type: &typ}}}
}

func cmVol(name string, items ...v1.KeyToPath) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
		LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Items: items}}}
}

func dapiVol(name string, items ...v1.DownwardAPIVolumeFile) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: items}}}
}

// TestValidateVolumes_G1 checks each volume and volumeMount rule; want
// lists substrings that must all appear in the errors (nil: valid).
func TestValidateVolumes_G1(t *testing.T) {
	mnt := func(name, path string) v1.VolumeMount { return v1.VolumeMount{Name: name, MountPath: path} }
	prop := func(m v1.MountPropagationMode) *v1.MountPropagationMode { return &m }
	tests := []struct {
		name string
		pod  *v1.Pod
		want []string
	}{
		{"every supported type with mounts is valid", volPod([]v1.Volume{
			emptyDirVol("scratch"),
			{Name: "mem", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: ptr(resource.MustParse("64Mi"))}}},
			hostPathVol("certs", "/etc/kubernetes/pki", v1.HostPathDirectoryOrCreate),
			cmVol("cfg", v1.KeyToPath{Key: "a", Path: "dir/a", Mode: ptr(int32(0o400))}),
			{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s", Optional: ptr(true)}}},
			dapiVol("info", v1.DownwardAPIVolumeFile{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
				v1.DownwardAPIVolumeFile{Path: "tier", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels['tier']"}},
				v1.DownwardAPIVolumeFile{Path: "mem", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.memory"}}),
			{Name: "all", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
				{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}},
				{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "s"}}},
				{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}},
			}}}},
		}, mnt("scratch", "/scratch"), v1.VolumeMount{Name: "cfg", MountPath: "/etc/app", ReadOnly: true, SubPath: "dir"},
			v1.VolumeMount{Name: "certs", MountPath: "/certs", SubPathExpr: "$(POD_NAME)", MountPropagation: prop(v1.MountPropagationHostToContainer)}), nil},
		{"a volume without a source defaults to emptyDir", volPod([]v1.Volume{{Name: "v"}}, mnt("v", "/v")), nil},
		{"volume name required", volPod([]v1.Volume{emptyDirVol("")}), []string{"spec.volumes[0].name: Required value"}},
		{"volume name is a DNS label", volPod([]v1.Volume{emptyDirVol("Data_1")}), []string{`spec.volumes[0].name: Invalid value: "Data_1"`}},
		{"volume names unique", volPod([]v1.Volume{emptyDirVol("a"), emptyDirVol("a")}), []string{`spec.volumes[1].name: Duplicate value: "a"`}},
		{"no volume type (undefaulted)", func() *v1.Pod {
			p := validPod()
			p.Spec.Volumes = []v1.Volume{{Name: "v"}}
			return p
		}(), []string{"spec.volumes[0]: Required value: must specify a volume type"}},
		{"two volume types", volPod([]v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{
			EmptyDir: &v1.EmptyDirVolumeSource{}, HostPath: &v1.HostPathVolumeSource{Path: "/x"}}}}),
			[]string{"spec.volumes[0].emptyDir: Forbidden: may not specify more than 1 volume type"}},
		{"empty unsupported type is forbidden", volPod([]v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{NFS: &v1.NFSVolumeSource{}}}}),
			[]string{"spec.volumes[0].nfs: Forbidden: not supported by skiff yet"}},
		{"hostPath path required", volPod([]v1.Volume{hostPathVol("h", "", "")}), []string{"spec.volumes[0].hostPath.path: Required value"}},
		{"hostPath path absolute", volPod([]v1.Volume{hostPathVol("h", "var/data", "")}), []string{`spec.volumes[0].hostPath.path: Invalid value: "var/data": must be an absolute path`}},
		{"hostPath path without ..", volPod([]v1.Volume{hostPathVol("h", "/var/../etc", "")}), []string{`spec.volumes[0].hostPath.path: Invalid value: "/var/../etc": must not contain '..'`}},
		{"hostPath type enum", volPod([]v1.Volume{hostPathVol("h", "/x", "Folder")}), []string{`spec.volumes[0].hostPath.type: Unsupported value: "Folder"`}},
		{"emptyDir medium enum", volPod([]v1.Volume{{Name: "e", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: "Disk"}}}}),
			[]string{`spec.volumes[0].emptyDir.medium: Unsupported value: "Disk"`}},
		{"emptyDir negative sizeLimit", volPod([]v1.Volume{{Name: "e", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: ptr(resource.MustParse("-1"))}}}}),
			[]string{"spec.volumes[0].emptyDir.sizeLimit: Forbidden"}},
		{"configMap name required", volPod([]v1.Volume{{Name: "c", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}}}),
			[]string{"spec.volumes[0].configMap.name: Required value"}},
		{"secret name required", volPod([]v1.Volume{{Name: "s", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{}}}}),
			[]string{"spec.volumes[0].secret.secretName: Required value"}},
		{"defaultMode range", volPod([]v1.Volume{{Name: "s", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s", DefaultMode: ptr(int32(0o1000))}}}}),
			[]string{"spec.volumes[0].secret.defaultMode: Invalid value: 512: " + fileModeErrorMsg}},
		{"item mode range", volPod([]v1.Volume{cmVol("c", v1.KeyToPath{Key: "k", Path: "p", Mode: ptr(int32(-1))})}),
			[]string{"spec.volumes[0].configMap.items[0].mode: Invalid value: -1"}},
		{"item key required", volPod([]v1.Volume{cmVol("c", v1.KeyToPath{Path: "p"})}), []string{"spec.volumes[0].configMap.items[0].key: Required value"}},
		{"item path required", volPod([]v1.Volume{cmVol("c", v1.KeyToPath{Key: "k"})}), []string{"spec.volumes[0].configMap.items[0].path: Required value"}},
		{"item path relative", volPod([]v1.Volume{cmVol("c", v1.KeyToPath{Key: "k", Path: "/etc/x"})}),
			[]string{`spec.volumes[0].configMap.items[0].path: Invalid value: "/etc/x": must be a relative path`}},
		{"item path without ..", volPod([]v1.Volume{cmVol("c", v1.KeyToPath{Key: "k", Path: "a/../../x"})}),
			[]string{`spec.volumes[0].configMap.items[0].path: Invalid value: "a/../../x": must not contain '..'`}},
		{"item path not starting with ..", volPod([]v1.Volume{cmVol("c", v1.KeyToPath{Key: "k", Path: "..data"})}),
			[]string{`spec.volumes[0].configMap.items[0].path: Invalid value: "..data": must not start with '..'`}},
		{"downwardAPI fieldPath supported", volPod([]v1.Volume{dapiVol("d", v1.DownwardAPIVolumeFile{Path: "ip", FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}})}),
			[]string{`spec.volumes[0].downwardAPI.items[0].fieldRef.fieldPath: Unsupported value: "status.podIP"`}},
		{"downwardAPI one of fieldRef and resourceFieldRef", volPod([]v1.Volume{dapiVol("d", v1.DownwardAPIVolumeFile{Path: "x"})}),
			[]string{"spec.volumes[0].downwardAPI.items[0]: Required value: one of fieldRef and resourceFieldRef is required"}},
		{"downwardAPI not both", volPod([]v1.Volume{dapiVol("d", v1.DownwardAPIVolumeFile{Path: "x",
			FieldRef:         &v1.ObjectFieldSelector{FieldPath: "metadata.name"},
			ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.cpu"}})}),
			[]string{"fieldRef and resourceFieldRef can not be specified simultaneously"}},
		{"downwardAPI resourceFieldRef needs its container", volPod([]v1.Volume{dapiVol("d", v1.DownwardAPIVolumeFile{Path: "x",
			ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.cpu"}})}),
			[]string{"spec.volumes[0].downwardAPI.items[0].resourceFieldRef.containerName: Required value"}},
		{"downwardAPI resource name", volPod([]v1.Volume{dapiVol("d", v1.DownwardAPIVolumeFile{Path: "x",
			ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.gpu"}})}),
			[]string{`spec.volumes[0].downwardAPI.items[0].resourceFieldRef.resource: Unsupported value: "limits.gpu"`}},
		{"projected duplicate paths", volPod([]v1.Volume{{Name: "p", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "a"}, Items: []v1.KeyToPath{{Key: "k", Path: "x"}}}},
			{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "b"}, Items: []v1.KeyToPath{{Key: "k", Path: "x"}}}},
		}}}}}), []string{`spec.volumes[0].projected.sources[1].secret.items[0].path: Invalid value: "x": conflicting duplicate paths`}},
		{"mount name required", volPod(nil, mnt("", "/x")), []string{"spec.containers[0].volumeMounts[0].name: Required value"}},
		{"mount of an undeclared volume", volPod(nil, mnt("nope", "/x")), []string{`spec.containers[0].volumeMounts[0].name: Not found: "nope"`}},
		{"mountPath required", volPod([]v1.Volume{emptyDirVol("v")}, mnt("v", "")), []string{"spec.containers[0].volumeMounts[0].mountPath: Required value"}},
		{"mountPath absolute", volPod([]v1.Volume{emptyDirVol("v")}, mnt("v", "data")),
			[]string{`spec.containers[0].volumeMounts[0].mountPath: Invalid value: "data": must be an absolute path`}},
		{"mountPath unique", volPod([]v1.Volume{emptyDirVol("v"), emptyDirVol("w")}, mnt("v", "/d"), mnt("w", "/d/")),
			[]string{`spec.containers[0].volumeMounts[1].mountPath: Invalid value: "/d/": must be unique`}},
		{"subPath relative", volPod([]v1.Volume{emptyDirVol("v")}, v1.VolumeMount{Name: "v", MountPath: "/d", SubPath: "/abs"}),
			[]string{`spec.containers[0].volumeMounts[0].subPath: Invalid value: "/abs": must be a relative path`}},
		{"subPath without ..", volPod([]v1.Volume{emptyDirVol("v")}, v1.VolumeMount{Name: "v", MountPath: "/d", SubPath: "a/../.."}),
			[]string{`spec.containers[0].volumeMounts[0].subPath: Invalid value: "a/../..": must not contain '..'`}},
		{"subPathExpr without ..", volPod([]v1.Volume{emptyDirVol("v")}, v1.VolumeMount{Name: "v", MountPath: "/d", SubPathExpr: "../$(X)"}),
			[]string{`spec.containers[0].volumeMounts[0].subPathExpr: Invalid value: "../$(X)": must not contain '..'`}},
		{"subPath and subPathExpr exclusive", volPod([]v1.Volume{emptyDirVol("v")}, v1.VolumeMount{Name: "v", MountPath: "/d", SubPath: "a", SubPathExpr: "b"}),
			[]string{"spec.containers[0].volumeMounts[0].subPathExpr: Invalid value: \"b\": subPathExpr and subPath are mutually exclusive"}},
		{"mountPropagation enum", volPod([]v1.Volume{emptyDirVol("v")}, v1.VolumeMount{Name: "v", MountPath: "/d", MountPropagation: prop("Shared")}),
			[]string{`spec.containers[0].volumeMounts[0].mountPropagation: Unsupported value: "Shared"`}},
		{"recursiveReadOnly Enabled, read-only", volPod([]v1.Volume{emptyDirVol("v")}, v1.VolumeMount{Name: "v", MountPath: "/d", ReadOnly: true, RecursiveReadOnly: rro(v1.RecursiveReadOnlyEnabled)}), nil},
		{"recursiveReadOnly needs readOnly and no propagation", volPod([]v1.Volume{emptyDirVol("v")}, v1.VolumeMount{Name: "v", MountPath: "/d", RecursiveReadOnly: rro(v1.RecursiveReadOnlyIfPossible), MountPropagation: prop(v1.MountPropagationHostToContainer)}),
			[]string{"spec.containers[0].volumeMounts[0].recursiveReadOnly: Forbidden: may only be specified when readOnly is true",
				"spec.containers[0].volumeMounts[0].recursiveReadOnly: Forbidden: may only be specified when mountPropagation is None or not specified"}},
		{"recursiveReadOnly enum", volPod([]v1.Volume{emptyDirVol("v")}, v1.VolumeMount{Name: "v", MountPath: "/d", ReadOnly: true, RecursiveReadOnly: rro("Always")}),
			[]string{`spec.containers[0].volumeMounts[0].recursiveReadOnly: Unsupported value: "Always"`}},
		{"Bidirectional only for privileged containers", volPod([]v1.Volume{emptyDirVol("v")}, v1.VolumeMount{Name: "v", MountPath: "/d", MountPropagation: prop(v1.MountPropagationBidirectional)}),
			[]string{"spec.containers[0].volumeMounts[0].mountPropagation: Forbidden: Bidirectional mount propagation is available only to privileged containers"}},
		{"Bidirectional for a privileged container", func() *v1.Pod {
			p := volPod([]v1.Volume{emptyDirVol("v")}, v1.VolumeMount{Name: "v", MountPath: "/d", MountPropagation: prop(v1.MountPropagationBidirectional)})
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{Privileged: ptr(true)}
			return p
		}(), nil},
		{"init container mounts are checked", func() *v1.Pod {
			p := volPod(nil)
			p.Spec.InitContainers[0].VolumeMounts = []v1.VolumeMount{mnt("nope", "/x")}
			return p
		}(), []string{`spec.initContainers[0].volumeMounts[0].name: Not found: "nope"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkValidate(t, tt.pod, tt.want)
		})
	}
}

// TestValidatePersistentVolumeClaim: an API pod may use a claim (a
// claimName that is a DNS subdomain, readOnly); a static pod may not,
// with an error that names the field and says why.
func TestValidatePersistentVolumeClaim(t *testing.T) {
	claim := func(name string, readOnly bool) v1.Volume {
		return v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: name, ReadOnly: readOnly}}}
	}
	static := "spec.volumes[0].persistentVolumeClaim: Forbidden: " + staticClaimForbidden
	mount := v1.VolumeMount{Name: "data", MountPath: "/data"}
	tests := []struct {
		name                string
		vols                []v1.Volume
		wantAPI, wantStatic []string
	}{
		{"a claim", []v1.Volume{claim("www-web-0", false)}, nil, []string{static}},
		{"a read-only claim", []v1.Volume{claim("shared.example", true)}, nil, []string{static}},
		{"claimName required", []v1.Volume{claim("", false)}, []string{"spec.volumes[0].persistentVolumeClaim.claimName: Required value"}, []string{static}},
		{"claimName is a DNS subdomain", []v1.Volume{claim("Data_1", false)},
			[]string{`spec.volumes[0].persistentVolumeClaim.claimName: Invalid value: "Data_1": a lowercase RFC 1123 subdomain`}, []string{static}},
		{"an empty claim source", []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{}}}},
			[]string{"spec.volumes[0].persistentVolumeClaim.claimName: Required value"}, []string{static}},
		{"with another type", []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{},
			PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}}},
			[]string{"spec.volumes[0].persistentVolumeClaim: Forbidden: may not specify more than 1 volume type"},
			[]string{"spec.volumes[0].persistentVolumeClaim: Forbidden: may not specify more than 1 volume type"}},
		{"with an unsupported type", []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{NFS: &v1.NFSVolumeSource{Server: "s", Path: "/"},
			PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}}},
			[]string{"spec.volumes[0].nfs: Forbidden: not supported by skiff yet"}, []string{"spec.volumes[0].nfs: Forbidden: not supported by skiff yet", static}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := volPod(tt.vols, mount)
			for _, check := range []struct {
				name string
				errs field.ErrorList
				want []string
			}{{"ValidateAPIPod", ValidateAPIPod(pod), tt.wantAPI}, {"Validate", Validate(pod), tt.wantStatic}} {
				got := errorStrings(check.errs)
				if len(check.want) == 0 && got != "" {
					t.Errorf("%s = %s, want no errors", check.name, got)
				}
				for _, w := range check.want {
					if !strings.Contains(got, w) {
						t.Errorf("%s = %s\nwant an error containing %q", check.name, got, w)
					}
				}
			}
		})
	}
}

// TestSetDefaultsVolumes_G1: the API server's volume defaults.
func TestSetDefaultsVolumes_G1(t *testing.T) {
	p := volPod([]v1.Volume{{Name: "none"}, cmVol("c"), hostPathVol("h", "/x", ""),
		dapiVol("d", v1.DownwardAPIVolumeFile{Path: "n", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}})})
	p.Spec.Volumes[2].HostPath.Type = nil
	SetDefaults(p)
	vols := p.Spec.Volumes
	if vols[0].EmptyDir == nil {
		t.Errorf("volume without source = %+v, want emptyDir", vols[0].VolumeSource)
	}
	if m := vols[1].ConfigMap.DefaultMode; m == nil || *m != 0o644 {
		t.Errorf("configMap defaultMode = %v, want 0644", m)
	}
	if typ := vols[2].HostPath.Type; typ == nil || *typ != "" {
		t.Errorf("hostPath type = %v, want \"\"", typ)
	}
	if v := vols[3].DownwardAPI.Items[0].FieldRef.APIVersion; v != "v1" {
		t.Errorf("fieldRef apiVersion = %q, want v1", v)
	}
}

func rro(m v1.RecursiveReadOnlyMode) *v1.RecursiveReadOnlyMode { return &m }
