package cgroups

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	cgmanager "github.com/opencontainers/cgroups/manager"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// newHostManager returns a cgroupfs Manager under a fresh cgroup root. The
// test writes the machine's cgroups, so it runs only when asked to with
// SKIFF_ROOT_TESTS=1 (make integration) and then insists on root.
func newHostManager(t *testing.T, maxPids int64) *Manager {
	t.Helper()
	if os.Getenv("SKIFF_ROOT_TESTS") != "1" {
		t.Skip("writes the host's cgroups: set SKIFF_ROOT_TESTS=1 and run as root (make integration)")
	}
	if os.Geteuid() != 0 {
		t.Fatal("SKIFF_ROOT_TESTS=1 needs root to create cgroups")
	}
	root := fmt.Sprintf("/skiff-unit-%d", time.Now().UnixNano())
	m, err := New(Config{Driver: DriverCgroupfs, Root: root, PodMaxPids: maxPids})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, n := range []Name{qosName(m.kubepods, v1.PodQOSBurstable), qosName(m.kubepods, v1.PodQOSBestEffort), m.kubepods, parseRoot(root, DriverCgroupfs)} {
			_ = m.destroy(n)
		}
	})
	return m
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestManagerLifecycle_D4 creates the QoS parents and a Burstable pod's
// cgroup on this machine (v1 or v2), checks the limits landed, lists and
// removes it.
func TestManagerLifecycle_D4(t *testing.T) {
	m := newHostManager(t, 20)
	ctx := context.Background()
	if err := m.EnsureQoS(ctx); err != nil {
		t.Fatal(err)
	}
	pod := podOf(nil, ctr("a", "250m", "32Mi", "500m", "64Mi"))
	pod.UID = types.UID(fmt.Sprintf("uid-%d", time.Now().UnixNano()))
	if err := m.EnsurePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := m.EnsurePod(ctx, pod); err != nil {
		t.Fatalf("EnsurePod is not idempotent: %v", err)
	}
	if err := m.UpdateQoS(ctx, []*v1.Pod{pod}); err != nil {
		t.Fatal(err)
	}
	n := m.PodName(pod.UID, v1.PodQOSBurstable)
	burst := qosName(m.kubepods, v1.PodQOSBurstable)
	if m.Mode() == V2 {
		dir := m.Dir(n, "")
		want := map[string]string{"cpu.max": "50000 100000", "cpu.weight": "10", "memory.max": "67108864", "pids.max": "20"}
		for f, v := range want {
			if got := readFile(t, filepath.Join(dir, f)); got != v {
				t.Errorf("%s/%s = %q, want %q", dir, f, got, v)
			}
		}
		if got := readFile(t, filepath.Join(m.Dir(burst, ""), "cpu.weight")); got != "10" {
			t.Errorf("burstable cpu.weight = %q, want 10", got)
		}
	} else {
		want := map[string]string{"cpu/cpu.cfs_quota_us": "50000", "cpu/cpu.cfs_period_us": "100000", "cpu/cpu.shares": "256",
			"memory/memory.limit_in_bytes": "67108864", "pids/pids.max": "20"}
		for f, v := range want {
			ctrl, file, _ := strings.Cut(f, "/")
			if got := readFile(t, filepath.Join(m.Dir(n, ctrl), file)); got != v {
				t.Errorf("%s %s = %q, want %q", n.ToCgroupfs(), f, got, v)
			}
		}
		if got := readFile(t, filepath.Join(m.Dir(burst, "cpu"), "cpu.shares")); got != "256" {
			t.Errorf("burstable cpu.shares = %q, want 256", got)
		}
	}
	uids, err := m.ListPods(ctx)
	if err != nil || !slices.Contains(uids, pod.UID) {
		t.Fatalf("ListPods = %v, %v; want %s in it", uids, err, pod.UID)
	}
	if u, err := m.PodUsage(pod); err != nil || u == nil {
		t.Errorf("PodUsage = %v, %v", u, err)
	}
	if err := m.RemovePod(ctx, pod.UID); err != nil {
		t.Fatal(err)
	}
	if err := m.RemovePod(ctx, pod.UID); err != nil {
		t.Fatalf("RemovePod is not idempotent: %v", err)
	}
	if _, err := os.Stat(m.Dir(n, "memory")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("pod cgroup still there after RemovePod: %v", err)
	}
	if m.Mode() == V1 {
		if _, err := os.Stat(m.Dir(n, "cpu")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("pod cpu cgroup still there after RemovePod: %v", err)
		}
	}
}

// RemovePod kills what is left in a pod cgroup, as the kubelet's pod
// cgroup Destroy does, instead of failing after ~10 s of retries: a stale
// pod cgroup holding leaked processes held every skiff start and stop.
func TestRemovePodKillsLeftoverProcesses_D4(t *testing.T) {
	m := newHostManager(t, 0)
	ctx := context.Background()
	if err := m.EnsureQoS(ctx); err != nil {
		t.Fatal(err)
	}
	pod := podOf(nil, ctr("a", "", "", "", ""))
	pod.UID = types.UID(fmt.Sprintf("uid-%d", time.Now().UnixNano()))
	if err := m.EnsurePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	n := m.PodName(pod.UID, v1.PodQOSBestEffort)
	cmd := exec.Command("sleep", "300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	mgr, err := cgmanager.New(m.libConfig(n, nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr.Apply(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if err := m.RemovePod(ctx, pod.UID); err != nil {
		t.Fatalf("RemovePod with a process left in the pod cgroup: %v", err)
	}
	select {
	case err := <-exited:
		if err == nil {
			t.Error("the leftover process exited 0, want killed")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the leftover process still runs after RemovePod")
	}
	if _, err := os.Stat(m.Dir(n, "memory")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("pod cgroup still there after RemovePod: %v", err)
	}
}
