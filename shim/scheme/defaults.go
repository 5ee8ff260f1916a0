package scheme

import (
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/skiffnode/skiff/podspec"
)

// addDefaults registers the defaulting the decoders apply to every object
// they read (requests and storage). k8s.io/api has no defaulting functions
// (they are generated in k8s.io/kubernetes pkg/apis/core/v1), so the shim
// reuses skiff's own: podspec.SetDefaults is the kube-apiserver's pod
// defaulting for the fields skiff supports (restartPolicy, dnsPolicy,
// terminationGracePeriodSeconds, schedulerName, securityContext,
// enableServiceLinks, containers' terminationMessagePath/Policy,
// imagePullPolicy, ports' protocol, probes, volumes), and
// podspec.SetSecretDefaults sets a Secret's type to Opaque.
func addDefaults(s *runtime.Scheme) error {
	s.AddTypeDefaultingFunc(&corev1.Pod{}, func(obj any) { defaultPod(obj.(*corev1.Pod)) })
	s.AddTypeDefaultingFunc(&corev1.PodList{}, func(obj any) {
		l := obj.(*corev1.PodList)
		for i := range l.Items {
			defaultPod(&l.Items[i])
		}
	})
	s.AddTypeDefaultingFunc(&corev1.Secret{}, func(obj any) {
		sec := obj.(*corev1.Secret)
		mergeStringData(sec)
		podspec.SetSecretDefaults(sec)
	})
	s.AddTypeDefaultingFunc(&corev1.Namespace{}, func(obj any) {
		ns := obj.(*corev1.Namespace)
		if ns.Status.Phase == "" {
			ns.Status.Phase = corev1.NamespaceActive
		}
		// Upstream's SetDefaults_Namespace (I.28); the namespace registry's
		// Canonicalize sets it too, for generated names.
		if ns.Name != "" {
			if ns.Labels == nil {
				ns.Labels = map[string]string{}
			}
			ns.Labels[corev1.LabelMetadataName] = ns.Name
		}
	})
	// Upstream's SetDefaults_TokenRequestSpec.
	s.AddTypeDefaultingFunc(&authenticationv1.TokenRequest{}, func(obj any) {
		spec := &obj.(*authenticationv1.TokenRequest).Spec
		if spec.ExpirationSeconds == nil {
			spec.ExpirationSeconds = ptr.To[int64](3600)
		}
	})
	addAppsDefaults(s)
	return nil
}

// defaultPod applies podspec.SetDefaults but keeps the namespace as
// decoded: the kubelet defaults a manifest's namespace to "default", the
// API server takes it from the request path after decoding, and an object
// namespace that differs from the path's is refused.
func defaultPod(pod *corev1.Pod) {
	ns := pod.Namespace
	podspec.SetDefaults(pod)
	pod.Namespace = ns
}

// mergeStringData moves a Secret's write-only stringData into data, as
// upstream's v1 -> internal conversion does (the internal Secret has no
// stringData); stringData wins over data for the same key.
func mergeStringData(sec *corev1.Secret) {
	if len(sec.StringData) == 0 {
		sec.StringData = nil
		return
	}
	if sec.Data == nil {
		sec.Data = make(map[string][]byte, len(sec.StringData))
	}
	for k, v := range sec.StringData {
		sec.Data[k] = []byte(v)
	}
	sec.StringData = nil
}
