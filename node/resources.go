package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/skiffnode/skiff/agent"
	"github.com/skiffnode/skiff/cgroups"
	"github.com/skiffnode/skiff/runtime"
)

// resourceOptions are the kubelet's resource flags.
type ResourcesConfig struct {
	CgroupDriver   string
	CgroupRoot     string
	CgroupsPerQOS  bool
	SystemReserved string
	KubeReserved   string
	EvictionHard   string
	MaxPods        int64
	PodMaxPids     int64
	// CPUCFSQuotaPeriod is the CFS period of cpu limits, of containers and
	// pod cgroups (the kubelet's cpuCFSQuotaPeriod, 1ms to 1s; 0: 100ms).
	CPUCFSQuotaPeriod time.Duration
	// MemoryThrottlingFactor is MemoryQoS's memory.high factor on cgroup
	// v2 (the kubelet's memoryThrottlingFactor, in (0, 1]; 0: none).
	MemoryThrottlingFactor float64
	// SingleProcessOOMKill: on cgroup v2, an OOM kill takes one process of
	// a container, not the whole container (the kubelet's
	// singleProcessOOMKill; cgroup v1 always kills one).
	SingleProcessOOMKill bool
	// FailCgroupV1: refuse to start on cgroup v1 (the kubelet's
	// failCgroupV1, on by default since 1.35; off by default here).
	FailCgroupV1 bool
}

// checkCgroupVersion logs the cgroup version found at mountpoint and, on
// cgroup v1 with failV1 (--fail-cgroupv1), refuses to start as the kubelet
// does. skiff itself runs on both.
func checkCgroupVersion(mountpoint string, failV1 bool, log *slog.Logger) error {
	mode, err := cgroups.DetectMode(mountpoint)
	if err != nil {
		return err
	}
	log.Info("cgroup version", "version", mode.String())
	if mode == cgroups.V1 && failV1 {
		return errors.New("--fail-cgroupv1: skiff is configured to not run on a host using cgroup v1 " +
			"(the kubelet: cgroup v1 support is unsupported and will be removed in a future release)")
	}
	return nil
}

// oomGroupKill reports whether containers get memory.oom.group=1: on
// cgroup v2 (mode) unless --single-process-oom-kill, as the kubelet.
func oomGroupKill(mode cgroups.Mode, singleProcess bool) bool {
	return mode == cgroups.V2 && !singleProcess
}

// memoryThrottlingFactor is the containers' memory.high factor: the
// configured one on cgroup v2 (mode); none on v1, which has no memory.high
// (the kubelet applies MemoryQoS on v2 only).
func memoryThrottlingFactor(mode cgroups.Mode, factor float64) float64 {
	if mode != cgroups.V2 {
		return 0
	}
	return factor
}

// parseResourceList parses "cpu=100m,memory=100Mi" (flag names a flag
// for errors).
func parseResourceList(flag, s string) (v1.ResourceList, error) {
	out := v1.ResourceList{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return nil, fmt.Errorf("--%s: %q is not name=quantity", flag, kv)
		}
		name := v1.ResourceName(strings.TrimSpace(k))
		if name != v1.ResourceCPU && name != v1.ResourceMemory && name != "pid" {
			return nil, fmt.Errorf("--%s: unsupported resource %q (cpu, memory, pid)", flag, name)
		}
		q, err := resource.ParseQuantity(strings.TrimSpace(val))
		if err != nil {
			return nil, fmt.Errorf("--%s: %s: %w", flag, name, err)
		}
		out[name] = q
	}
	return out, nil
}

// parseEvictionHard parses --eviction-hard; only memory.available<Q is
// supported (the kubelet's default is memory.available<100Mi).
func parseEvictionHard(s string) (v1.ResourceList, error) {
	out := v1.ResourceList{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		signal, val, ok := strings.Cut(part, "<")
		if !ok || signal != "memory.available" || strings.HasSuffix(val, "%") {
			return nil, fmt.Errorf("--eviction-hard: %q: only memory.available<quantity is supported", part)
		}
		q, err := resource.ParseQuantity(val)
		if err != nil {
			return nil, fmt.Errorf("--eviction-hard: memory.available: %w", err)
		}
		out[v1.ResourceMemory] = q
	}
	return out, nil
}

// nodeResources computes the node's allocatable (D.15) and the limits of
// the kubepods cgroup (capacity less the reservations, as the kubelet's
// node allocatable enforcement).
func nodeResources(o *ResourcesConfig) (alloc v1.ResourceList, kubepods *cgroups.PodResources, err error) {
	capacity, err := agent.NodeCapacity("/proc/meminfo", o.MaxPods)
	if err != nil {
		return nil, nil, err
	}
	sys, err := parseResourceList("system-reserved", o.SystemReserved)
	if err != nil {
		return nil, nil, err
	}
	kube, err := parseResourceList("kube-reserved", o.KubeReserved)
	if err != nil {
		return nil, nil, err
	}
	evict, err := parseEvictionHard(o.EvictionHard)
	if err != nil {
		return nil, nil, err
	}
	reservedOnly := agent.Allocatable(capacity, sys, kube)
	cpu, mem := reservedOnly[v1.ResourceCPU], reservedOnly[v1.ResourceMemory]
	kubepods = &cgroups.PodResources{CPUShares: cgroups.MilliCPUToShares(cpu.MilliValue()), Memory: mem.Value()}
	return agent.Allocatable(capacity, sys, kube, evict), kubepods, nil
}

// cgroupDriverChecker is implemented by runtimes that can tell their
// cgroup driver (runtime/cri).
type cgroupDriverChecker interface {
	CgroupDriver(ctx context.Context) (string, error)
}

// setupCgroups creates the cgroup manager and the QoS cgroups, after
// checking that the runtime uses the same cgroup driver; nil without
// --cgroups-per-qos.
func setupCgroups(ctx context.Context, o *ResourcesConfig, kubepods *cgroups.PodResources, rt runtime.Runtime, log *slog.Logger) (*cgroups.Manager, error) {
	if !o.CgroupsPerQOS {
		return nil, nil
	}
	driver, err := cgroups.ParseDriver(o.CgroupDriver)
	if err != nil {
		return nil, fmt.Errorf("--cgroup-driver: %w", err)
	}
	if c, ok := rt.(cgroupDriverChecker); ok {
		got, err := c.CgroupDriver(ctx)
		if err != nil {
			return nil, fmt.Errorf("checking the runtime's cgroup driver: %w", err)
		}
		if got != "" && got != string(driver) {
			return nil, fmt.Errorf("the container runtime uses the %q cgroup driver but skiff --cgroup-driver=%s: configure both the same (containerd: SystemdCgroup in the runc options)", got, driver)
		}
	}
	m, err := cgroups.New(cgroups.Config{
		Driver: driver, Root: o.CgroupRoot, PodMaxPids: o.PodMaxPids, Kubepods: kubepods, Logger: log,
		CPUPeriod: uint64(o.CPUCFSQuotaPeriod.Microseconds()),
	})
	if err != nil {
		return nil, err
	}
	if err := m.EnsureQoS(ctx); err != nil {
		return nil, fmt.Errorf("QoS cgroups: %w", err)
	}
	log.Info("pod cgroups", "mode", m.Mode(), "driver", driver, "kubepods", m.KubepodsName().ToCgroupfs())
	return m, nil
}
