package cliview

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// volumes writes the Volumes section for the volume types a node agent can
// meet in a pod spec, in kubectl's wording; others are "<unknown>".
func (d *describer) volumes(vols []v1.Volume) {
	if len(vols) == 0 {
		d.write(level0, "Volumes:\t<none>\n")
		return
	}
	d.write(level0, "Volumes:\n")
	for _, v := range vols {
		d.write(level1, "%v:\n", v.Name)
		src := v.VolumeSource
		switch {
		case src.HostPath != nil:
			typ := "<none>"
			if src.HostPath.Type != nil {
				typ = string(*src.HostPath.Type)
			}
			d.write(level2, "Type:\tHostPath (bare host directory volume)\n    Path:\t%v\n    HostPathType:\t%v\n", src.HostPath.Path, typ)
		case src.EmptyDir != nil:
			limit := "<unset>"
			if l := src.EmptyDir.SizeLimit; l != nil && l.Cmp(resource.Quantity{}) > 0 {
				limit = l.String()
			}
			d.write(level2, "Type:\tEmptyDir (a temporary directory that shares a pod's lifetime)\n    Medium:\t%v\n    SizeLimit:\t%v\n", src.EmptyDir.Medium, limit)
		case src.Secret != nil:
			d.write(level2, "Type:\tSecret (a volume populated by a Secret)\n    SecretName:\t%v\n    Optional:\t%v\n", src.Secret.SecretName, isTrue(src.Secret.Optional))
		case src.ConfigMap != nil:
			d.write(level2, "Type:\tConfigMap (a volume populated by a ConfigMap)\n    Name:\t%v\n    Optional:\t%v\n", src.ConfigMap.Name, isTrue(src.ConfigMap.Optional))
		case src.PersistentVolumeClaim != nil:
			d.write(level2, "Type:\tPersistentVolumeClaim (a reference to a PersistentVolumeClaim in the same namespace)\n    ClaimName:\t%v\n    ReadOnly:\t%v\n", src.PersistentVolumeClaim.ClaimName, src.PersistentVolumeClaim.ReadOnly)
		case src.DownwardAPI != nil:
			d.downwardAPIVolume(src.DownwardAPI)
		case src.Projected != nil:
			d.projectedVolume(src.Projected)
		case src.Image != nil:
			d.write(level2, "Type:\tImage (a container image or OCI artifact)\n    Reference:\t%v\n    PullPolicy:\t%v\n", src.Image.Reference, src.Image.PullPolicy)
		default:
			d.write(level1, "<unknown>\n")
		}
	}
}

func (d *describer) downwardAPIVolume(src *v1.DownwardAPIVolumeSource) {
	d.write(level2, "Type:\tDownwardAPI (a volume populated by information about the pod)\n    Items:\n")
	for _, item := range src.Items {
		if item.FieldRef != nil {
			d.write(level3, "%v -> %v\n", item.FieldRef.FieldPath, item.Path)
		}
		if item.ResourceFieldRef != nil {
			d.write(level3, "%v -> %v\n", item.ResourceFieldRef.Resource, item.Path)
		}
	}
}

func (d *describer) projectedVolume(src *v1.ProjectedVolumeSource) {
	d.write(level2, "Type:\tProjected (a volume that contains injected data from multiple sources)\n")
	for _, s := range src.Sources {
		switch {
		case s.Secret != nil:
			d.write(level2, "SecretName:\t%v\n    Optional:\t%v\n", s.Secret.Name, isTrue(s.Secret.Optional))
		case s.DownwardAPI != nil:
			d.write(level2, "DownwardAPI:\ttrue\n")
		case s.ConfigMap != nil:
			d.write(level2, "ConfigMapName:\t%v\n    Optional:\t%v\n", s.ConfigMap.Name, isTrue(s.ConfigMap.Optional))
		case s.ServiceAccountToken != nil && s.ServiceAccountToken.ExpirationSeconds != nil:
			d.write(level2, "TokenExpirationSeconds:\t%d\n", *s.ServiceAccountToken.ExpirationSeconds)
		}
	}
}

func isTrue(b *bool) bool { return b != nil && *b }

// podQOS is the pod's status.qosClass or, when unset, the class computed
// from the cpu and memory requests and limits of all its containers
// (k8s.io/kubectl/pkg/util/qos.GetPodQOS).
func podQOS(pod *v1.Pod) v1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	requests, limits := v1.ResourceList{}, v1.ResourceList{}
	guaranteed := true
	all := append(append([]v1.Container(nil), pod.Spec.Containers...), pod.Spec.InitContainers...)
	for _, c := range all {
		addQOSResources(requests, c.Resources.Requests)
		found := addQOSResources(limits, c.Resources.Limits)
		if !found[v1.ResourceCPU] || !found[v1.ResourceMemory] {
			guaranteed = false
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return v1.PodQOSBestEffort
	}
	for name, req := range requests {
		if lim, ok := limits[name]; !ok || lim.Cmp(req) != 0 {
			guaranteed = false
		}
	}
	if guaranteed && len(requests) == len(limits) {
		return v1.PodQOSGuaranteed
	}
	return v1.PodQOSBurstable
}

// addQOSResources adds the positive cpu and memory quantities of from to
// sum and reports which it saw.
func addQOSResources(sum, from v1.ResourceList) map[v1.ResourceName]bool {
	found := map[v1.ResourceName]bool{}
	for name, q := range from {
		if (name != v1.ResourceCPU && name != v1.ResourceMemory) || q.Sign() <= 0 {
			continue
		}
		found[name] = true
		total := q.DeepCopy()
		if prev, ok := sum[name]; ok {
			total.Add(prev)
		}
		sum[name] = total
	}
	return found
}
