package cgroups

import (
	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/skiffnode/skiff/podspec/qos"
)

// Limits of the cpu controller, as the kubelet uses them.
const (
	// MinShares is the smallest cpu.shares (and the BestEffort value).
	MinShares = 2
	// MaxShares is the largest cpu.shares.
	MaxShares = 262144
	// SharesPerCPU is cpu.shares of one whole CPU.
	SharesPerCPU = 1024
	// QuotaPeriod is the CFS period in microseconds (100ms).
	QuotaPeriod = 100000
	// MinQuota is the smallest CFS quota in microseconds.
	MinQuota = 1000
)

// MilliCPUToShares converts a cpu request in millicores to cpu.shares:
// 1024 per CPU, at least MinShares and at most MaxShares. Pure.
func MilliCPUToShares(milliCPU int64) uint64 {
	if milliCPU <= 0 {
		return MinShares
	}
	shares := milliCPU * SharesPerCPU / 1000
	return uint64(min(max(shares, MinShares), MaxShares))
}

// SharesToWeight converts cpu.shares [2, 262144] to the cgroup v2
// cpu.weight [1, 10000] as runc and the kubelet do:
// 1 + ((shares-2)*9999)/262142. Pure.
func SharesToWeight(shares uint64) uint64 {
	if shares < MinShares {
		shares = MinShares
	}
	if shares >= MaxShares {
		return 10000
	}
	return 1 + ((shares-2)*9999)/262142
}

// MilliCPUToQuota converts a cpu limit in millicores to a CFS quota in
// microseconds per period; 0 (no limit) stays 0, anything else is at least
// MinQuota. Pure.
func MilliCPUToQuota(milliCPU int64, period uint64) int64 {
	if milliCPU <= 0 {
		return 0
	}
	return max(milliCPU*int64(period)/1000, MinQuota)
}

// PodResources are the limits of a pod (or QoS) cgroup. Zero fields are
// not set; PidsLimit 0 means "not set" and -1 "max".
type PodResources struct {
	CPUShares uint64
	CPUQuota  int64
	CPUPeriod uint64
	Memory    int64
	PidsLimit int64
}

// EffectiveRequests is the pod's effective request as the scheduler and
// the kubelet count it: max(sum of app containers (sidecars included),
// max of init containers) per resource, plus spec.overhead (A.36, D.4, D.5).
// Pure.
func EffectiveRequests(pod *v1.Pod) v1.ResourceList {
	return resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{SkipPodLevelResources: true})
}

// ForPod computes the pod cgroup's limits as the kubelet's
// ResourceConfigForPod does: cpu shares from the effective cpu request
// (BestEffort: MinShares); a cpu quota only when every container has a cpu
// limit, a memory limit only when every container (init containers too) has
// a memory limit (both from the effective limits, overhead included);
// pids.max from podMaxPids (<= 0: unset). The quota is per cpuPeriod (µs,
// the kubelet's cpuCFSQuotaPeriod; 0: QuotaPeriod). Pure.
func ForPod(pod *v1.Pod, podMaxPids int64, cpuPeriod uint64) PodResources {
	cpuLimited, memLimited := true, true
	limits := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{SkipPodLevelResources: true})
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if cs[i].Resources.Limits.Cpu().IsZero() {
				cpuLimited = false
			}
			if cs[i].Resources.Limits.Memory().IsZero() {
				memLimited = false
			}
		}
	}
	reqs := EffectiveRequests(pod)
	out := PodResources{CPUShares: MinShares}
	if podMaxPids > 0 {
		out.PidsLimit = podMaxPids
	}
	class := qos.Class(pod)
	if class == v1.PodQOSBestEffort {
		return out
	}
	out.CPUShares = MilliCPUToShares(reqs.Cpu().MilliValue())
	if cpuLimited || class == v1.PodQOSGuaranteed {
		if cpuPeriod == 0 {
			cpuPeriod = QuotaPeriod
		}
		out.CPUPeriod = cpuPeriod
		out.CPUQuota = MilliCPUToQuota(limits.Cpu().MilliValue(), cpuPeriod)
	}
	if memLimited || class == v1.PodQOSGuaranteed {
		out.Memory = limits.Memory().Value()
	}
	return out
}

// BurstableShares is cpu.shares of the burstable QoS parent: the summed cpu
// requests of the Burstable pods among pods (at least MinShares), as the
// kubelet's QoS manager sets it. Pure.
func BurstableShares(pods []*v1.Pod) uint64 {
	var milli int64
	for _, p := range pods {
		if qos.Class(p) == v1.PodQOSBurstable {
			reqs := EffectiveRequests(p)
			milli += reqs.Cpu().MilliValue()
		}
	}
	return MilliCPUToShares(milli)
}
