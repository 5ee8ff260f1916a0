package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffnode/skiff/cgroups"
	"github.com/skiffnode/skiff/runtime"
	"github.com/skiffnode/skiff/runtime/fake"
)

// fakeCgroups is a PodCgroups recording what the agent asked, checking
// that a pod's cgroup exists before its sandbox.
type fakeCgroups struct {
	rt *fake.Runtime

	mu       sync.Mutex
	pods     map[types.UID]bool
	log      []string
	oomKills map[string]uint64
	usage    map[string]*cgroups.Usage
	qosPods  int
	// usageReads counts PodUsage and ContainerUsage calls.
	usageReads int
	// ensured: the pods EnsurePod sized, in order.
	ensured []*v1.Pod
}

func newFakeCgroups(rt *fake.Runtime, existing ...types.UID) *fakeCgroups {
	f := &fakeCgroups{rt: rt, pods: map[types.UID]bool{}, oomKills: map[string]uint64{}, usage: map[string]*cgroups.Usage{}}
	for _, uid := range existing {
		f.pods[uid] = true
	}
	return f
}

func (f *fakeCgroups) record(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, s)
}

func (f *fakeCgroups) entries() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.log...)
}

func (f *fakeCgroups) exists(uid types.UID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pods[uid]
}

func (f *fakeCgroups) CgroupParent(pod *v1.Pod) string { return "/kubepods/pod" + string(pod.UID) }

func (f *fakeCgroups) EnsurePod(_ context.Context, pod *v1.Pod) error {
	sandboxes := 0
	for _, c := range f.rt.Calls() {
		if strings.HasPrefix(c, "RunSandbox "+pod.Name) {
			sandboxes++
		}
	}
	f.record(fmt.Sprintf("EnsurePod %s sandboxesBefore=%d", pod.UID, sandboxes))
	f.mu.Lock()
	f.pods[pod.UID] = true
	f.ensured = append(f.ensured, pod)
	f.mu.Unlock()
	return nil
}

func (f *fakeCgroups) RemovePod(_ context.Context, uid types.UID) error {
	f.record("RemovePod " + string(uid))
	f.mu.Lock()
	delete(f.pods, uid)
	f.mu.Unlock()
	return nil
}

func (f *fakeCgroups) ListPods(context.Context) ([]types.UID, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []types.UID
	for uid := range f.pods {
		out = append(out, uid)
	}
	return out, nil
}

func (f *fakeCgroups) UpdateQoS(_ context.Context, pods []*v1.Pod) error {
	f.mu.Lock()
	f.qosPods = len(pods)
	f.mu.Unlock()
	return nil
}

func (f *fakeCgroups) ContainerOOMKills(_ *v1.Pod, id string) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, ok := f.oomKills[id]
	if !ok {
		return 0, fmt.Errorf("cgroup of %s: %w", id, os.ErrNotExist)
	}
	return n, nil
}

func (f *fakeCgroups) PodUsage(pod *v1.Pod) (*cgroups.Usage, error) {
	return f.usageOf(string(pod.UID))
}

func (f *fakeCgroups) ContainerUsage(_ *v1.Pod, id string) (*cgroups.Usage, error) {
	return f.usageOf(id)
}

func (f *fakeCgroups) usageOf(key string) (*cgroups.Usage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.usageReads++
	if u, ok := f.usage[key]; ok {
		c := *u
		return &c, nil
	}
	return nil, errors.New("no cgroup")
}

func startAgentResources(t *testing.T, rt *fake.Runtime, cg PodCgroups, alloc v1.ResourceList) *harness {
	t.Helper()
	cfg := testConfig(t, rt)
	cfg.Cgroups, cfg.Allocatable = cg, alloc
	return runTestAgent(t, cfg)
}

