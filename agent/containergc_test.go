package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/skiffnode/skiff/internal/clocktest"
	"github.com/skiffnode/skiff/internal/podlogs"
	"github.com/skiffnode/skiff/runtime"
	"github.com/skiffnode/skiff/runtime/fake"
)

// gcPod creates pod uid in rt as its worker would: a sandbox, and one
// container per state (attempts 0, 1, ...), each with a log file (and a
// rotated one) under logs. It returns the container IDs.
func gcPod(t *testing.T, rt *fake.Runtime, logs string, uid string, labels map[string]string, states ...runtime.ContainerState) []string {
	t.Helper()
	ctx := context.Background()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-" + uid, Namespace: "ns", UID: types.UID(uid)}}
	if labels == nil {
		labels = sandboxLabels(pod)
	}
	dir := podlogs.PodDir(logs, "ns", pod.Name, uid)
	sb, err := rt.RunSandbox(ctx, &runtime.SandboxSpec{Name: pod.Name, Namespace: "ns", UID: uid, Labels: labels, LogDirectory: dir})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i, st := range states {
		cl := containerLabels(pod, "app")
		if labels[labelManaged] == "" {
			cl = map[string]string{"owner": "someone-else"}
		}
		id, err := rt.CreateContainer(ctx, sb, &runtime.ContainerSpec{
			Name: "app", Attempt: uint32(i), Image: "img", Labels: cl, LogPath: podlogs.ContainerLogRel("app", i),
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if st != runtime.ContainerCreated {
			if err := rt.StartContainer(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		if st == runtime.ContainerExited {
			rt.Exit(id, 0)
		}
		path := podlogs.ContainerLogPath(dir, "app", i)
		for _, f := range []string{path, path + ".20261124-100000.gz"} {
			if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f, []byte("log\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		ids = append(ids, id)
	}
	return ids
}

func gcAgent(t *testing.T, rt runtime.Runtime, clk clock.WithTicker, live ...types.UID) *Agent {
	t.Helper()
	cfg := testConfig(t, rt)
	policy := DefaultContainerGCPolicy()
	cfg.ContainerGC = &policy
	if clk != nil {
		cfg.Clock = clk
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a.sourcesReady = true
	for _, uid := range live {
		a.workers[uid] = &podWorker{uid: uid}
	}
	return a
}

func removedContainers(rt *fake.Runtime) []string {
	var out []string
	for _, c := range rt.Calls() {
		if name, ok := strings.CutPrefix(c, "RemoveContainer "); ok {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// TestContainerGCRemovesLeftovers_F8_F10_A4: a pass removes a deleted
// pod's dead containers, its sandbox, their logs and its log directory,
// the old instances of a live pod but its newest dead one, and nothing of
// what skiff did not create.
func TestContainerGCRemovesLeftovers_F8_F10_A4(t *testing.T) {
	rt := fake.New(time.Now)
	a := gcAgent(t, rt, nil, "live")
	logs := a.cfg.PodLogsDir
	gone := gcPod(t, rt, logs, "gone", nil, runtime.ContainerExited, runtime.ContainerCreated)
	for _, sb := range mustSandboxes(t, rt, "gone") {
		_ = rt.StopSandbox(context.Background(), sb)
	}
	live := gcPod(t, rt, logs, "live", nil, runtime.ContainerExited, runtime.ContainerExited, runtime.ContainerRunning)
	foreign := gcPod(t, rt, logs, "foreign", map[string]string{"owner": "someone-else"}, runtime.ContainerExited)
	foreignSb := mustSandboxes(t, rt, "foreign")
	_ = rt.StopSandbox(context.Background(), foreignSb[0])

	known, err := a.gc.collect(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// The fake names containers by their name in Calls: all are "app".
	if got := removedContainers(rt); len(got) != 3 {
		t.Errorf("removed %d containers (%v), want the deleted pod's 2 and the live pod's oldest", len(got), got)
	}
	for _, id := range append(append([]string{}, gone...), live[0]) {
		if _, err := rt.ContainerStatus(context.Background(), id); !errors.Is(err, runtime.ErrNotFound) {
			t.Errorf("container %s still exists", id)
		}
	}
	for _, id := range append(live[1:], foreign...) {
		if _, err := rt.ContainerStatus(context.Background(), id); err != nil {
			t.Errorf("container %s was removed: %v", id, err)
		}
	}
	if sbs := mustSandboxes(t, rt, "gone"); len(sbs) != 0 {
		t.Errorf("the deleted pod's sandboxes %v remain", sbs)
	}
	if sbs := mustSandboxes(t, rt, "foreign"); len(sbs) != 1 {
		t.Errorf("the foreign sandbox was removed")
	}
	if _, err := os.Stat(podlogs.PodDir(logs, "ns", "p-gone", "gone")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the deleted pod's log directory remains: %v", err)
	}
	liveDir := podlogs.PodDir(logs, "ns", "p-live", "live")
	for i, want := range []bool{false, true, true} {
		for _, f := range []string{podlogs.ContainerLogPath(liveDir, "app", i), podlogs.ContainerLogPath(liveDir, "app", i) + ".20261124-100000.gz"} {
			if _, err := os.Stat(f); (err == nil) != want {
				t.Errorf("log %s: exists %v, want %v", f, err == nil, want)
			}
		}
	}
	if _, err := os.Stat(podlogs.PodDir(logs, "ns", "p-foreign", "foreign")); err != nil {
		t.Errorf("the foreign pod's log directory was removed: %v", err)
	}
	if _, ok := known["live"]; !ok || len(known) != 1 {
		t.Errorf("remembered %v, want the live pod only", known)
	}
}

// TestContainerGCSparesPodBroughtBack: a pod the plan took for deleted
// that has a worker again when the removal comes is left alone.
func TestContainerGCSparesPodBroughtBack(t *testing.T) {
	rt := fake.New(time.Now)
	a := gcAgent(t, rt, nil)
	ids := gcPod(t, rt, a.cfg.PodLogsDir, "back", nil, runtime.ContainerExited)
	dir := podlogs.PodDir(a.cfg.PodLogsDir, "ns", "p-back", "back")
	plan := gcPlan{
		Containers: []gcContainer{{ID: ids[0], UID: "back"}},
		LogDirs:    []gcLogDir{{Dir: dir, UID: "back"}},
	}
	a.workers["back"] = &podWorker{uid: "back"}
	a.gc.apply(context.Background(), plan, map[types.UID]bool{})
	if got := removedContainers(rt); len(got) != 0 {
		t.Errorf("removed %v of a pod that has a worker again", got)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("log directory of a pod that has a worker again: %v", err)
	}
}

// failingLists fails every listing of sandboxes.
type failingLists struct{ *fake.Runtime }

func (failingLists) ListSandboxes(context.Context, map[string]string) ([]*runtime.Sandbox, error) {
	return nil, errors.New("runtime down")
}

// TestContainerGCLoopEvent_F1: a pass runs every period and a failed one
// records a ContainerGCFailed event on the node.
func TestContainerGCLoopEvent_F1(t *testing.T) {
	clk := clocktest.New(time.Now())
	a := gcAgent(t, failingLists{fake.New(clk.Now)}, clk)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.gc.run(ctx)
	}()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(5 * time.Second)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("the loop never waited")
		}
		time.Sleep(time.Millisecond)
	}
	// Nothing the loop waits for is due before the period: stepping short
	// of it can wake nothing (and nothing ran at the step).
	if next, ok := clk.NextIn(); !ok || next != DefaultContainerGCPeriod {
		t.Fatalf("the loop's next wake-up in %v (any: %t), want the period %v", next, ok, DefaultContainerGCPeriod)
	}
	clk.Step(DefaultContainerGCPeriod - time.Second)
	if evs := a.events.List(); len(evs) != 0 {
		t.Fatalf("a pass before the period: %v", evs)
	}
	clk.Step(time.Second)
	var evs []v1.Event
	for len(evs) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no event after a failed pass")
		}
		time.Sleep(time.Millisecond)
		evs = a.events.List()
	}
	ev := evs[0]
	if ev.Reason != EventContainerGCFailed || ev.Type != v1.EventTypeWarning || ev.InvolvedObject.Kind != "Node" ||
		ev.InvolvedObject.Name != "node" || !strings.Contains(ev.Message, "runtime down") || ev.Namespace != "default" {
		t.Errorf("event %+v, want a Warning ContainerGCFailed about Node node", ev)
	}
}

func mustSandboxes(t *testing.T, rt *fake.Runtime, uid string) []string {
	t.Helper()
	sbs, err := rt.ListSandboxes(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, sb := range sbs {
		if sb.UID == uid {
			out = append(out, sb.ID)
		}
	}
	return slices.Clip(out)
}

// TestAgentRunsContainerGC_F1: an agent with a container GC policy runs
// it every ContainerGCPeriod once its sources delivered: a stray dead
// container of skiff's whose pod no source wants and that has no sandbox
// of skiff's (what the relister's orphan handling cannot see) is removed.
func TestAgentRunsContainerGC_F1(t *testing.T) {
	rt := fake.New(time.Now)
	cfg := testConfig(t, rt)
	policy := DefaultContainerGCPolicy()
	cfg.ContainerGC, cfg.ContainerGCPeriod = &policy, 20*time.Millisecond
	ctx := context.Background()
	sb, err := rt.RunSandbox(ctx, &runtime.SandboxSpec{Name: "other", UID: "other", Labels: map[string]string{"owner": "someone-else"}})
	if err != nil {
		t.Fatal(err)
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "stray", Namespace: "ns", UID: "stray"}}
	id, err := rt.CreateContainer(ctx, sb, &runtime.ContainerSpec{Name: "app", Image: "img", Labels: containerLabels(pod, "app")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := runTestAgent(t, cfg)
	h.src.ch <- nil
	h.eventually("the stray container removed", func() bool {
		_, err := rt.ContainerStatus(ctx, id)
		return errors.Is(err, runtime.ErrNotFound)
	})
	if sbs := mustSandboxes(t, rt, "other"); len(sbs) != 1 {
		t.Error("the foreign sandbox was removed")
	}
}
