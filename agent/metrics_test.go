package agent

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/skiffnode/skiff/images"
	"github.com/skiffnode/skiff/runtime"
)

// recordingMetrics is a Metrics that keeps what it is told.
type recordingMetrics struct {
	mu         sync.Mutex
	passes     []WorkerOperation
	passTimes  []time.Duration
	starts     []time.Duration
	slis       []time.Duration
	relists    int
	sandboxes  []bool
	containers []string // "<type> <code>"
	restarts   []bool
	evictions  []string
}

func (m *recordingMetrics) PodWorkerDuration(op WorkerOperation, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.passes, m.passTimes = append(m.passes, op), append(m.passTimes, d)
}

func (m *recordingMetrics) PodStartDuration(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.starts = append(m.starts, d)
}

func (m *recordingMetrics) PodStartSLIDuration(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.slis = append(m.slis, d)
}

func (m *recordingMetrics) RelistDuration(time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.relists++
}

func (m *recordingMetrics) SandboxStarted(failed bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sandboxes = append(m.sandboxes, failed)
}

func (m *recordingMetrics) ContainerStarted(t ContainerType, code string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.containers = append(m.containers, string(t)+" "+code)
}

func (m *recordingMetrics) PodRestarted(static bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.restarts = append(m.restarts, static)
}

func (m *recordingMetrics) PodEvicted(signal string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.evictions = append(m.evictions, signal)
}

// snapshot returns a copy of what m recorded, for comparing.
func (m *recordingMetrics) snapshot() recordingMetrics {
	m.mu.Lock()
	defer m.mu.Unlock()
	return recordingMetrics{
		passes: slices.Clone(m.passes), passTimes: slices.Clone(m.passTimes),
		starts: slices.Clone(m.starts), slis: slices.Clone(m.slis), relists: m.relists,
		sandboxes: slices.Clone(m.sandboxes), containers: slices.Clone(m.containers),
		restarts: slices.Clone(m.restarts), evictions: slices.Clone(m.evictions),
	}
}

// slowSandboxes makes RunSandbox take took on clk.
type slowSandboxes struct {
	runtime.Runtime
	clk  *clocktesting.FakeClock
	took time.Duration
}

func (r *slowSandboxes) RunSandbox(ctx context.Context, spec *runtime.SandboxSpec) (string, error) {
	r.clk.Step(r.took)
	return r.Runtime.RunSandbox(ctx, spec)
}

// slowPuller makes each pull take took on clk.
type slowPuller struct {
	ImagePuller
	clk  *clocktesting.FakeClock
	took time.Duration
}

func (p *slowPuller) Pull(ctx context.Context, ref string, auths []runtime.AuthConfig) (images.PullResult, error) {
	p.clk.Step(p.took)
	return p.ImagePuller.Pull(ctx, ref, auths)
}

// newMetricsWorker is a pullWorker (fake clock, runtime and puller) that
// reports to a recordingMetrics, its pod first seen at t0.
func newMetricsWorker(t *testing.T, pod *v1.Pod) (*pullWorker, *recordingMetrics) {
	t.Helper()
	pw := newPullWorker(t, pod, nil)
	m := &recordingMetrics{}
	pw.w.d.metricsPort = m
	pw.w.start = podStart{firstSeen: t0}
	return pw, m
}

// TestWorkerPassesRecorded: the first sync is a create, a sync that takes
// a newer object an update, others syncs, a termination a kill; each is
// timed on the worker's clock.
func TestWorkerPassesRecorded(t *testing.T) {
	pw, m := newMetricsWorker(t, testPod("Always", nil, "app"))
	pw.rt.AddImage("img")
	pw.w.d.rt = &slowSandboxes{Runtime: pw.w.d.rt, clk: pw.clk, took: 3 * time.Second}
	pw.syncAt(time.Second)
	pw.syncAt(5 * time.Second)
	updated := pw.w.pod.DeepCopy()
	updated.Labels = map[string]string{"edited": "yes"}
	pw.w.update(updated)
	pw.syncAt(6 * time.Second)
	pw.syncAt(7 * time.Second)
	if !pw.w.terminate(context.Background(), nil) {
		t.Fatal("terminate did not finish")
	}
	got := m.snapshot()
	want := []WorkerOperation{OperationCreate, OperationSync, OperationUpdate, OperationSync, OperationKill}
	if !slices.Equal(got.passes, want) {
		t.Errorf("passes %v, want %v", got.passes, want)
	}
	if got.passTimes[0] != 3*time.Second || got.passTimes[1] != 0 {
		t.Errorf("pass times %v, want 3s (the sandbox) then 0", got.passTimes)
	}
}