func withRequests(p *v1.Pod, cpu, mem string) *v1.Pod {
	p = p.DeepCopy()
	for i := range p.Spec.Containers {
		p.Spec.Containers[i].Resources.Requests = v1.ResourceList{}
		if cpu != "" {
			p.Spec.Containers[i].Resources.Requests[v1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			p.Spec.Containers[i].Resources.Requests[v1.ResourceMemory] = resource.MustParse(mem)
		}
	}
	return p
}

// TestPodCgroupLifecycle_D4: the pod cgroup exists before the sandbox, the
// sandbox gets its CgroupParent, and it is removed after the pod is gone.
func TestPodCgroupLifecycle_D4(t *testing.T) {
	rt := newFakeRuntime()
	cg := newFakeCgroups(rt)
	h := startAgentResources(t, rt, cg, nil)
	pod := testPod("Always", nil, "app")
	h.src.ch <- []*v1.Pod{pod}
	h.eventually("pod Running", func() bool { return h.phase("uid1") == v1.PodRunning })
	if got := cg.entries(); len(got) == 0 || got[0] != "EnsurePod uid1 sandboxesBefore=0" {
		t.Fatalf("cgroup calls = %v, want EnsurePod before the first RunSandbox", got)
	}
	got, _, err := h.agent.deps.sandboxSpec(pod, 0)
	if err != nil || got.CgroupParent != "/kubepods/poduid1" {
		t.Errorf("sandbox CgroupParent = %q (%v), want /kubepods/poduid1", got.CgroupParent, err)
	}
	h.src.ch <- nil
	h.eventually("pod gone", func() bool { return h.pod("uid1") == nil })
	h.eventually("cgroup removed", func() bool { return !cg.exists("uid1") })
	if l := cg.entries(); l[len(l)-1] != "RemovePod uid1" {
		t.Errorf("last cgroup call = %q, want RemovePod uid1", l[len(l)-1])
	}
}

// TestStaleCgroupsCleanedAtStart: pod cgroups that no source and no
// sandbox accounts for are removed after the first full source sync; the
// desired pod's is kept.
func TestStaleCgroupsCleanedAtStart(t *testing.T) {
	rt := newFakeRuntime()
	cg := newFakeCgroups(rt, "stale1", "uid1")
	h := startAgentResources(t, rt, cg, nil)
	h.src.ch <- []*v1.Pod{testPod("Always", nil, "app")}
	h.eventually("stale cgroup removed", func() bool { return !cg.exists("stale1") })
	h.eventually("pod Running", func() bool { return h.phase("uid1") == v1.PodRunning })
	if !cg.exists("uid1") {
		t.Error("the desired pod's cgroup was removed")
	}
	if slices.Contains(cg.entries(), "RemovePod uid1") {
		t.Error("RemovePod called for a desired pod")
	}
}

// TestSettleOOM_D14: an exit 137 reported as "Error" becomes OOMKilled
// when the container cgroup counted an OOM kill, and stays Error otherwise.
func TestSettleOOM_D14(t *testing.T) {
	rt := newFakeRuntime()
	cg := newFakeCgroups(rt)
	cg.oomKills["oom-0"] = 1
	cg.oomKills["plain-0"] = 0
	w := newPodWorker(&workerDeps{cgroups: cg, log: slog.New(slog.DiscardHandler)}, testPod("Always", nil, "oom"), nil)
	mk := func(id string, code int32, reason string) *runtime.ContainerStatus {
		c := exited(id[:strings.Index(id, "-")], 0, code, t0)
		c.ID, c.Reason = id, reason
		return c
	}
	st := state(sandboxReady(0),
		mk("oom-0", 137, "Error"), mk("plain-0", 137, "Error"), mk("gone-0", 137, ""), mk("other-0", 1, "Error"), mk("known-0", 137, "OOMKilled"))
	w.settleOOM(st)
	want := []string{"OOMKilled", "Error", "", "Error", "OOMKilled"}
	for i, c := range st.Containers {
		if c.Reason != want[i] {
			t.Errorf("%s: reason %q, want %q", c.ID, c.Reason, want[i])
		}
	}
	status := terminatedState(st.Containers[0], "containerd")
	if status.Terminated.Reason != "OOMKilled" || status.Terminated.ExitCode != 137 {
		t.Errorf("terminated = %+v, want OOMKilled 137", status.Terminated)
	}
}

func TestAdmissionFailure_D15(t *testing.T) {
	alloc := v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("1Gi"), v1.ResourcePods: resource.MustParse("3"),
	}
	small := withRequests(testPod("Always", nil, "a"), "500m", "256Mi")
	tests := []struct {
		name     string
		pod      *v1.Pod
		admitted []*v1.Pod
		alloc    v1.ResourceList
		reason   string
		message  string
	}{
		{"no allocatable: always admitted", withRequests(testPod("Always", nil, "a"), "64", ""), nil, nil, "", ""},
		{"fits", small, []*v1.Pod{small, small}, alloc, "", ""},
		{"besteffort fits anywhere", testPod("Always", nil, "a"), []*v1.Pod{withRequests(small, "2", "1Gi")}, alloc, "", ""},
		{"too much cpu", withRequests(testPod("Always", nil, "a"), "4", ""), nil, alloc, "OutOfcpu",
			"Pod was rejected: Node didn't have enough resource: cpu, requested: 4000, used: 0, capacity: 2000"},
		{"cpu used by others", withRequests(testPod("Always", nil, "a"), "1", ""), []*v1.Pod{withRequests(small, "1500m", "")}, alloc, "OutOfcpu",
			"Pod was rejected: Node didn't have enough resource: cpu, requested: 1000, used: 1500, capacity: 2000"},
		{"too much memory", withRequests(testPod("Always", nil, "a"), "", "2Gi"), nil, alloc, "OutOfmemory",
			"Pod was rejected: Node didn't have enough resource: memory, requested: 2147483648, used: 0, capacity: 1073741824"},
		{"too many pods", testPod("Always", nil, "a"), []*v1.Pod{small, small, small}, alloc, "OutOfpods",
			"Pod was rejected: Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := admissionFailure(tt.pod, tt.admitted, tt.alloc)
			if tt.reason == "" {
				if f != nil {
					t.Fatalf("rejected: %+v", f)
				}
				return
			}
			if f == nil || f.Reason != tt.reason || f.Message != tt.message {
				t.Fatalf("failure = %+v, want %s %q", f, tt.reason, tt.message)
			}
		})
	}
}

