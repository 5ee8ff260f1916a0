package agent

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/skiffnode/skiff/cgroups"
	"github.com/skiffnode/skiff/runtime"
)

// res builds requirements from "cpu/memory" request and limit strings
// ("" leaves one out).
func res(reqCPU, reqMem, limCPU, limMem string) v1.ResourceRequirements {
	list := func(cpu, mem string) v1.ResourceList {
		l := v1.ResourceList{}
		if cpu != "" {
			l[v1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			l[v1.ResourceMemory] = resource.MustParse(mem)
		}
		if len(l) == 0 {
			return nil
		}
		return l
	}
	return v1.ResourceRequirements{Requests: list(reqCPU, reqMem), Limits: list(limCPU, limMem)}
}

func withResources(p *v1.Pod, name string, r v1.ResourceRequirements) *v1.Pod {
	p = p.DeepCopy()
	for _, c := range allContainers(p) {
		if c.Name == name {
			c.Resources = r
		}
	}
	return p
}

func TestResourcesDifferAndWithAllocation(t *testing.T) {
	base := withResources(testPod("Always", []string{"init"}, "a", "b"), "a", res("100m", "64Mi", "", "128Mi"))
	resized := withResources(base, "a", res("200m", "64Mi", "", "256Mi"))
	edited := base.DeepCopy()
	edited.Labels = map[string]string{"x": "y"}
	if resourcesDiffer(edited, base) {
		t.Error("a label edit counts as a resize")
	}
	if !resourcesDiffer(resized, base) {
		t.Fatal("a changed memory limit is not a resize")
	}
	// The worker's pod: the newest object with the allocated resources.
	got := withAllocation(resized, base)
	if got == resized || resourcesDiffer(got, base) {
		t.Errorf("withAllocation kept the unallocated resources: %+v", got.Spec.Containers[0].Resources)
	}
	if resized.Spec.Containers[0].Resources.Limits.Memory().String() != "256Mi" {
		t.Error("withAllocation changed its input")
	}
	if withAllocation(edited, base) != edited {
		t.Error("withAllocation copied a pod whose resources are allocated")
	}
}

// TestResizeFailure: a resize beyond allocatable is Infeasible (the 1.34
// kubelet's message); one that does not fit next to the other pods waits
// with the admission's reason and message (shown as Deferred); one that
// fits passes.
func TestResizeFailure(t *testing.T) {
	alloc := v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("4Gi"), v1.ResourcePods: resource.MustParse("110")}
	other := withRequests(testPod("Always", nil, "o"), "3", "1Gi")
	for _, tc := range []struct {
		name          string
		pod           *v1.Pod
		others        []*v1.Pod
		reason, msgOf string
	}{
		{name: "fits", pod: withRequests(testPod("Always", nil, "a"), "1", "1Gi"), others: []*v1.Pod{other}},
		{name: "beyond allocatable", pod: withRequests(testPod("Always", nil, "a"), "5", "1Gi"),
			reason: v1.PodReasonInfeasible, msgOf: "Node didn't have enough capacity: cpu, requested: 5000, capacity: 4000"},
		{name: "not next to the others", pod: withRequests(testPod("Always", nil, "a"), "2", "1Gi"), others: []*v1.Pod{other},
			reason: "OutOfcpu", msgOf: "Node didn't have enough resource: cpu, requested: 2000, used: 3000, capacity: 4000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := resizeFailure(tc.pod, tc.others, alloc)
			switch {
			case tc.reason == "" && f != nil:
				t.Errorf("refused: %+v", f)
			case tc.reason != "" && (f == nil || f.Reason != tc.reason || f.Message != tc.msgOf):
				t.Errorf("got %+v, want %s %q", f, tc.reason, tc.msgOf)
			}
		})
	}
}