// TestPodStartDurations: a pod's start is recorded once, when all its
// containers run: from first sight, and for the SLI from its creation
// less its image pulls.
func TestPodStartDurations(t *testing.T) {
	tests := []struct {
		name      string
		present   bool          // the image is present
		createdAt time.Duration // creationTimestamp relative to t0 (0: none)
		done      bool          // the pod ran before the agent started
		wantTotal []time.Duration
		wantSLI   []time.Duration
	}{
		{name: "image present", present: true, wantTotal: []time.Duration{10 * time.Second}, wantSLI: []time.Duration{10 * time.Second}},
		{name: "image pulled for 5s", wantTotal: []time.Duration{10 * time.Second}, wantSLI: []time.Duration{5 * time.Second}},
		{name: "API pod created 10s before", present: true, createdAt: -10 * time.Second,
			wantTotal: []time.Duration{10 * time.Second}, wantSLI: []time.Duration{20 * time.Second}},
		{name: "ran before the agent", present: true, done: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := imagePod("app:1", v1.PullIfNotPresent)
			if tt.createdAt != 0 {
				pod.CreationTimestamp = metav1.NewTime(t0.Add(tt.createdAt))
			}
			pw, m := newMetricsWorker(t, pod)
			pw.w.start.done = tt.done
			if tt.present {
				pw.rt.AddImage("app:1")
			}
			pw.w.d.puller = &slowPuller{ImagePuller: pw.puller, clk: pw.clk, took: 5 * time.Second}
			pw.syncAt(time.Second)      // sandbox
			pw.syncAt(2 * time.Second)  // image, container started
			pw.syncAt(10 * time.Second) // observed running
			pw.syncAt(20 * time.Second)
			if cs, _ := pw.rt.ContainerByName("uid1", "app"); cs.State != runtime.ContainerRunning {
				t.Fatalf("app %v, want running", cs.State)
			}
			got := m.snapshot()
			if !slices.Equal(got.starts, tt.wantTotal) || !slices.Equal(got.slis, tt.wantSLI) {
				t.Errorf("start %v, SLI %v; want %v, %v", got.starts, got.slis, tt.wantTotal, tt.wantSLI)
			}
		})
	}
}

// TestStartsRecorded: each sandbox start and each container start
// attempt (each retry too, as the kubelet counts them) is recorded with
// its container type and, when it fails, the container's waiting reason.
func TestStartsRecorded(t *testing.T) {
	ephemeral := func(p *v1.Pod) {
		p.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug", Image: "img"}}}
	}
	tests := []struct {
		name           string
		pod            *v1.Pod
		edit           func(*v1.Pod)
		fail           string // the runtime operation failing once
		wantSandboxes  []bool
		wantContainers []string
	}{
		{name: "started", pod: testPod("Always", nil, "app"),
			wantSandboxes: []bool{false}, wantContainers: []string{"container "}},
		{name: "sandbox fails once", pod: testPod("Always", nil, "app"), fail: "RunSandbox",
			wantSandboxes: []bool{true, false}, wantContainers: []string{"container "}},
		{name: "container fails once", pod: testPod("Always", nil, "app"), fail: "StartContainer",
			wantSandboxes: []bool{false}, wantContainers: []string{"container RunContainerError", "container "}},
		{name: "init container", pod: testPod("Always", []string{"init"}, "app"),
			wantSandboxes: []bool{false}, wantContainers: []string{"init_container "}},
		{name: "image never pulled", pod: imagePod("absent:1", v1.PullNever),
			wantSandboxes: []bool{false}, wantContainers: []string{"container ErrImageNeverPull", "container ErrImageNeverPull"}},
		{name: "ephemeral container", pod: testPod("Always", nil, "app"), edit: ephemeral,
			wantSandboxes: []bool{false}, wantContainers: []string{"ephemeral_container ", "container "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.edit != nil {
				tt.edit(tt.pod)
			}
			pw, m := newMetricsWorker(t, tt.pod)
			pw.rt.AddImage("img")
			if tt.fail != "" {
				pw.rt.FailNext(tt.fail, errors.New("boom"))
			}
			for i := range 3 {
				pw.syncAt(time.Duration(i*10) * time.Second)
			}
			got := m.snapshot()
			if !slices.Equal(got.sandboxes, tt.wantSandboxes) || !slices.Equal(got.containers, tt.wantContainers) {
				t.Errorf("sandboxes %v, containers %q; want %v, %q", got.sandboxes, got.containers, tt.wantSandboxes, tt.wantContainers)
			}
		})
	}
}

// TestEvictionRecordedOnce: an eviction is recorded with its signal when
// the worker takes it, once.
func TestEvictionRecordedOnce(t *testing.T) {
	pw, m := newMetricsWorker(t, testPod("Always", nil, "app"))
	pw.w.evict(EvictionSignalEmptyDirFsLimit, "emptyDir too big")
	pw.w.evict(EvictionSignalEmptyDirFsLimit, "again")
	pw.syncAt(time.Second)
	pw.syncAt(2 * time.Second)
	if got := m.snapshot().evictions; !slices.Equal(got, []string{"emptydirfs.limit"}) {
		t.Errorf("evictions %v, want one emptydirfs.limit", got)
	}
}

