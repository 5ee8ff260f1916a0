package cgroups

import (
	"fmt"
	"path"
	"strings"

	libcg "github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/fs"
	"github.com/opencontainers/cgroups/fs2"
	"github.com/opencontainers/cgroups/fscommon"
	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/podspec/qos"
)

// Usage is one sample of a cgroup's cpu and memory accounting.
type Usage struct {
	// CPUUsageNanoSeconds is the cumulative cpu time used.
	CPUUsageNanoSeconds uint64
	// MemoryUsageBytes is memory.usage_in_bytes (v1) / memory.current (v2).
	MemoryUsageBytes uint64
	// WorkingSetBytes is the usage less inactive file pages, as cAdvisor
	// and the kubelet compute it.
	WorkingSetBytes uint64
	// RSSBytes is anonymous memory (v1 total_rss, v2 anon).
	RSSBytes uint64
	// Pressure is the cgroup's PSI (v2 only; none on v1, as the kubelet).
	Pressure Pressure
}

// containerRel is the path of a container's cgroup below the mountpoints:
// the runtime puts it under the pod cgroup, named by the container ID
// (cgroupfs) or as the scope cri-containerd-<id>.scope (systemd).
func (m *Manager) containerRel(pod *v1.Pod, containerID string) string {
	podRel := m.relPath(m.PodName(pod.UID, qos.Class(pod)))
	if m.driver == DriverSystemd {
		return path.Join(podRel, "cri-containerd-"+containerID+".scope")
	}
	return path.Join(podRel, containerID)
}

// ContainerDir is the directory of a container's cgroup for controller
// (ignored on v2).
func (m *Manager) ContainerDir(pod *v1.Pod, containerID, controller string) string {
	return m.dirOfRel(m.containerRel(pod, containerID), controller)
}

// PodUsage samples the pod cgroup. Read-only.
func (m *Manager) PodUsage(pod *v1.Pod) (*Usage, error) {
	return m.usage(m.relPath(m.PodName(pod.UID, qos.Class(pod))))
}

// ContainerUsage samples a container's cgroup; it fails once the runtime
// removed the cgroup. Read-only.
func (m *Manager) ContainerUsage(pod *v1.Pod, containerID string) (*Usage, error) {
	return m.usage(m.containerRel(pod, containerID))
}

// ContainerOOMKills reads the OOM-kill counter of a container's cgroup
// (v1 memory.oom_control oom_kill, v2 memory.events oom_kill). The error
// wraps os.ErrNotExist once the cgroup is gone. Read-only.
func (m *Manager) ContainerOOMKills(pod *v1.Pod, containerID string) (uint64, error) {
	dir := m.ContainerDir(pod, containerID, "memory")
	var n uint64
	var err error
	if m.mode == V2 {
		n, err = fs2.OOMKillCount(dir)
	} else {
		n, err = fs.OOMKillCount(dir)
	}
	if err != nil {
		return 0, fmt.Errorf("oom_kill counter of %s: %w", dir, err)
	}
	return n, nil
}

// usage reads cpu and memory accounting of the cgroup at rel: only the
// files the summary needs (cpu usage, memory usage, memory.stat, and on
// v2 the three pressure files),
// not the library's full GetStats (per-cpu usage, kmem, swap, hugetlb ...),
// which was most of skiff's steady-state CPU when 110 pods were sampled
// every 10 s (they are now read only on demand).
func (m *Manager) usage(rel string) (*Usage, error) {
	st := libcg.NewStats()
	var err error
	if m.mode == V2 {
		dir := m.dirOfRel(rel, "")
		var usec uint64
		if usec, err = fscommon.GetValueByKey(dir, "cpu.stat", "usage_usec"); err == nil {
			st.CpuStats.CpuUsage.TotalUsage = usec * 1000
			st.MemoryStats.Usage.Usage, err = fscommon.GetCgroupParamUint(dir, "memory.current")
		}
		if err == nil {
			err = readMemoryStat(dir, st.MemoryStats.Stats)
		}
	} else {
		cpuDir, memDir := m.dirOfRel(rel, "cpuacct"), m.dirOfRel(rel, "memory")
		if st.CpuStats.CpuUsage.TotalUsage, err = fscommon.GetCgroupParamUint(cpuDir, "cpuacct.usage"); err == nil {
			st.MemoryStats.Usage.Usage, err = fscommon.GetCgroupParamUint(memDir, "memory.usage_in_bytes")
		}
		if err == nil {
			err = readMemoryStat(memDir, st.MemoryStats.Stats)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("stats of cgroup %s: %w", rel, err)
	}
	u := usageFrom(st, m.mode)
	if m.mode == V2 {
		u.Pressure = readPressure(m.dirOfRel(rel, ""), ".pressure")
	}
	return u, nil
}

// readMemoryStat parses dir/memory.stat ("key value" lines) into into.
func readMemoryStat(dir string, into map[string]uint64) error {
	data, err := libcg.ReadFile(dir, "memory.stat")
	if err != nil {
		return err
	}
	for line := range strings.Lines(data) {
		k, v, err := fscommon.ParseKeyValue(strings.TrimSpace(line))
		if err != nil {
			return fmt.Errorf("%s/memory.stat: %w", dir, err)
		}
		into[k] = v
	}
	return nil
}

// usageFrom picks the kubelet's numbers from the library's stats. Pure.
func usageFrom(st *libcg.Stats, mode Mode) *Usage {
	inactive, rss := "total_inactive_file", "total_rss"
	if mode == V2 {
		inactive, rss = "inactive_file", "anon"
	}
	u := &Usage{
		CPUUsageNanoSeconds: st.CpuStats.CpuUsage.TotalUsage,
		MemoryUsageBytes:    st.MemoryStats.Usage.Usage,
		RSSBytes:            st.MemoryStats.Stats[rss],
	}
	u.WorkingSetBytes = u.MemoryUsageBytes
	if in := st.MemoryStats.Stats[inactive]; in < u.WorkingSetBytes {
		u.WorkingSetBytes -= in
	} else {
		u.WorkingSetBytes = 0
	}
	return u
}
