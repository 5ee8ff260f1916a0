package agent

import (
	"context"
	"errors"
	"testing"
	"time"

	libcg "github.com/opencontainers/cgroups"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/skiffnode/skiff/cgroups"
)

func TestCPURate(t *testing.T) {
	var s cpuSamples
	if r := s.rate("k", cpuSample{at: t0, usage: 1e9}); r != nil {
		t.Errorf("first sample: rate %d, want none", *r)
	}
	// Half a CPU over two seconds.
	r := s.rate("k", cpuSample{at: t0.Add(2 * time.Second), usage: 2e9})
	if r == nil || *r != 5e8 {
		t.Fatalf("rate = %v, want 5e8 nanocores", r)
	}
	// A sample 100ms later is measured against the last stored one (t0+2s).
	r = s.rate("k", cpuSample{at: t0.Add(2100 * time.Millisecond), usage: 2.1e9})
	if r == nil || *r != 1e9 {
		t.Fatalf("rate after 100ms = %v, want 1e9", r)
	}
	// ... which stays the base: the next is measured over a second.
	r = s.rate("k", cpuSample{at: t0.Add(3 * time.Second), usage: 2.6e9})
	if r == nil || *r != 6e8 {
		t.Fatalf("rate after 1s = %v, want 6e8", r)
	}
	s.readDone(t0.Add(4*time.Second), map[string]bool{})
	if r := s.rate("k", cpuSample{at: t0.Add(5 * time.Second), usage: 3e9}); r != nil {
		t.Errorf("after the key was dropped: rate %d, want none", *r)
	}
}

func (f *fakeCgroups) reads() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.usageReads
}

func (f *fakeCgroups) setUsage(key string, cpu uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.usage[key] = &cgroups.Usage{CPUUsageNanoSeconds: cpu, MemoryUsageBytes: 300, WorkingSetBytes: 200, RSSBytes: 100}
}

// TestStatsSampledOnlyWhenRead: a running agent reads no cgroup while
// nobody asks for the summary, however long it runs; a read reads them.
func TestStatsSampledOnlyWhenRead(t *testing.T) {
	rt := newFakeRuntime()
	cg := newFakeCgroups(rt)
	clk := clocktesting.NewFakeClock(time.Now())
	cfg := testConfig(t, rt)
	cfg.Cgroups, cfg.Clock = cg, clk
	h := runTestAgent(t, cfg)
	h.src.ch <- []*v1.Pod{testPod("Always", nil, "app")}
	h.eventually("pod Running", func() bool { return h.phase("uid1") == v1.PodRunning })
	c, _ := rt.ContainerByName("uid1", "app")
	cg.setUsage("uid1", 7)
	cg.setUsage(c.ID, 5)
	// Ten idle minutes, in steps of a second.
	for range 600 {
		clk.Step(time.Second)
		time.Sleep(100 * time.Microsecond)
	}
	time.Sleep(20 * time.Millisecond)
	if n := cg.reads(); n != 0 {
		t.Fatalf("%d cgroup reads while nobody read the summary, want 0", n)
	}
	// The first read takes a base sample and waits a second on the clock.
	got := make(chan *statsapi.Summary, 1)
	go func() { got <- h.agent.StatsSummary(context.Background()) }()
	h.eventually("base sample", func() bool { return cg.reads() == 2 })
	var sum *statsapi.Summary
	h.eventually("summary", func() bool {
		clk.Step(statsWarmup) // the waiter may not be registered yet
		select {
		case sum = <-got:
			return true
		default:
			return false
		}
	})
	if n := cg.reads(); n != 4 {
		t.Errorf("%d cgroup reads for the first summary, want 4 (pod and container, twice)", n)
	}
	if sum.Node.NodeName != "node" || len(sum.Pods) != 1 {
		t.Fatalf("summary = %+v", sum)
	}
	p := sum.Pods[0]
	if p.PodRef.UID != "uid1" || *p.CPU.UsageCoreNanoSeconds != 7 || *p.Memory.WorkingSetBytes != 200 || p.CPU.UsageNanoCores == nil {
		t.Errorf("pod stats = %+v cpu %+v mem %+v", p.PodRef, p.CPU, p.Memory)
	}
	if len(p.Containers) != 1 || p.Containers[0].Name != "app" || *p.Containers[0].Memory.RSSBytes != 100 || p.Containers[0].CPU.UsageNanoCores == nil {
		t.Errorf("container stats = %+v", p.Containers)
	}
}

