package podspec

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// tokenVolume is the kube-api-access volume of the shim's ServiceAccount
// admission (shim/admission/serviceaccount, which this neutral package
// may not import).
func tokenVolume() *v1.ProjectedVolumeSource {
	return &v1.ProjectedVolumeSource{
		DefaultMode: ptr(v1.ProjectedVolumeSourceDefaultMode),
		Sources: []v1.VolumeProjection{
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr(int64(3607))}},
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []v1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "namespace",
				FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		},
	}
}

// TestAPIPodTokenVolume: the kube-api-access volume the shim's
// ServiceAccount admission adds passes ValidateAPIPod; a static pod may
// not project a service account token.
func TestAPIPodTokenVolume(t *testing.T) {
	pod := &v1.Pod{}
	pod.Name, pod.Namespace = "p", "default"
	pod.Spec.Containers = []v1.Container{{Name: "c", Image: "busybox", ImagePullPolicy: v1.PullIfNotPresent,
		TerminationMessagePolicy: v1.TerminationMessageReadFile, TerminationMessagePath: "/dev/termination-log",
		VolumeMounts: []v1.VolumeMount{{Name: "kube-api-access-abcde", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}}}}
	pod.Spec.RestartPolicy, pod.Spec.DNSPolicy = v1.RestartPolicyAlways, v1.DNSClusterFirst
	pod.Spec.Volumes = []v1.Volume{{Name: "kube-api-access-abcde", VolumeSource: v1.VolumeSource{Projected: tokenVolume()}}}
	if errs := ValidateAPIPod(pod); len(errs) > 0 {
		t.Errorf("ValidateAPIPod: %v", errs)
	}
	errs := Validate(pod)
	if len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), "serviceAccountToken") {
		t.Errorf("Validate (static pod): %v, want serviceAccountToken refused", errs)
	}
}
