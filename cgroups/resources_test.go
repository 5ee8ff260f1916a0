package cgroups

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	libcg "github.com/opencontainers/cgroups"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ctr builds a container with "cpu=...,memory=..." requests and limits
// given as quantities ("" = unset).
func ctr(name, reqCPU, reqMem, limCPU, limMem string) v1.Container {
	c := v1.Container{Name: name, Resources: v1.ResourceRequirements{Requests: v1.ResourceList{}, Limits: v1.ResourceList{}}}
	set := func(l v1.ResourceList, n v1.ResourceName, q string) {
		if q != "" {
			l[n] = resource.MustParse(q)
		}
	}
	set(c.Resources.Requests, v1.ResourceCPU, reqCPU)
	set(c.Resources.Requests, v1.ResourceMemory, reqMem)
	set(c.Resources.Limits, v1.ResourceCPU, limCPU)
	set(c.Resources.Limits, v1.ResourceMemory, limMem)
	return c
}

func podOf(init []v1.Container, apps ...v1.Container) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "1234-abcd"},
		Spec: v1.PodSpec{InitContainers: init, Containers: apps}}
}

func TestCPUConversions_D13(t *testing.T) {
	shares := []struct {
		milli int64
		want  uint64
	}{{0, 2}, {1, 2}, {2, 2}, {100, 102}, {250, 256}, {1000, 1024}, {2500, 2560}, {1000000, 262144}}
	for _, tt := range shares {
		if got := MilliCPUToShares(tt.milli); got != tt.want {
			t.Errorf("MilliCPUToShares(%d) = %d, want %d", tt.milli, got, tt.want)
		}
	}
	weights := []struct{ shares, want uint64 }{{0, 1}, {2, 1}, {102, 4}, {1024, 39}, {2048, 79}, {262144, 10000}, {300000, 10000}}
	for _, tt := range weights {
		if got := SharesToWeight(tt.shares); got != tt.want {
			t.Errorf("SharesToWeight(%d) = %d, want %d", tt.shares, got, tt.want)
		}
	}
	quotas := []struct {
		milli int64
		want  int64
	}{{0, 0}, {1, 1000}, {5, 1000}, {100, 10000}, {500, 50000}, {1500, 150000}}
	for _, tt := range quotas {
		if got := MilliCPUToQuota(tt.milli, QuotaPeriod); got != tt.want {
			t.Errorf("MilliCPUToQuota(%d) = %d, want %d", tt.milli, got, tt.want)
		}
	}
}