// statsAgent is an agent (not running) on a fake clock whose published
// pod uid1 runs containers with the given IDs.
func statsAgent(t *testing.T, ids ...string) (*Agent, *fakeCgroups, *clocktesting.FakeClock) {
	rt := newFakeRuntime()
	cg := newFakeCgroups(rt)
	clk := clocktesting.NewFakeClock(t0)
	cfg := testConfig(t, rt)
	cfg.Cgroups, cfg.Clock = cg, clk
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pod := testPod("Always", nil)
	pod.Status.Phase = v1.PodRunning
	for _, id := range ids {
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: id, Image: "img"})
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, v1.ContainerStatus{
			Name: id, ContainerID: "containerd://" + id,
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(t0)}},
		})
	}
	a.status.track(pod.UID)
	a.status.publish(pod)
	return a, cg, clk
}

// readSummary reads the summary, failing the test if that takes more than
// a few seconds of real time (waiting for the fake clock).
func readSummary(t *testing.T, a *Agent) *statsapi.Summary {
	t.Helper()
	got := make(chan *statsapi.Summary, 1)
	go func() { got <- a.StatsSummary(context.Background()) }()
	select {
	case s := <-got:
		return s
	case <-time.After(5 * time.Second):
		t.Fatal("StatsSummary blocked")
		return nil
	}
}

// warmRead reads the summary when it has no base: it must sample once,
// wait statsWarmup on the clock, and sample again; before the second
// sample the cgroups' usage is set to cpu.
func warmRead(t *testing.T, a *Agent, cg *fakeCgroups, clk *clocktesting.FakeClock, cpu map[string]uint64) *statsapi.Summary {
	t.Helper()
	before := cg.reads()
	got := make(chan *statsapi.Summary, 1)
	go func() { got <- a.StatsSummary(context.Background()) }()
	deadline := time.Now().Add(5 * time.Second)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("the read without a base does not wait on the clock")
		}
		time.Sleep(time.Millisecond)
	}
	if n := cg.reads() - before; n != len(cpu) {
		t.Fatalf("base sample: %d cgroup reads, want %d", n, len(cpu))
	}
	for k, v := range cpu {
		cg.setUsage(k, v)
	}
	clk.Step(statsWarmup)
	select {
	case s := <-got:
		return s
	case <-time.After(5 * time.Second):
		t.Fatal("StatsSummary blocked after the warm-up")
		return nil
	}
}

// nanoCoresOf returns the cpu rates of the pod (key "pod") and of its
// containers (by name) in sum; a missing rate is -1.
func nanoCoresOf(t *testing.T, sum *statsapi.Summary) map[string]int64 {
	t.Helper()
	if len(sum.Pods) != 1 {
		t.Fatalf("summary has %d pods, want 1", len(sum.Pods))
	}
	rate := func(c *statsapi.CPUStats) int64 {
		if c == nil || c.UsageNanoCores == nil {
			return -1
		}
		return int64(*c.UsageNanoCores)
	}
	out := map[string]int64{"pod": rate(sum.Pods[0].CPU)}
	for _, c := range sum.Pods[0].Containers {
		out[c.Name] = rate(c.CPU)
	}
	return out
}

func sameRates(got, want map[string]int64) bool {
	if len(got) != len(want) {
		return false
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

// TestStatsRatesBetweenReads: the first read measures cpu over a second;
// a later read measures it since the previous read without waiting (a
// container new since then has no rate yet); after a pause longer than
// statsBaseMaxAge a read measures over a fresh second again.
func TestStatsRatesBetweenReads(t *testing.T) {
	a, cg, clk := statsAgent(t, "c1")
	cg.setUsage("uid1", 1e9)
	cg.setUsage("c1", 4e8)

	// First read: +0.5 s and +0.2 s of cpu over the warm-up second.
	sum := warmRead(t, a, cg, clk, map[string]uint64{"uid1": 1.5e9, "c1": 6e8})
	if got, want := nanoCoresOf(t, sum), map[string]int64{"pod": 5e8, "c1": 2e8}; !sameRates(got, want) {
		t.Errorf("first read: rates %v, want %v", got, want)
	}
	if !sum.Pods[0].CPU.Time.Time.Equal(t0.Add(statsWarmup)) || *sum.Pods[0].CPU.UsageCoreNanoSeconds != 1.5e9 {
		t.Errorf("first read: cpu %+v", sum.Pods[0].CPU)
	}

	// 15 s later (a scraper's period): +3 s of cpu, no waiting; c2 started
	// since the last read and has no rate yet.
	clk.Step(15 * time.Second)
	cg.setUsage("uid1", 4.5e9)
	cg.setUsage("c1", 6e8+1.5e9)
	cg.setUsage("c2", 1e9)
	pod := a.status.get("uid1")
	pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, v1.ContainerStatus{
		Name: "c2", ContainerID: "containerd://c2",
		State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(t0)}},
	})
	before := cg.reads()
	sum = readSummary(t, a)
	if n := cg.reads() - before; n != 3 {
		t.Errorf("read with a base: %d cgroup reads, want 3 (one sample)", n)
	}
	if got, want := nanoCoresOf(t, sum), map[string]int64{"pod": 2e8, "c1": 1e8, "c2": -1}; !sameRates(got, want) {
		t.Errorf("read 15s later: rates %v, want %v", got, want)
	}

	// 100 s later, still within statsBaseMaxAge: measured since then.
	clk.Step(100 * time.Second)
	cg.setUsage("uid1", 4.5e9+1e10)
	cg.setUsage("c2", 1e9+5e9)
	sum = readSummary(t, a)
	if got, want := nanoCoresOf(t, sum), map[string]int64{"pod": 1e8, "c1": 0, "c2": 5e7}; !sameRates(got, want) {
		t.Errorf("read 100s later: rates %v, want %v", got, want)
	}

	// Nobody reads for longer than statsBaseMaxAge: no cgroup read, and the
	// next read measures over a fresh second, not the whole pause.
	before = cg.reads()
	clk.Step(statsBaseMaxAge + time.Second)
	if n := cg.reads() - before; n != 0 {
		t.Errorf("%d cgroup reads while nobody read", n)
	}
	sum = warmRead(t, a, cg, clk, map[string]uint64{"uid1": 4.5e9 + 1e10 + 2e9, "c1": 6e8 + 1.5e9, "c2": 1e9 + 5e9 + 1e9})
	if got, want := nanoCoresOf(t, sum), map[string]int64{"pod": 2e9, "c1": 0, "c2": 1e9}; !sameRates(got, want) {
		t.Errorf("read after a pause: rates %v, want %v", got, want)
	}
}

