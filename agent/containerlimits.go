package agent

import (
	"math"
	"os"
	"strconv"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/cgroups"
	"github.com/skiffnode/skiff/runtime"
)

// containerLimits turns a container's resources into what the runtime
// applies, as the kubelet's generateLinuxContainerResources for cgroupfs:
// cpu shares from the request, a CFS quota per cpuPeriod from the cpu
// limit, the memory limit, and on cgroup v2 memory.oom.group and
// MemoryQoS's memory.high. Its zero value is the kubelet's defaults on
// cgroup v1.
type containerLimits struct {
	// cpuPeriod: Config.CPUCFSQuotaPeriod in µs (0: cgroups.QuotaPeriod).
	cpuPeriod uint64
	// oomGroupKill: Config.OOMGroupKill (memory.oom.group=1).
	oomGroupKill bool
	// memoryThrottlingFactor: Config.MemoryThrottlingFactor (0: no
	// memory.high).
	memoryThrottlingFactor float64
	// allocatableMemory is Config.AllocatableAbsoluteMemory in bytes: the
	// base of memory.high for a container without a memory limit (0:
	// such a container gets none).
	allocatableMemory int64
	// pageSize rounds memory.high down (0: 4096).
	pageSize int64
}

// newContainerLimits returns the containerLimits of cfg.
func newContainerLimits(cfg Config) containerLimits {
	base := cfg.AllocatableAbsoluteMemory
	if base <= 0 {
		base = cfg.Allocatable.Memory().Value()
	}
	return containerLimits{
		cpuPeriod:              uint64(cfg.CPUCFSQuotaPeriod.Microseconds()),
		oomGroupKill:           cfg.OOMGroupKill,
		memoryThrottlingFactor: cfg.MemoryThrottlingFactor,
		allocatableMemory:      base,
		pageSize:               int64(os.Getpagesize()),
	}
}

// of returns the runtime's resources of r. Pure.
func (l containerLimits) of(r v1.ResourceRequirements) *runtime.Resources {
	out := &runtime.Resources{CPUShares: int64(cgroups.MilliCPUToShares(r.Requests.Cpu().MilliValue()))}
	if lim, ok := r.Limits[v1.ResourceCPU]; ok && !lim.IsZero() {
		period := l.cpuPeriod
		if period == 0 {
			period = cgroups.QuotaPeriod
		}
		out.CPUPeriod = int64(period)
		out.CPUQuota = cgroups.MilliCPUToQuota(lim.MilliValue(), period)
	}
	if lim, ok := r.Limits[v1.ResourceMemory]; ok && !lim.IsZero() {
		out.MemoryLimit = lim.Value()
	}
	unified := map[string]string{}
	if l.oomGroupKill {
		unified["memory.oom.group"] = "1"
	}
	if l.memoryThrottlingFactor > 0 {
		// "max" where none is due, so that a resize clears an earlier one
		// (runc leaves a key the update does not name).
		unified["memory.high"] = "max"
		if high, ok := l.memoryHigh(r); ok {
			unified["memory.high"] = strconv.FormatInt(high, 10)
		}
	}
	if len(unified) > 0 {
		out.Unified = unified
	}
	return out
}

// memoryHigh is MemoryQoS's memory.high of a container (the kubelet's
// formula since 1.27): request + factor * (limit, or the node's
// allocatable memory without one, - request), rounded down to a page;
// none without a factor, for a request equal to the limit (Guaranteed),
// or when it would not exceed the request. Pure.
func (l containerLimits) memoryHigh(r v1.ResourceRequirements) (int64, bool) {
	if l.memoryThrottlingFactor <= 0 {
		return 0, false
	}
	request, limit := r.Requests.Memory().Value(), r.Limits.Memory().Value()
	if request == limit && request != 0 {
		return 0, false
	}
	base := limit
	if base == 0 {
		base = l.allocatableMemory
	}
	if base <= 0 {
		return 0, false
	}
	page := l.pageSize
	if page <= 0 {
		page = 4096
	}
	high := int64(math.Floor((float64(request)+(float64(base)-float64(request))*l.memoryThrottlingFactor)/float64(page))) * page
	if high <= request {
		return 0, false
	}
	return high, true
}