func TestForPod_A36_D4_D5(t *testing.T) {
	mi := int64(1 << 20)
	overhead := podOf(nil, ctr("a", "500m", "64Mi", "500m", "64Mi"))
	overhead.Spec.Overhead = v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m"), v1.ResourceMemory: resource.MustParse("32Mi")}
	tests := []struct {
		name    string
		pod     *v1.Pod
		maxPids int64
		want    PodResources
	}{
		{"besteffort", podOf(nil, ctr("a", "", "", "", "")), 0, PodResources{CPUShares: 2}},
		{"besteffort with pids", podOf(nil, ctr("a", "", "", "", "")), 20, PodResources{CPUShares: 2, PidsLimit: 20}},
		{"guaranteed sums containers", podOf(nil, ctr("a", "500m", "64Mi", "500m", "64Mi"), ctr("b", "250m", "32Mi", "250m", "32Mi")), 0,
			PodResources{CPUShares: 768, CPUQuota: 75000, CPUPeriod: 100000, Memory: 96 * mi}},
		{"burstable without all limits: shares only", podOf(nil, ctr("a", "100m", "", "1", "64Mi"), ctr("b", "100m", "", "", "")), 0,
			PodResources{CPUShares: 204}},
		{"burstable with all limits", podOf(nil, ctr("a", "100m", "32Mi", "1", "64Mi")), 0,
			PodResources{CPUShares: 102, CPUQuota: 100000, CPUPeriod: 100000, Memory: 64 * mi}},
		{"init container larger than apps wins", podOf([]v1.Container{ctr("i", "2", "256Mi", "2", "256Mi")}, ctr("a", "500m", "64Mi", "500m", "64Mi")), 0,
			PodResources{CPUShares: 2048, CPUQuota: 200000, CPUPeriod: 100000, Memory: 256 * mi}},
		{"apps larger than init win", podOf([]v1.Container{ctr("i", "100m", "16Mi", "100m", "16Mi")}, ctr("a", "1", "64Mi", "1", "64Mi")), 0,
			PodResources{CPUShares: 1024, CPUQuota: 100000, CPUPeriod: 100000, Memory: 64 * mi}},
		{"an init container without limits: shares only (the kubelet's ContainerIter)", podOf([]v1.Container{ctr("i", "100m", "", "", "")}, ctr("a", "100m", "32Mi", "1", "64Mi")), 0,
			PodResources{CPUShares: 102}},
		{"overhead added", overhead, 0, PodResources{CPUShares: 768, CPUQuota: 75000, CPUPeriod: 100000, Memory: 96 * mi}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ForPod(tt.pod, tt.maxPids, 0); got != tt.want {
				t.Errorf("ForPod = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestForPodCPUPeriod: the pod's quota is per the kubelet's
// cpuCFSQuotaPeriod (CustomCPUCFSQuotaPeriod), at least MinQuota.
func TestForPodCPUPeriod(t *testing.T) {
	pod := podOf(nil, ctr("a", "500m", "64Mi", "500m", "64Mi"))
	for _, tt := range []struct {
		period uint64
		quota  int64
	}{{50000, 25000}, {1000000, 500000}, {1000, 1000}} {
		got := ForPod(pod, 0, tt.period)
		if got.CPUQuota != tt.quota || got.CPUPeriod != tt.period {
			t.Errorf("period %d: quota %d period %d, want quota %d", tt.period, got.CPUQuota, got.CPUPeriod, tt.quota)
		}
	}
}

func TestBurstableShares(t *testing.T) {
	pods := []*v1.Pod{
		podOf(nil, ctr("a", "100m", "", "", "")),
		podOf(nil, ctr("a", "400m", "", "", "")),
		podOf(nil, ctr("a", "1", "1Gi", "1", "1Gi")), // guaranteed: not counted
		podOf(nil, ctr("a", "", "", "", "")),         // besteffort
	}
	if got := BurstableShares(pods); got != 512 {
		t.Errorf("BurstableShares = %d, want 512", got)
	}
	if got := BurstableShares(nil); got != MinShares {
		t.Errorf("BurstableShares(nil) = %d, want %d", got, MinShares)
	}
}

func TestUsageFrom(t *testing.T) {
	st := libcg.NewStats()
	st.CpuStats.CpuUsage.TotalUsage = 5e9
	st.MemoryStats.Usage.Usage = 100
	st.MemoryStats.Stats["total_inactive_file"] = 30
	st.MemoryStats.Stats["total_rss"] = 60
	st.MemoryStats.Stats["inactive_file"] = 10
	st.MemoryStats.Stats["anon"] = 70
	if got, want := *usageFrom(st, V1), (Usage{CPUUsageNanoSeconds: 5e9, MemoryUsageBytes: 100, WorkingSetBytes: 70, RSSBytes: 60}); got != want {
		t.Errorf("v1 usage = %+v, want %+v", got, want)
	}
	if got, want := *usageFrom(st, V2), (Usage{CPUUsageNanoSeconds: 5e9, MemoryUsageBytes: 100, WorkingSetBytes: 90, RSSBytes: 70}); got != want {
		t.Errorf("v2 usage = %+v, want %+v", got, want)
	}
	st.MemoryStats.Stats["inactive_file"] = 500
	if got := usageFrom(st, V2).WorkingSetBytes; got != 0 {
		t.Errorf("working set with inactive > usage = %d, want 0", got)
	}
}

// usage reads only cpuacct.usage, memory.usage_in_bytes and memory.stat
// (v1), the numbers /stats/summary and skiff top show (D.15).
func TestUsageReadsV1Files(t *testing.T) {
	// The library opens files outside cgroupfs only in its test mode.
	libcg.TestMode = true
	t.Cleanup(func() { libcg.TestMode = false })
	root := t.TempDir()
	m := &Manager{mode: V1, mounts: map[string]string{
		"cpuacct": filepath.Join(root, "cpuacct"), "memory": filepath.Join(root, "memory")}}
	files := map[string]string{
		"cpuacct/pod1/cpuacct.usage":        "5000000000\n",
		"memory/pod1/memory.usage_in_bytes": "100\n",
		"memory/pod1/memory.stat":           "cache 40\ntotal_inactive_file 30\ntotal_rss 60\n",
	}
	for f, data := range files {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	u, err := m.usage("pod1")
	if err != nil {
		t.Fatal(err)
	}
	if want := (Usage{CPUUsageNanoSeconds: 5e9, MemoryUsageBytes: 100, WorkingSetBytes: 70, RSSBytes: 60}); *u != want {
		t.Errorf("usage = %+v, want %+v", *u, want)
	}
	if _, err := m.usage("gone"); err == nil || !strings.Contains(err.Error(), "stats of cgroup gone") {
		t.Errorf("usage of a missing cgroup: err = %v", err)
	}
}