// TestStatsWarmupEndsWithContext: a read without a base returns when its
// context ends instead of waiting for the clock (rates then missing).
func TestStatsWarmupEndsWithContext(t *testing.T) {
	a, cg, _ := statsAgent(t, "c1")
	cg.setUsage("uid1", 1e9)
	cg.setUsage("c1", 4e8)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got := make(chan *statsapi.Summary, 1)
	go func() { got <- a.StatsSummary(ctx) }()
	select {
	case sum := <-got:
		if r := nanoCoresOf(t, sum); r["pod"] != -1 || *sum.Pods[0].CPU.UsageCoreNanoSeconds != 1e9 {
			t.Errorf("rates %v, cpu %+v", r, sum.Pods[0].CPU)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("StatsSummary waited for the clock after its context ended")
	}
}

// TestStatsNodeUsage: with Config.NodeUsage the summary carries the node's
// cpu (with a rate between reads) and memory, as the kubelet's node stats
// that metrics-server reads; a failing read leaves them out.
func TestStatsNodeUsage(t *testing.T) {
	rt := newFakeRuntime()
	clk := clocktesting.NewFakeClock(t0)
	cfg := testConfig(t, rt)
	cfg.Clock = clk
	var cpu uint64 = 1e9
	var fail bool
	cfg.NodeUsage = func() (*cgroups.Usage, error) {
		if fail {
			return nil, errors.New("no /proc")
		}
		return &cgroups.Usage{CPUUsageNanoSeconds: cpu, MemoryUsageBytes: 800, WorkingSetBytes: 700,
			Pressure: cgroups.Pressure{CPU: &libcg.PSIStats{Some: libcg.PSIData{Avg10: 1.5, Total: 9}}, IO: &libcg.PSIStats{Full: libcg.PSIData{Total: 4}}}}, nil
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *statsapi.Summary, 1)
	go func() { got <- a.StatsSummary(context.Background()) }()
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	cpu = 3e9 // +2 s of cpu over the warm-up second: 2 cores busy
	clk.Step(statsWarmup)
	sum := <-got
	n := sum.Node
	if n.CPU == nil || *n.CPU.UsageCoreNanoSeconds != 3e9 || n.CPU.UsageNanoCores == nil || *n.CPU.UsageNanoCores != 2e9 {
		t.Errorf("node cpu %+v, want 3e9 ns used at 2e9 nanocores", n.CPU)
	}
	if n.Memory == nil || *n.Memory.WorkingSetBytes != 700 || *n.Memory.UsageBytes != 800 {
		t.Errorf("node memory %+v, want usage 800 working set 700", n.Memory)
	}
	// PSI (KubeletPSI) as read: cpu and io here, none for memory.
	if n.CPU.PSI == nil || n.CPU.PSI.Some.Avg10 != 1.5 || n.CPU.PSI.Some.Total != 9 || n.Memory.PSI != nil ||
		n.IO == nil || n.IO.PSI == nil || n.IO.PSI.Full.Total != 4 {
		t.Errorf("node PSI: cpu %+v memory %+v io %+v", n.CPU.PSI, n.Memory.PSI, n.IO)
	}
	fail = true
	if sum := readSummary(t, a); sum.Node.CPU != nil || sum.Node.Memory != nil {
		t.Errorf("failed read: node stats %+v, want none", sum.Node)
	}
}