// TestRelistCountsAndDuration: the agent's RuntimeCounts follow the
// relist (ready sandboxes, containers by state) and every relist is
// timed.
func TestRelistCountsAndDuration(t *testing.T) {
	rt := newFakeRuntime()
	m := &recordingMetrics{}
	cfg := testConfig(t, rt)
	cfg.Metrics = m
	h := runTestAgent(t, cfg)
	h.src.ch <- []*v1.Pod{testPod("Never", nil, "a", "b")}
	h.eventually("two running containers counted", func() bool {
		return h.agent.RuntimeCounts() == RuntimeCounts{RunningPods: 1, Running: 2}
	})
	a, _ := rt.ContainerByName("uid1", "a")
	rt.Exit(a.ID, 0)
	h.eventually("one exited container counted", func() bool {
		return h.agent.RuntimeCounts() == RuntimeCounts{RunningPods: 1, Running: 1, Exited: 1}
	})
	h.src.ch <- nil
	h.eventually("nothing counted", func() bool { return h.agent.RuntimeCounts() == RuntimeCounts{} })
	if got := m.snapshot(); got.relists == 0 || len(got.restarts) != 0 {
		t.Errorf("%d relists timed, restarts %v; want some, none (the pod is gone, not back)", got.relists, got.restarts)
	}
}

// gatedStops holds every StopContainer until open is closed, and tells
// entered when one waits.
type gatedStops struct {
	runtime.Runtime
	entered chan struct{}
	open    chan struct{}
}

func (r *gatedStops) StopContainer(ctx context.Context, id string, timeout time.Duration) error {
	select {
	case r.entered <- struct{}{}:
	default:
	}
	select {
	case <-r.open:
	case <-ctx.Done():
		return ctx.Err()
	}
	return r.Runtime.StopContainer(ctx, id, timeout)
}

// TestPodRestartRecorded: a pod whose source takes it back under the same
// UID while it terminates runs again, recorded as a restart, static or
// not by its config source.
func TestPodRestartRecorded(t *testing.T) {
	tests := []struct {
		source string
		want   []bool
	}{{"file", []bool{true}}, {"api", []bool{false}}}
	for _, tt := range tests {
		t.Run(tt.source, func(t *testing.T) {
			rt := newFakeRuntime()
			gated := &gatedStops{Runtime: rt, entered: make(chan struct{}, 1), open: make(chan struct{})}
			m := &recordingMetrics{}
			cfg := testConfig(t, gated)
			cfg.Metrics = m
			h := runTestAgent(t, cfg)
			h.rt = rt
			pod := testPod("Always", nil, "app")
			pod.Annotations = map[string]string{configSourceAnnotation: tt.source}
			h.src.ch <- []*v1.Pod{pod}
			h.eventually("pod Running", func() bool { return h.phase("uid1") == v1.PodRunning })
			first, _ := rt.ContainerByName("uid1", "app")
			h.src.ch <- nil
			<-gated.entered // the worker terminates, its stop held
			// Three times: once the third is taken, the source has
			// handed the first to the agent.
			for range 3 {
				h.src.ch <- []*v1.Pod{pod}
			}
			close(gated.open)
			h.eventually("pod running again", func() bool {
				c, ok := rt.ContainerByName("uid1", "app")
				return ok && c.ID != first.ID && c.State == runtime.ContainerRunning
			})
			if got := m.snapshot().restarts; !slices.Equal(got, tt.want) {
				t.Errorf("restarts %v, want %v", got, tt.want)
			}
		})
	}
}

// TestSandboxFailureEventAndRetry: a sandbox that cannot be created is a
// FailedCreatePodSandBox event with the runtime's error, as the kubelet's,
// and the next try comes after the kubelet's 10 s worker back-off.
func TestSandboxFailureEventAndRetry(t *testing.T) {
	pw, _ := newMetricsWorker(t, testPod("Always", nil, "app"))
	pw.rt.AddImage("img")
	pw.rt.FailNext("RunSandbox", errors.New("plugin type=\"bridge\" failed (add): boom"))
	if next := pw.syncAt(0); next != sandboxRetryDelay {
		t.Errorf("next sync in %s after the failure, want %s", next, sandboxRetryDelay)
	}
	want := `pod Warning FailedCreatePodSandBox: Failed to create pod sandbox: run sandbox: plugin type="bridge" failed (add): boom`
	if evs := pw.events(); !slices.Contains(evs, want) {
		t.Errorf("events %q, want %q", evs, want)
	}
	for range 3 { // the sandbox, the image, the container
		pw.syncAt(sandboxRetryDelay)
	}
	if !pw.started() {
		t.Error("not started at the retry")
	}
}