// TestAdmissionRejectsWithoutDisturbing_D15: an oversized pod fails with
// OutOfcpu and never gets a sandbox; the running pod is untouched.
func TestAdmissionRejectsWithoutDisturbing_D15(t *testing.T) {
	rt := newFakeRuntime()
	alloc := v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourcePods: resource.MustParse("110")}
	h := startAgentResources(t, rt, nil, alloc)
	first := withRequests(testPod("Always", nil, "app"), "1", "")
	h.src.ch <- []*v1.Pod{first}
	h.eventually("first pod Running", func() bool { return h.phase("uid1") == v1.PodRunning })
	before, _ := rt.ContainerByName("uid1", "app")
	big := withRequests(testPod("Always", nil, "app"), "1500m", "")
	big.Name, big.UID = "big", "uid2"
	h.src.ch <- []*v1.Pod{first, big}
	h.eventually("big pod Failed", func() bool { return h.phase("uid2") == v1.PodFailed })
	p := h.pod("uid2")
	if p.Status.Reason != "OutOfcpu" || !strings.Contains(p.Status.Message, "cpu, requested: 1500, used: 1000, capacity: 2000") {
		t.Errorf("status reason %q message %q", p.Status.Reason, p.Status.Message)
	}
	h.settle(10)
	for _, c := range rt.Calls() {
		if strings.HasPrefix(c, "RunSandbox big") {
			t.Errorf("rejected pod got a sandbox: %s", c)
		}
	}
	after, _ := rt.ContainerByName("uid1", "app")
	if after.ID != before.ID || after.State != runtime.ContainerRunning || h.phase("uid1") != v1.PodRunning {
		t.Errorf("running pod disturbed: before %s, after %s %s", before.ID, after.ID, after.State)
	}
	var found bool
	for _, e := range h.agent.Events() {
		if e.Reason == "OutOfcpu" && e.InvolvedObject.UID == "uid2" {
			found = true
		}
	}
	if !found {
		t.Error("no OutOfcpu event")
	}
}

func TestAllocatable_D15(t *testing.T) {
	capacity := v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("4Gi"), v1.ResourcePods: resource.MustParse("110")}
	got := Allocatable(capacity,
		v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("1Gi")},
		v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m"), "example.com/unknown": resource.MustParse("1")},
		v1.ResourceList{v1.ResourceMemory: resource.MustParse("100Mi")})
	want := map[v1.ResourceName]string{v1.ResourceCPU: "1250m", v1.ResourceMemory: "2972Mi", v1.ResourcePods: "110"}
	for name, w := range want {
		q := got[name]
		if q.Cmp(resource.MustParse(w)) != 0 {
			t.Errorf("allocatable %s = %s, want %s", name, q.String(), w)
		}
	}
	if _, ok := got["example.com/unknown"]; ok {
		t.Error("a reservation of a resource without capacity became allocatable")
	}
	over := Allocatable(capacity, v1.ResourceList{v1.ResourceCPU: resource.MustParse("3")})
	if q := over[v1.ResourceCPU]; q.Sign() != 0 {
		t.Errorf("over-reserved cpu = %s, want 0", q.String())
	}
	if q := capacity[v1.ResourceCPU]; q.String() != "2" {
		t.Errorf("Allocatable changed its input: %s", q.String())
	}
}

