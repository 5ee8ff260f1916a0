package podspec

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// apiServerPod is a pod as kube-apiserver 1.37 stores one a DaemonSet
// controller created, with what kubectl debug and run -it add.
func apiServerPod() *v1.Pod {
	no, preempt, exp := false, v1.PreemptLowerPriority, int64(3607)
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "agent-x7k2p", GenerateName: "agent-", Namespace: "kube-system", UID: "u1", ResourceVersion: "42", Generation: 1,
			CreationTimestamp: metav1.Now(), Finalizers: []string{"batch.kubernetes.io/job-tracking"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "d1"}},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager"}},
			Annotations:     map[string]string{"kubernetes.io/config.source": "api"},
		},
		Spec: v1.PodSpec{
			NodeName: "node", ServiceAccountName: "agent", DNSPolicy: v1.DNSClusterFirstWithHostNet, HostNetwork: true,
			PreemptionPolicy: &preempt, PriorityClassName: "system-node-critical", EnableServiceLinks: &no,
			Affinity: &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
				NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{"node"}}}}}}}},
			TopologySpreadConstraints: []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: v1.ScheduleAnyway}},
			Tolerations:               []v1.Toleration{{Operator: v1.TolerationOpExists}},
			Volumes: []v1.Volume{{Name: "kube-api-access-abcde", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
				{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Audience: "istio-ca", ExpirationSeconds: &exp, Path: "token"}},
				{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"}}},
				{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{SignerName: ptr("example.com/s"), Optional: &no, Path: "anchors.pem",
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"alive": "true"}}}},
				{PodCertificate: &v1.PodCertificateProjection{SignerName: "example.com/s", KeyType: "ECDSAP256", MaxExpirationSeconds: ptr(int32(3600)),
					CredentialBundlePath: "creds.pem", KeyPath: "key.pem", CertificateChainPath: "chain.pem", UserAnnotations: map[string]string{"example.com/a": "b"}}},
			}}}}},
			Containers: []v1.Container{{
				Name: "app", Image: "busybox", Stdin: true, StdinOnce: true, TTY: true,
				Resources:    v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("1Gi")}},
				VolumeMounts: []v1.VolumeMount{{Name: "kube-api-access-abcde", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}},
			}},
			EphemeralContainers: []v1.EphemeralContainer{{TargetContainerName: "app",
				EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debugger", Image: "busybox", Stdin: true, TTY: true}}},
		},
		Status: v1.PodStatus{Phase: v1.PodRunning},
	}
	return p
}

// TestUnsupportedAPIPodFields: what an API server, the scheduler, the
// controllers and kubectl put in pods passes; fields skiff does not
// implement are named, each with its path.
func TestUnsupportedAPIPodFields(t *testing.T) {
	if errs := UnsupportedAPIPodFields(apiServerPod()); len(errs) > 0 {
		t.Fatalf("an API server's pod refused: %v", errs)
	}
	p := apiServerPod()
	p.Spec.Resources = &v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}}
	p.Spec.RuntimeClassName = ptr("gvisor")
	p.Spec.Volumes[0].Projected.Sources = append(p.Spec.Volumes[0].Projected.Sources,
		v1.VolumeProjection{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{Name: ptr("root"), Path: "root.pem", User: ptr(int64(1000))}},
		v1.VolumeProjection{PodCertificate: &v1.PodCertificateProjection{SignerName: "example.com/s", CredentialBundlePath: "creds.pem", User: ptr(int64(1000))}})
	p.Spec.Volumes = append(p.Spec.Volumes,
		v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}},
		v1.Volume{Name: "huge", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumHugePages}}})
	var got []string
	for _, e := range UnsupportedAPIPodFields(p) {
		got = append(got, e.Error())
	}
	for _, want := range []string{
		"spec.volumes[2].emptyDir.medium: Forbidden: not supported by skiff yet",
		"spec.runtimeClassName: Forbidden: not supported by skiff yet",
		"spec.resources: Forbidden: not supported by skiff yet",
		"spec.volumes[0].projected.sources[4].clusterTrustBundle.user: Forbidden: not supported by skiff yet",
		"spec.volumes[0].projected.sources[5].podCertificate.user: Forbidden: not supported by skiff yet",
	} {
		if !strings.Contains(strings.Join(got, "\n"), want) {
			t.Errorf("missing %q in:\n%s", want, strings.Join(got, "\n"))
		}
	}
	// The claim (volumes[1]) is allowed: the node reads it through the API.
	if len(got) != 5 {
		t.Errorf("%d errors, want 5:\n%s", len(got), strings.Join(got, "\n"))
	}
}
