package cgroups

import (
	"os"
	"path/filepath"
	"testing"

	libcg "github.com/opencontainers/cgroups"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiffnode/skiff/podspec/qos"
)

// writeCgroupFiles writes name -> content into dir.
func writeCgroupFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestUsageReadsEachVersion (issue 30: paths nothing proved): a pod's
// cpu and memory accounting from fake cgroup files, v2 (cpu.stat
// usage_usec in microseconds, memory.current, memory.stat anon and
// inactive_file, and the pressure files) and v1 (cpuacct.usage in nanoseconds,
// memory.usage_in_bytes, total_rss and total_inactive_file), in the units
// and with the working set the kubelet reports.
func TestUsageReadsEachVersion(t *testing.T) {
	// The library's knob for fake cgroup files (it checks the file
	// system otherwise).
	libcg.TestMode = true
	t.Cleanup(func() { libcg.TestMode = false })
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1"}} // BestEffort
	want := Usage{CPUUsageNanoSeconds: 1_500_000, MemoryUsageBytes: 10 << 20, WorkingSetBytes: 7 << 20, RSSBytes: 4 << 20}
	t.Run("v2", func(t *testing.T) {
		m := &Manager{mode: V2, driver: DriverCgroupfs, kubepods: parseRoot("/", DriverCgroupfs).Child("kubepods"), unified: t.TempDir()}
		writeCgroupFiles(t, m.Dir(m.PodName(pod.UID, qos.Class(pod)), ""), map[string]string{
			"cpu.stat":       "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\n",
			"memory.current": "10485760\n",
			"memory.stat":    "anon 4194304\nfile 5242880\ninactive_file 3145728\n",
			"cpu.pressure":   "some avg10=2.00 avg60=1.00 avg300=0.50 total=42\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
		})
		got, err := m.PodUsage(pod)
		if err != nil {
			t.Fatal(err)
		}
		// v2 only: the cgroup's PSI (KubeletPSI), where the kernel has it.
		if p := got.Pressure; p.CPU == nil || p.CPU.Some.Total != 42 || p.CPU.Some.Avg10 != 2 || p.Memory != nil || p.IO != nil {
			t.Errorf("pressure %+v, want cpu's only", p)
		}
		got.Pressure = Pressure{}
		if *got != want {
			t.Errorf("PodUsage = %+v; want %+v", got, want)
		}
	})
	t.Run("v1", func(t *testing.T) {
		root := t.TempDir()
		m := &Manager{mode: V1, driver: DriverCgroupfs, kubepods: parseRoot("/", DriverCgroupfs).Child("kubepods"),
			mounts: map[string]string{"cpuacct": filepath.Join(root, "cpuacct"), "memory": filepath.Join(root, "memory")}}
		name := m.PodName(pod.UID, qos.Class(pod))
		writeCgroupFiles(t, m.Dir(name, "cpuacct"), map[string]string{"cpuacct.usage": "1500000\n"})
		writeCgroupFiles(t, m.Dir(name, "memory"), map[string]string{
			"memory.usage_in_bytes": "10485760\n",
			"memory.stat":           "rss 1\ntotal_rss 4194304\ntotal_inactive_file 3145728\n",
		})
		got, err := m.PodUsage(pod)
		if err != nil || *got != want {
			t.Errorf("PodUsage = %+v, %v; want %+v", got, err, want)
		}
	})
}