// TestResizeMessage: the kubelet's event text (its test's example).
func TestResizeMessage(t *testing.T) {
	p := withResources(testPod("Always", nil, "c1"), "c1", res("5", "4500Mi", "", ""))
	got := resizeMessage("Pod resize OutOfcpu", p, 2, "Node didn't have enough resource: cpu, requested: 5000, used: 0, capacity: 4000")
	want := `Pod resize OutOfcpu: {"containers":[{"name":"c1","resources":{"requests":{"cpu":"5","memory":"4500Mi"}}}],"generation":2,"error":"Node didn't have enough resource: cpu, requested: 5000, used: 0, capacity: 4000"}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// TestSetPending: any reason but Infeasible shows as Deferred; the
// transition time moves with the reason only; an unchanged retry changes
// nothing (no event, no status churn).
func TestSetPending(t *testing.T) {
	r := newResizeState(testPod("Always", nil, "a"))
	t1, t2, t3 := time.Unix(100, 0), time.Unix(200, 0), time.Unix(300, 0)
	if !r.setPending(&admitResult{Reason: "OutOfcpu", Message: "m"}, 2, t1) {
		t.Error("a new pending resize reported unchanged")
	}
	c := r.pendingCondition()
	if c.Reason != v1.PodReasonDeferred || c.Message != "m" || c.ObservedGeneration != 2 || !c.LastTransitionTime.Time.Equal(t1) {
		t.Errorf("condition %+v", c)
	}
	if r.setPending(&admitResult{Reason: "OutOfcpu", Message: "m"}, 2, t2) || !r.pendingCondition().LastProbeTime.Time.Equal(t1) {
		t.Error("an unchanged retry changed the condition")
	}
	if !r.setPending(&admitResult{Reason: "OutOfmemory", Message: "m2"}, 3, t2) || !r.pendingCondition().LastTransitionTime.Time.Equal(t1) {
		t.Errorf("Deferred again at a new generation: %+v, want reported and the transition time kept", r.pendingCondition())
	}
	if !r.setPending(&admitResult{Reason: v1.PodReasonInfeasible, Message: "m3"}, 3, t3) {
		t.Error("Infeasible after Deferred reported unchanged")
	}
	if c := r.pendingCondition(); c.Reason != v1.PodReasonInfeasible || !c.LastTransitionTime.Time.Equal(t3) || r.isDeferred() {
		t.Errorf("condition %+v", c)
	}
	r.accept(testPod("Always", nil, "a"))
	if r.pendingCondition() != nil {
		t.Error("accept left the pending condition")
	}
}

// TestPlanResize: a running container whose allocation changed is resized
// in place, or restarted where its resizePolicy says RestartContainer for
// a resource that changed; a request the runtime does not apply (memory)
// needs no call; unknown, stopped and skipped containers are left alone.
func TestPlanResize(t *testing.T) {
	old := res("100m", "64Mi", "200m", "128Mi")
	restartMem := []v1.ContainerResizePolicy{{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}}
	for _, tc := range []struct {
		name        string
		want        v1.ResourceRequirements
		policy      []v1.ContainerResizePolicy
		cs          *runtime.ContainerStatus
		unknown     bool
		skip        bool
		resize      bool
		call        bool
		restart     bool
		restartMsgs string
	}{
		{name: "unchanged", want: old, cs: running("a", 0)},
		{name: "cpu in place", want: res("300m", "64Mi", "400m", "128Mi"), cs: running("a", 0), resize: true, call: true},
		{name: "memory request only", want: res("100m", "96Mi", "200m", "128Mi"), cs: running("a", 0), resize: true},
		{name: "memory limit, RestartContainer", want: res("100m", "64Mi", "200m", "256Mi"), policy: restartMem, cs: running("a", 0), restart: true},
		{name: "cpu, RestartContainer for memory", want: res("300m", "64Mi", "400m", "128Mi"), policy: restartMem, cs: running("a", 0), resize: true, call: true},
		{name: "not running", want: res("300m", "64Mi", "400m", "128Mi"), cs: exited("a", 0, 1, t0)},
		{name: "unknown: set once in place", want: res("300m", "64Mi", "400m", "128Mi"), cs: running("a", 0), unknown: true, resize: true, call: true},
		{name: "skipped (being killed)", want: res("300m", "64Mi", "400m", "128Mi"), cs: running("a", 0), skip: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := withResources(testPod("Always", nil, "a"), "a", tc.want)
			pod.Spec.Containers[0].ResizePolicy = tc.policy
			x := planExtras{Actuated: func(*runtime.ContainerStatus) (v1.ResourceRequirements, bool) { return old, !tc.unknown }}
			rs, restarts := planResize(pod, map[string]*runtime.ContainerStatus{"a": tc.cs}, x, map[string]bool{tc.cs.ID: tc.skip})
			if got := len(rs) == 1; got != tc.resize {
				t.Fatalf("resizes %+v, want resize %t", rs, tc.resize)
			}
			if tc.resize && rs[0].Call != tc.call {
				t.Errorf("Call %t, want %t", rs[0].Call, tc.call)
			}
			if got := len(restarts) == 1; got != tc.restart {
				t.Fatalf("restarts %+v, want restart %t", restarts, tc.restart)
			}
			if tc.restart && (restarts[0].Message != "Container a resize requires restart" || !restarts[0].Restart) {
				t.Errorf("restart %+v", restarts[0])
			}
		})
	}
}

// TestGrownPod: the pod cgroup first covers both the old and the new
// values of each resized container: the larger request and limit, no
// limit where either has none.
func TestGrownPod(t *testing.T) {
	pod := withResources(testPod("Always", nil, "a", "b"), "a", res("200m", "64Mi", "200m", "64Mi"))
	pod = withResources(pod, "b", res("100m", "", "100m", "32Mi"))
	calls := []containerResize{
		{Container: running("a", 0), Old: res("100m", "128Mi", "100m", "128Mi"), Want: pod.Spec.Containers[0].Resources},
		{Container: running("b", 0), Old: res("100m", "", "", "32Mi"), Want: pod.Spec.Containers[1].Resources},
	}
	g := grownPod(pod, calls)
	a, b := g.Spec.Containers[0].Resources, g.Spec.Containers[1].Resources
	if a.Limits.Cpu().String() != "200m" || a.Limits.Memory().String() != "128Mi" || a.Requests.Memory().String() != "128Mi" {
		t.Errorf("a grown to %+v", a)
	}
	if _, ok := b.Limits[v1.ResourceCPU]; ok || b.Limits.Memory().String() != "32Mi" {
		t.Errorf("b grown to %+v, want no cpu limit (it had none)", b)
	}
	if got := cgroups.ForPod(g, 0, 0); got.CPUQuota != 0 || got.Memory != 160<<20 {
		t.Errorf("grown pod cgroup %+v, want no quota and 160Mi", got)
	}
	if pod.Spec.Containers[0].Resources.Limits.Memory().String() != "64Mi" {
		t.Error("grownPod changed its input")
	}
}

// TestStatusResources: allocatedResources is the allocation's requests;
// resources is what a running container runs with, else the allocation.
func TestStatusResources(t *testing.T) {
	pod := withResources(testPod("Always", nil, "a", "b", "c"), "a", res("200m", "64Mi", "", "128Mi"))
	pod = withResources(pod, "b", res("200m", "64Mi", "", "128Mi"))
	statuses := []v1.ContainerStatus{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	latest := map[string]*runtime.ContainerStatus{"a": running("a", 0), "b": exited("b", 0, 1, t0)}
	ran := res("100m", "64Mi", "", "128Mi")
	statusResources(allContainers(pod), statuses, latest, func(*runtime.ContainerStatus) (v1.ResourceRequirements, bool) { return ran, true })
	if got := statuses[0]; got.Resources.Requests.Cpu().String() != "100m" || got.AllocatedResources.Cpu().String() != "200m" {
		t.Errorf("running a: resources %v, allocated %v", got.Resources, got.AllocatedResources)
	}
	if got := statuses[1]; got.Resources.Requests.Cpu().String() != "200m" {
		t.Errorf("exited b: resources %v, want its allocation", got.Resources)
	}
	if got := statuses[2]; got.Resources != nil || got.AllocatedResources != nil {
		t.Errorf("c, not created: resources %v, allocated %v; want neither", got.Resources, got.AllocatedResources)
	}
}

func TestResizeStatusAnnotationRoundTrip(t *testing.T) {
	r := res("100m", "64Mi", "", "128Mi")
	cs := running("a", 0)
	cs.Annotations = map[string]string{annotationResources: resourcesAnnotation(r)}
	w := &podWorker{marks: newContainerMarks()}
	got, ok := w.actuated(cs)
	if !ok || got.Limits.Memory().String() != "128Mi" || got.Requests.Cpu().String() != "100m" {
		t.Errorf("actuated from the annotation: %+v %t", got, ok)
	}
	if _, ok := w.actuated(running("b", 0)); ok {
		t.Error("a container without the annotation has known resources")
	}
	if !strings.Contains(resourcesAnnotation(r), `"memory":"128Mi"`) {
		t.Errorf("annotation %s", resourcesAnnotation(r))
	}
}

func podCondition(p *v1.Pod, typ v1.PodConditionType) *v1.PodCondition {
	if p == nil {
		return nil
	}
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == typ {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// TestAgentResizesInPlace: a running pod's new resources (pods/resize) are
// admitted and set on the running container without a restart: the pod
// cgroup first grows to cover old and new, then takes the new values; the
// status shows allocatedResources and resources, and the events the
// kubelet records.
func TestAgentResizesInPlace(t *testing.T) {
	rt := newFakeRuntime()
	cg := newFakeCgroups(rt)
	alloc := v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("4Gi"), v1.ResourcePods: resource.MustParse("110")}
	h := startAgentResources(t, rt, cg, alloc)
	pod := withResources(testPod("Always", nil, "a"), "a", res("100m", "64Mi", "200m", "128Mi"))
	pod.Generation = 1
	h.src.ch <- []*v1.Pod{pod}
	h.eventually("pod Running", func() bool { return h.phase("uid1") == v1.PodRunning })
	before, _ := rt.ContainerByName("uid1", "a")

	resized := withResources(pod, "a", res("300m", "64Mi", "400m", "256Mi"))
	resized.Generation = 2
	h.src.ch <- []*v1.Pod{resized}
	h.eventually("a resized", func() bool {
		spec, _ := rt.ContainerSpecOf(before.ID)
		return spec.Resources.CPUQuota == 40000 && spec.Resources.MemoryLimit == 256<<20 && spec.Resources.CPUShares == 307
	})
	h.eventually("status shows the new resources", func() bool {
		p := h.pod("uid1")
		s := p.Status.ContainerStatuses[0]
		return s.Resources != nil && s.Resources.Limits.Memory().String() == "256Mi" && s.AllocatedResources.Cpu().String() == "300m" &&
			podCondition(p, v1.PodResizeInProgress) == nil && p.Status.ObservedGeneration == 2
	})
	if after, _ := rt.ContainerByName("uid1", "a"); after.ID != before.ID {
		t.Errorf("a restarted (%s -> %s), want resized in place", before.ID, after.ID)
	}
	for reason, want := range map[string]string{
		EventResizeStarted:   `Pod resize started: {"containers":[{"name":"a","resources":{"limits":{"cpu":"400m","memory":"256Mi"}`,
		EventResizeCompleted: `Pod resize completed: {"containers":[{"name":"a","resources":{"limits":{"cpu":"400m","memory":"256Mi"}`,
	} {
		if !h.hasEvent(reason, want) {
			t.Errorf("no event %s %q: %+v", reason, want, h.agent.Events())
		}
	}
	cg.mu.Lock()
	ensured := append([]*v1.Pod(nil), cg.ensured...)
	cg.mu.Unlock()
	if n := len(ensured); n < 3 {
		t.Fatalf("pod cgroup sized %d times, want at creation, grown, then resized", n)
	}
	grown, final := ensured[len(ensured)-2], ensured[len(ensured)-1]
	if got := cgroups.ForPod(grown, 0, 0); got.Memory != 256<<20 || got.CPUQuota != 40000 {
		t.Errorf("grown pod cgroup %+v", got)
	}
	if got := cgroups.ForPod(final, 0, 0); got.Memory != 256<<20 || got.CPUShares != 307 {
		t.Errorf("final pod cgroup %+v", got)
	}
}

// TestAgentResizeRestartContainer: a resource whose resizePolicy says
// RestartContainer restarts the container with its new limits.
func TestAgentResizeRestartContainer(t *testing.T) {
	rt := newFakeRuntime()
	h := startAgent(t, rt)
	pod := withResources(testPod("Always", nil, "a"), "a", res("100m", "64Mi", "", "128Mi"))
	pod.Spec.Containers[0].ResizePolicy = []v1.ContainerResizePolicy{{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}}
	h.src.ch <- []*v1.Pod{pod}
	h.eventually("pod Running", func() bool { return h.phase("uid1") == v1.PodRunning })
	before, _ := rt.ContainerByName("uid1", "a")

	h.src.ch <- []*v1.Pod{withResources(pod, "a", res("100m", "64Mi", "", "256Mi"))}
	h.eventually("a restarted with 256Mi", func() bool {
		c, ok := rt.ContainerByName("uid1", "a")
		if !ok || c.ID == before.ID || c.State != runtime.ContainerRunning {
			return false
		}
		spec, _ := rt.ContainerSpecOf(c.ID)
		return spec.Resources.MemoryLimit == 256<<20 && c.Attempt == before.Attempt+1
	})
	if !h.hasEvent(EventKilling, "Container a resize requires restart") {
		t.Errorf("no Killing event for the resize: %+v", h.agent.Events())
	}
	h.eventually("resize completed", func() bool { return h.hasEvent(EventResizeCompleted, "Pod resize completed") })
}

// TestAgentResizeDeferredThenAdmitted: a resize that does not fit next to
// the other pods is Deferred (condition and event, the kubelet's texts)
// and admitted once another pod is gone; one beyond allocatable is
// Infeasible.
func TestAgentResizeDeferredThenAdmitted(t *testing.T) {
	rt := newFakeRuntime()
	alloc := v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("4Gi"), v1.ResourcePods: resource.MustParse("110")}
	h := startAgentResources(t, rt, nil, alloc)
	p1 := withResources(testPod("Always", nil, "a"), "a", res("1", "64Mi", "", ""))
	p1.Generation = 1
	p2 := withResources(testPod("Always", nil, "b"), "b", res("1", "64Mi", "", ""))
	p2.Name, p2.UID = "other", "uid2"
	h.src.ch <- []*v1.Pod{p1, p2}
	h.eventually("pods Running", func() bool { return h.phase("uid1") == v1.PodRunning && h.phase("uid2") == v1.PodRunning })
	a, _ := rt.ContainerByName("uid1", "a")

	r1 := withResources(p1, "a", res("1500m", "64Mi", "", ""))
	r1.Generation = 2
	h.src.ch <- []*v1.Pod{r1, p2}
	h.eventually("PodResizePending Deferred", func() bool {
		c := podCondition(h.pod("uid1"), v1.PodResizePending)
		return c != nil && c.Reason == v1.PodReasonDeferred && c.ObservedGeneration == 2 &&
			c.Message == "Node didn't have enough resource: cpu, requested: 1500, used: 1000, capacity: 2000"
	})
	if !h.hasEvent(EventResizeDeferred, `Pod resize OutOfcpu: {"containers":[{"name":"a","resources":{"requests":{"cpu":"1500m"`) {
		t.Errorf("no ResizeDeferred event: %+v", h.agent.Events())
	}
	if spec, _ := rt.ContainerSpecOf(a.ID); spec.Resources.CPUShares != 1024 {
		t.Errorf("a's cpu shares %d while deferred, want 1024", spec.Resources.CPUShares)
	}
	if s := h.pod("uid1").Status.ContainerStatuses[0]; s.AllocatedResources.Cpu().String() != "1" {
		t.Errorf("allocatedResources %v while deferred, want cpu 1", s.AllocatedResources)
	}

	h.src.ch <- []*v1.Pod{r1}
	h.eventually("resize admitted once the other pod is gone", func() bool {
		spec, _ := rt.ContainerSpecOf(a.ID)
		return spec.Resources.CPUShares == 1536 && podCondition(h.pod("uid1"), v1.PodResizePending) == nil
	})

	r2 := withResources(r1, "a", res("3", "64Mi", "", ""))
	r2.Generation = 3
	h.src.ch <- []*v1.Pod{r2}
	h.eventually("PodResizePending Infeasible", func() bool {
		c := podCondition(h.pod("uid1"), v1.PodResizePending)
		return c != nil && c.Reason == v1.PodReasonInfeasible && c.Message == "Node didn't have enough capacity: cpu, requested: 3000, capacity: 2000"
	})
	if !h.hasEvent(EventResizeInfeasible, "Pod resize Infeasible: ") {
		t.Errorf("no ResizeInfeasible event: %+v", h.agent.Events())
	}
	h.src.ch <- []*v1.Pod{r1}
	h.eventually("reverted resize clears PodResizePending", func() bool { return podCondition(h.pod("uid1"), v1.PodResizePending) == nil })
}

// TestAgentResizeMemoryBelowUsage: a memory limit below what the container
// uses is not set; PodResizeInProgress says why (reason Error) and a
// ResizeError event is recorded, as the kubelet does.
func TestAgentResizeMemoryBelowUsage(t *testing.T) {
	rt := newFakeRuntime()
	cg := newFakeCgroups(rt)
	h := startAgentResources(t, rt, cg, nil)
	pod := withResources(testPod("Always", nil, "a"), "a", res("100m", "64Mi", "", "128Mi"))
	h.src.ch <- []*v1.Pod{pod}
	h.eventually("pod Running", func() bool { return h.phase("uid1") == v1.PodRunning })
	a, _ := rt.ContainerByName("uid1", "a")
	cg.mu.Lock()
	cg.usage[a.ID] = &cgroups.Usage{MemoryUsageBytes: 100 << 20}
	cg.mu.Unlock()

	resized := withResources(pod, "a", res("100m", "64Mi", "", "80Mi"))
	resized.Generation = 2
	h.src.ch <- []*v1.Pod{resized}
	want := `cannot decrease memory limits: attempting to set container "a" memory limit (83886080) below current usage (104857600)`
	h.eventually("PodResizeInProgress Error", func() bool {
		c := podCondition(h.pod("uid1"), v1.PodResizeInProgress)
		return c != nil && c.Reason == v1.PodReasonError && c.Message == want
	})
	if !h.hasEvent(EventResizeError, "Pod resize error: ") {
		t.Errorf("no ResizeError event: %+v", h.agent.Events())
	}
	if spec, _ := rt.ContainerSpecOf(a.ID); spec.Resources.MemoryLimit != 128<<20 {
		t.Errorf("memory limit %d, want 128Mi kept", spec.Resources.MemoryLimit)
	}
}

// TestAllocationFromStatus: a pod that ran before the agent started is
// allocated what its status says its containers run with, so that a
// resize pending then is admitted again, not taken as done; a pod whose
// status says nothing else is its own allocation.
func TestAllocationFromStatus(t *testing.T) {
	pod := withResources(testPod("Always", nil, "a", "b"), "a", res("300m", "64Mi", "", ""))
	if allocationFromStatus(pod) != pod {
		t.Error("a pod without status resources got another allocation")
	}
	ran := res("100m", "64Mi", "", "")
	pod.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "a", Resources: &ran}, {Name: "b"}}
	alloc := allocationFromStatus(pod)
	if got := alloc.Spec.Containers[0].Resources.Requests.Cpu().String(); got != "100m" {
		t.Errorf("a allocated %s, want the 100m it runs with", got)
	}
	if pod.Spec.Containers[0].Resources.Requests.Cpu().String() != "300m" {
		t.Error("allocationFromStatus changed its input")
	}
	if !resourcesDiffer(pod, alloc) {
		t.Error("the pending resize is not seen against the allocation")
	}
}
