// Package qos computes a pod's Quality of Service class, which the API
// server records in status.qosClass and the node agent uses to place the
// pod's cgroup. It is neutral: it imports only k8s.io/api and
// k8s.io/apimachinery, so both sides of skiff (the node agent and
// skiff-apiserver) may use it. No upstream library at the k8s.io versions
// skiff uses exports this computation outside k8s.io/kubernetes and
// k8s.io/kubectl, which skiff does not import.
package qos

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Class computes a pod's QoS class as upstream (GetPodQOS) does, from the
// cpu and memory requests and limits of all its containers, init
// containers included: BestEffort when none is set; Guaranteed when every
// container limits both cpu and memory and the summed requests equal the
// summed limits (an unset request defaults to the limit); else Burstable.
// Pure.
func Class(pod *v1.Pod) v1.PodQOSClass {
	if r := pod.Spec.Resources; r != nil && podLevelSet(r) {
		return requirementsClass(r)
	}
	requests := v1.ResourceList{}
	limits := v1.ResourceList{}
	guaranteed := true
	all := make([]v1.Container, 0, len(pod.Spec.InitContainers)+len(pod.Spec.Containers))
	all = append(append(all, pod.Spec.InitContainers...), pod.Spec.Containers...)
	for _, c := range all {
		for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
			if q, ok := c.Resources.Requests[name]; ok && q.Sign() > 0 {
				addQuantity(requests, name, q)
			}
		}
		found := 0
		for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
			if q, ok := c.Resources.Limits[name]; ok && q.Sign() > 0 {
				addQuantity(limits, name, q)
				found++
			}
		}
		if found != 2 {
			guaranteed = false
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return v1.PodQOSBestEffort
	}
	if guaranteed {
		for name, req := range requests {
			if lim, ok := limits[name]; !ok || lim.Cmp(req) != 0 {
				guaranteed = false
				break
			}
		}
	}
	if guaranteed {
		// Every container limits cpu and memory; requests left unset
		// default to the limits (API defaulting).
		return v1.PodQOSGuaranteed
	}
	return v1.PodQOSBurstable
}

func addQuantity(list v1.ResourceList, name v1.ResourceName, q resource.Quantity) {
	if cur, ok := list[name]; ok {
		cur.Add(q)
		list[name] = cur
		return
	}
	list[name] = q.DeepCopy()
}

// podLevelSet reports whether pod-level resources (spec.resources) set cpu
// or memory: then they decide the class (PodLevelResources, beta and on
// since 1.34; PodLevelResourcesFixKubeletQOSClass).
func podLevelSet(r *v1.ResourceRequirements) bool {
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		if _, ok := r.Requests[name]; ok {
			return true
		}
		if _, ok := r.Limits[name]; ok {
			return true
		}
	}
	return false
}

// requirementsClass is the class of one set of requirements, as upstream's
// requirementsQOS: per resource, no request nor limit is BestEffort, equal
// ones Guaranteed, else Burstable; resources of different shapes make it
// Burstable. A limit without a request counts as both, as the API server
// defaults it.
func requirementsClass(r *v1.ResourceRequirements) v1.PodQOSClass {
	var class v1.PodQOSClass
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		req, hasReq := r.Requests[name]
		lim, hasLim := r.Limits[name]
		if !hasReq && hasLim {
			req = lim
		}
		c := v1.PodQOSBurstable
		switch {
		case !req.Equal(lim):
		case req.IsZero():
			c = v1.PodQOSBestEffort
		default:
			c = v1.PodQOSGuaranteed
		}
		if c == v1.PodQOSBurstable || (class != "" && class != c) {
			return v1.PodQOSBurstable
		}
		class = c
	}
	return class
}
