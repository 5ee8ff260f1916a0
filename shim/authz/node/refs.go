package node

import (
	corev1 "k8s.io/api/core/v1"
)

// VisitReferences calls visit(resource, name) for every object a pod
// references by name in its own namespace, as upstream's graph edges of
// plugin/pkg/auth/authorizer/node/graph.go (AddPod): "serviceaccounts"
// (spec.serviceAccountName), "secrets" and "configmaps" (volumes incl.
// projected ones, env and envFrom of init, regular and ephemeral
// containers, imagePullSecrets; upstream's pkg/api/pod VisitPodSecretNames
// and VisitPodConfigmapNames), "persistentvolumeclaims" (claims and
// generic ephemeral volumes' claims). Empty names are skipped; visit
// returns false to stop. Resource claims are left out: the shim serves no
// resource.k8s.io. Pure function.
func VisitReferences(pod *corev1.Pod, visit func(resource, name string) bool) {
	v := func(resource, name string) bool { return name == "" || visit(resource, name) }
	if !v("serviceaccounts", pod.Spec.ServiceAccountName) {
		return
	}
	for _, s := range pod.Spec.ImagePullSecrets {
		if !v("secrets", s.Name) {
			return
		}
	}
	if !visitContainers(&pod.Spec, v) {
		return
	}
	for i := range pod.Spec.Volumes {
		if !visitVolume(pod, &pod.Spec.Volumes[i], v) {
			return
		}
	}
}

// visitContainers visits the env and envFrom references of every
// container kind; false when visit stopped.
func visitContainers(spec *corev1.PodSpec, v func(resource, name string) bool) bool {
	var envs [][]corev1.EnvVar
	var froms [][]corev1.EnvFromSource
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			envs, froms = append(envs, cs[i].Env), append(froms, cs[i].EnvFrom)
		}
	}
	for i := range spec.EphemeralContainers {
		c := &spec.EphemeralContainers[i].EphemeralContainerCommon
		envs, froms = append(envs, c.Env), append(froms, c.EnvFrom)
	}
	for _, from := range froms {
		for _, f := range from {
			if (f.SecretRef != nil && !v("secrets", f.SecretRef.Name)) ||
				(f.ConfigMapRef != nil && !v("configmaps", f.ConfigMapRef.Name)) {
				return false
			}
		}
	}
	for _, env := range envs {
		for _, e := range env {
			if e.ValueFrom == nil {
				continue
			}
			if (e.ValueFrom.SecretKeyRef != nil && !v("secrets", e.ValueFrom.SecretKeyRef.Name)) ||
				(e.ValueFrom.ConfigMapKeyRef != nil && !v("configmaps", e.ValueFrom.ConfigMapKeyRef.Name)) {
				return false
			}
		}
	}
	return true
}

// visitVolume visits what one volume references; false when visit stopped.
func visitVolume(pod *corev1.Pod, vol *corev1.Volume, v func(resource, name string) bool) bool {
	s := &vol.VolumeSource
	switch {
	case s.Secret != nil:
		return v("secrets", s.Secret.SecretName)
	case s.ConfigMap != nil:
		return v("configmaps", s.ConfigMap.Name)
	case s.PersistentVolumeClaim != nil:
		return v("persistentvolumeclaims", s.PersistentVolumeClaim.ClaimName)
	case s.Ephemeral != nil:
		// The claim of a generic ephemeral volume is <pod>-<volume>
		// (upstream's component-helpers ephemeral.VolumeClaimName).
		return v("persistentvolumeclaims", pod.Name+"-"+vol.Name)
	case s.Projected != nil:
		for _, p := range s.Projected.Sources {
			if (p.Secret != nil && !v("secrets", p.Secret.Name)) || (p.ConfigMap != nil && !v("configmaps", p.ConfigMap.Name)) {
				return false
			}
		}
		return true
	}
	return v("secrets", volumePluginSecret(s))
}

// volumePluginSecret is the secret a volume plugin's source names, "" if none.
func volumePluginSecret(s *corev1.VolumeSource) string {
	ref := func(r *corev1.LocalObjectReference) string {
		if r == nil {
			return ""
		}
		return r.Name
	}
	switch {
	case s.AzureFile != nil:
		return s.AzureFile.SecretName
	case s.CephFS != nil:
		return ref(s.CephFS.SecretRef)
	case s.Cinder != nil:
		return ref(s.Cinder.SecretRef)
	case s.FlexVolume != nil:
		return ref(s.FlexVolume.SecretRef)
	case s.RBD != nil:
		return ref(s.RBD.SecretRef)
	case s.ScaleIO != nil:
		return ref(s.ScaleIO.SecretRef)
	case s.ISCSI != nil:
		return ref(s.ISCSI.SecretRef)
	case s.StorageOS != nil:
		return ref(s.StorageOS.SecretRef)
	case s.CSI != nil:
		return ref(s.CSI.NodePublishSecretRef)
	}
	return ""
}
