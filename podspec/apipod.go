package podspec

import (
	"reflect"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// UnsupportedAPIPodFields returns a Forbidden error ("not supported by
// skiff yet") for every field of an API pod's spec that skiff does not
// implement: the allow-list of static pods plus what an API server, its
// admission plugins, the scheduler and controllers put in every pod, and
// what kubectl run -it and kubectl debug set (apiPodExtraPaths). The API
// server validated the pod already: no value is checked but an emptyDir
// medium skiff cannot mount. metadata and status are not looked at. Pure.
func UnsupportedAPIPodFields(pod *v1.Pod) field.ErrorList {
	a := newFieldAllowList(append(supportedFieldPaths(), apiPodExtraPaths()...))
	errs := a.walkStruct(reflect.ValueOf(&pod.Spec).Elem(), field.NewPath("spec"), "spec")
	for i, vol := range pod.Spec.Volumes {
		if ed := vol.EmptyDir; ed != nil && ed.Medium != v1.StorageMediumDefault && ed.Medium != v1.StorageMediumMemory {
			errs = append(errs, field.Forbidden(field.NewPath("spec", "volumes").Index(i).Child("emptyDir", "medium"), notSupported))
		}
	}
	return errs
}

// serviceAccountTokenPaths are a projected service account token's
// fields: in every API pod (ServiceAccount admission), never in a static
// pod (the kubelet's mirror pods may not use one).
func serviceAccountTokenPaths() []string {
	return []string{
		"spec.volumes[*].projected.sources[*].serviceAccountToken.audience",
		"spec.volumes[*].projected.sources[*].serviceAccountToken.expirationSeconds",
		"spec.volumes[*].projected.sources[*].serviceAccountToken.path",
	}
}

// apiPodExtraPaths are the spec fields an API pod may carry beyond a
// static pod's allow-list:
//   - set for every pod by the API server and its default admission
//     plugins: preemptionPolicy (Priority) and the projected service
//     account token of kube-api-access-* (ServiceAccount; skiff requests
//     the token, volumes/payload.go), whose audience mesh injectors set;
//   - projected clusterTrustBundle and podCertificate sources, which need
//     the API server (a static pod's would fail, as the kubelet's), but
//     not their alpha user field (AtomicWriteVolumeUserFields);
//   - the scheduler's, already satisfied when the pod was bound here:
//     topologySpreadConstraints, schedulingGates (affinity is allowed for
//     every pod: its node affinity is checked at admission);
//   - stdin, stdinOnce and tty (kubectl run -it) and ephemeral containers
//     (kubectl debug), which the agent runs and streams to;
//   - windowsOptions, which a Linux node ignores as the kubelet does.
func apiPodExtraPaths() []string {
	paths := append(serviceAccountTokenPaths(),
		"spec.preemptionPolicy",
		"spec.volumes[*].projected.sources[*].clusterTrustBundle.name",
		"spec.volumes[*].projected.sources[*].clusterTrustBundle.signerName",
		"spec.volumes[*].projected.sources[*].clusterTrustBundle.labelSelector",
		"spec.volumes[*].projected.sources[*].clusterTrustBundle.optional",
		"spec.volumes[*].projected.sources[*].clusterTrustBundle.path",
		"spec.volumes[*].projected.sources[*].podCertificate.signerName",
		"spec.volumes[*].projected.sources[*].podCertificate.keyType",
		"spec.volumes[*].projected.sources[*].podCertificate.maxExpirationSeconds",
		"spec.volumes[*].projected.sources[*].podCertificate.credentialBundlePath",
		"spec.volumes[*].projected.sources[*].podCertificate.keyPath",
		"spec.volumes[*].projected.sources[*].podCertificate.certificateChainPath",
		"spec.volumes[*].projected.sources[*].podCertificate.userAnnotations",
		"spec.topologySpreadConstraints", "spec.schedulingGates",
		"spec.securityContext.windowsOptions",
	)
	// Windows options are ignored on Linux, by the kubelet too; upstream's
	// minimal restricted pod (its e2e registry pod) sets them.
	interactive := []string{"stdin", "stdinOnce", "tty", "securityContext.windowsOptions"}
	for _, list := range []string{"spec.containers[*].", "spec.initContainers[*]."} {
		for _, f := range interactive {
			paths = append(paths, list+f)
		}
	}
	return append(paths, ephemeralContainerPaths()...)
}

// ephemeralContainerPaths are the fields of an ephemeral container skiff
// runs (kubectl debug): a container's, the interactive ones and its
// target.
func ephemeralContainerPaths() []string {
	var paths []string
	for _, f := range append(containerFieldPaths(), "stdin", "stdinOnce", "tty", "securityContext.windowsOptions", "targetContainerName") {
		paths = append(paths, "spec.ephemeralContainers[*]."+f)
	}
	return paths
}