func TestNodeCapacity(t *testing.T) {
	path := t.TempDir() + "/meminfo"
	if err := os.WriteFile(path, []byte("MemFree:  1 kB\nMemTotal:       24683620 kB\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := NodeCapacity(path, 110)
	if err != nil {
		t.Fatal(err)
	}
	if q := c[v1.ResourceMemory]; q.Value() != 24683620*1024 {
		t.Errorf("memory = %d", q.Value())
	}
	if q := c[v1.ResourcePods]; q.Value() != 110 {
		t.Errorf("pods = %d", q.Value())
	}
	if q := c[v1.ResourceCPU]; q.Value() < 1 {
		t.Errorf("cpu = %d", q.Value())
	}
	if err := os.WriteFile(path, []byte("MemFree: 1 kB\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := NodeCapacity(path, 110); err == nil {
		t.Error("no MemTotal: want an error")
	}
}

// heldRemoval is a fake runtime whose RemoveContainer waits for release.
type heldRemoval struct {
	*fake.Runtime
	release chan struct{}
}

func (r *heldRemoval) RemoveContainer(ctx context.Context, id string) error {
	select {
	case <-r.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return r.Runtime.RemoveContainer(ctx, id)
}

// TestAdmissionIgnoresStoppedPods_D15: a deleted pod whose containers and
// sandbox are stopped no longer holds its requests while its removal is
// still going on (the kubelet's filterOutInactivePods); a pod that needs
// them is admitted.
func TestAdmissionIgnoresStoppedPods_D15(t *testing.T) {
	rt := &heldRemoval{Runtime: newFakeRuntime(), release: make(chan struct{})}
	defer close(rt.release)
	cfg := testConfig(t, rt)
	cfg.Allocatable = v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourcePods: resource.MustParse("110")}
	h := runTestAgent(t, cfg)
	h.rt = rt.Runtime
	old := withRequests(testPod("Always", nil, "app"), "1500m", "")
	h.src.ch <- []*v1.Pod{old}
	h.eventually("old pod Running", func() bool { return h.phase("uid1") == v1.PodRunning })
	h.src.ch <- nil
	h.eventually("old sandbox stopped", func() bool { return strings.Contains(strings.Join(rt.Calls(), "\n"), "StopSandbox") })
	repl := withRequests(testPod("Always", nil, "app"), "1500m", "")
	repl.Name, repl.UID = "new", "uid2"
	h.src.ch <- []*v1.Pod{repl}
	h.eventually("new pod Running", func() bool { return h.phase("uid2") == v1.PodRunning })
}

// The stale cgroup cleanup stops at shutdown: Run waits for it, and each
// removal of a busy cgroup retries for seconds.
func TestCleanStaleCgroupsStopsAtShutdown(t *testing.T) {
	rt := newFakeRuntime()
	cg := newFakeCgroups(rt, "stale1", "stale2")
	cfg := testConfig(t, rt)
	cfg.Cgroups = cg
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a.sourcesReady = true
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	a.cleanStaleCgroups(ctx, nil)
	if !cg.exists("stale1") || !cg.exists("stale2") {
		t.Errorf("stale cgroups removed after shutdown began: %v", cg.entries())
	}
}

// TestOSFailure_A2: a pod for another OS is rejected before anything
// else, by its spec.os or its kubernetes.io/os label, with the kubelet's
// reasons; a pod for this OS, or that names none, is admitted.
func TestOSFailure_A2(t *testing.T) {
	withOS := func(os string) *v1.Pod {
		p := testPod("Always", nil, "app")
		p.Spec.OS = &v1.PodOS{Name: v1.OSName(os)}
		return p
	}
	withLabel := func(os string) *v1.Pod {
		p := testPod("Always", nil, "app")
		p.Labels = map[string]string{v1.LabelOSStable: os}
		return p
	}
	tests := []struct {
		name, wantReason string
		pod              *v1.Pod
	}{
		{"no OS", "", testPod("Always", nil, "app")},
		{"spec.os linux", "", withOS("linux")},
		{"spec.os windows", "PodOSNotSupported", withOS("windows")},
		{"label linux", "", withLabel("linux")},
		{"label windows", "PodOSSelectorNodeLabelDoesNotMatch", withLabel("windows")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := osFailure(tt.pod, "linux")
			switch {
			case tt.wantReason == "" && f != nil:
				t.Errorf("rejected: %+v", f)
			case tt.wantReason != "" && (f == nil || f.Reason != tt.wantReason || !strings.HasPrefix(f.Message, "Pod was rejected: Failed to admit pod as the ")):
				t.Errorf("failure %+v, want reason %s", f, tt.wantReason)
			}
		})
	}
}

// TestOOMGroupKill: with OOMGroupKill (cgroup v2, the kubelet's default)
// every container asks for memory.oom.group=1; without it, nothing.
func TestOOMGroupKill(t *testing.T) {
	for _, on := range []bool{true, false} {
		rt := newFakeRuntime()
		cfg := testConfig(t, rt)
		cfg.OOMGroupKill = on
		h := runTestAgent(t, cfg)
		h.src.ch <- []*v1.Pod{testPod("Always", nil, "a")}
		h.eventually("pod Running", func() bool { return h.phase("uid1") == v1.PodRunning })
		got := appSpec(t, h).Resources.Unified
		if on && !maps.Equal(got, map[string]string{"memory.oom.group": "1"}) || !on && got != nil {
			t.Errorf("OOMGroupKill %v: unified %v", on, got)
		}
	}
}
