package scheme

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiffnode/skiff/manifests"
)

// addDefaults registers the defaulting the decoders apply to every object
// they read (requests and storage). k8s.io/api has no defaulting functions
// (they are generated in k8s.io/kubernetes pkg/apis/core/v1), so the shim
// reuses skiff's own: manifests.SetDefaults is the kube-apiserver's pod
// defaulting for the fields skiff supports (restartPolicy, dnsPolicy,
// terminationGracePeriodSeconds, schedulerName, securityContext,
// enableServiceLinks, containers' terminationMessagePath/Policy,
// imagePullPolicy, ports' protocol, probes, volumes), and
// manifests.SetSecretDefaults sets a Secret's type to Opaque.
func addDefaults(s *runtime.Scheme) error {
	s.AddTypeDefaultingFunc(&corev1.Pod{}, func(obj any) { defaultPod(obj.(*corev1.Pod)) })
	s.AddTypeDefaultingFunc(&corev1.PodList{}, func(obj any) {
		l := obj.(*corev1.PodList)
		for i := range l.Items {
			defaultPod(&l.Items[i])
		}
	})
	s.AddTypeDefaultingFunc(&corev1.Secret{}, func(obj any) { manifests.SetSecretDefaults(obj.(*corev1.Secret)) })
	s.AddTypeDefaultingFunc(&corev1.Namespace{}, func(obj any) {
		ns := obj.(*corev1.Namespace)
		if ns.Status.Phase == "" {
			ns.Status.Phase = corev1.NamespaceActive
		}
	})
	return nil
}

// defaultPod applies manifests.SetDefaults but keeps the namespace as
// decoded: the kubelet defaults a manifest's namespace to "default", the
// API server takes it from the request path after decoding, and an object
// namespace that differs from the path's is refused.
func defaultPod(pod *corev1.Pod) {
	ns := pod.Namespace
	manifests.SetDefaults(pod)
	pod.Namespace = ns
}
