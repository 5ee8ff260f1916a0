package agent

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffnode/skiff/runtime"
	"github.com/skiffnode/skiff/runtime/fake"
)

// listedRuntime is a runtime whose listings are what the test sets, so a
// test or benchmark controls (and pays nothing for) the runtime's side.
type listedRuntime struct {
	*fake.Runtime
	mu         sync.Mutex
	sandboxes  []*runtime.Sandbox
	containers []*runtime.Container
	// statusGate, when set, holds ContainerStatus (which only pod workers
	// call, never the relist) until the call's context ends: it keeps an
	// orphan's worker alive for the test.
	statusGate chan struct{}
}

func (r *listedRuntime) ContainerStatus(ctx context.Context, id string) (*runtime.ContainerStatus, error) {
	if r.statusGate != nil {
		select {
		case <-r.statusGate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return r.Runtime.ContainerStatus(ctx, id)
}

func (r *listedRuntime) set(sbs []*runtime.Sandbox, cs []*runtime.Container) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sandboxes, r.containers = sbs, cs
}

func (r *listedRuntime) ListSandboxes(context.Context, map[string]string) ([]*runtime.Sandbox, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sandboxes, nil
}

func (r *listedRuntime) ListContainers(context.Context, runtime.ContainerFilter) ([]*runtime.Container, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.containers, nil
}

// listedSandbox and listedContainer are runtime objects of pod uid.
func listedSandbox(uid, id string, st runtime.SandboxState) *runtime.Sandbox {
	return &runtime.Sandbox{ID: id, Name: "p-" + uid, Namespace: "default", UID: uid, State: st,
		Labels: map[string]string{labelManaged: "true", labelPodUID: uid}}
}

func listedContainer(uid, id string, st runtime.ContainerState) *runtime.Container {
	return &runtime.Container{ID: id, SandboxID: "sb-" + uid, Name: "app", State: st,
		Labels: map[string]string{labelManaged: "true", labelPodUID: uid, labelContainerName: "app"}}
}

// relistAgent is an agent on a listedRuntime with an idle worker for each
// of uids (so wakes can be observed, and no pod is an orphan).
func relistAgent(t testing.TB, uids ...string) (*Agent, *listedRuntime) {
	rt := &listedRuntime{Runtime: fake.New(nil)}
	cfg := Config{NodeName: "node", Runtime: rt, PodLogsDir: t.TempDir()}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a.sourcesReady = true
	for _, uid := range uids {
		a.workers[types.UID(uid)] = &podWorker{uid: types.UID(uid), wakeCh: make(chan struct{}, 1)}
	}
	return a, rt
}

// woken drains the wake channels and returns the UIDs that were woken.
func woken(a *Agent) []string {
	var out []string
	for uid, w := range a.workers {
		select {
		case <-w.wakeCh:
			out = append(out, string(uid))
		default:
		}
	}
	slices.Sort(out)
	return out
}

// TestRelistWakesChangedPods: a relist wakes exactly the workers of the
// pods whose sandboxes or containers (IDs or states) changed since the
// previous listing, whatever the order of the runtime's lists.
func TestRelistWakesChangedPods(t *testing.T) {
	const (
		ready    = runtime.SandboxReady
		notReady = runtime.SandboxNotReady
		running  = runtime.ContainerRunning
		exited   = runtime.ContainerExited
	)
	base := func() ([]*runtime.Sandbox, []*runtime.Container) {
		return []*runtime.Sandbox{listedSandbox("a", "sa", ready), listedSandbox("b", "sb", ready), listedSandbox("c", "sc", ready)},
			[]*runtime.Container{listedContainer("a", "ca", running), listedContainer("a", "ca2", exited), listedContainer("b", "cb", running), listedContainer("c", "cc", running)}
	}
	cases := []struct {
		name   string
		change func(sbs []*runtime.Sandbox, cs []*runtime.Container) ([]*runtime.Sandbox, []*runtime.Container)
		want   []string
	}{
		{"unchanged", func(s []*runtime.Sandbox, c []*runtime.Container) ([]*runtime.Sandbox, []*runtime.Container) {
			return s, c
		}, nil},
		{"reordered", func(s []*runtime.Sandbox, c []*runtime.Container) ([]*runtime.Sandbox, []*runtime.Container) {
			slices.Reverse(s)
			slices.Reverse(c)
			return s, c
		}, nil},
		{"container exited", func(s []*runtime.Sandbox, c []*runtime.Container) ([]*runtime.Sandbox, []*runtime.Container) {
			c[2].State = exited
			return s, c
		}, []string{"b"}},
		{"sandbox not ready", func(s []*runtime.Sandbox, c []*runtime.Container) ([]*runtime.Sandbox, []*runtime.Container) {
			s[2].State = notReady
			return s, c
		}, []string{"c"}},
		{"container added", func(s []*runtime.Sandbox, c []*runtime.Container) ([]*runtime.Sandbox, []*runtime.Container) {
			return s, append(c, listedContainer("a", "ca3", running))
		}, []string{"a"}},
		{"container removed", func(s []*runtime.Sandbox, c []*runtime.Container) ([]*runtime.Sandbox, []*runtime.Container) {
			return s, c[1:]
		}, []string{"a"}},
		{"container replaced (new ID, same state)", func(s []*runtime.Sandbox, c []*runtime.Container) ([]*runtime.Sandbox, []*runtime.Container) {
			c[0].ID = "ca-new"
			return s, c
		}, []string{"a"}},
		{"container moved to another pod", func(s []*runtime.Sandbox, c []*runtime.Container) ([]*runtime.Sandbox, []*runtime.Container) {
			c[0].Labels = map[string]string{labelManaged: "true", labelPodUID: "b"}
			return s, c
		}, []string{"a", "b"}},
		{"two states swapped within a pod", func(s []*runtime.Sandbox, c []*runtime.Container) ([]*runtime.Sandbox, []*runtime.Container) {
			c[0].State, c[1].State = exited, running
			return s, c
		}, []string{"a"}},
		// A pod whose objects are all gone wakes nobody: its worker
		// learns of it from its own calls (as before).
		{"pod gone", func(s []*runtime.Sandbox, c []*runtime.Container) ([]*runtime.Sandbox, []*runtime.Container) {
			return s[:2], c[:3]
		}, nil},
		{"new pod", func(s []*runtime.Sandbox, c []*runtime.Container) ([]*runtime.Sandbox, []*runtime.Container) {
			return append(s, listedSandbox("d", "sd", ready)), c
		}, []string{"d"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, rt := relistAgent(t, "a", "b", "c", "d")
			r := newRelister()
			exits := newExitQueue()
			rt.set(base())
			if _, err := a.relist.once(context.Background(), r, exits); err != nil {
				t.Fatal(err)
			}
			if got := woken(a); !slices.Equal(got, []string{"a", "b", "c"}) {
				t.Fatalf("first listing woke %v, want every listed pod", got)
			}
			rt.set(tc.change(base()))
			if _, err := a.relist.once(context.Background(), r, exits); err != nil {
				t.Fatal(err)
			}
			if got := woken(a); !slices.Equal(got, tc.want) {
				t.Errorf("woke %v, want %v", got, tc.want)
			}
			// The listing after that, unchanged, wakes nobody.
			if _, err := a.relist.once(context.Background(), r, exits); err != nil {
				t.Fatal(err)
			}
			if got := woken(a); got != nil {
				t.Errorf("unchanged relist woke %v", got)
			}
		})
	}
}

// BenchmarkRelist110 is one relist at steady state with 110 pods of two
// containers each (nothing changes, so nobody is woken): the agent's side
// only, the runtime's lists are prebuilt.
func BenchmarkRelist110(b *testing.B) {
	var uids []string
	var sbs []*runtime.Sandbox
	var cs []*runtime.Container
	for i := range 110 {
		uid := fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i)
		uids = append(uids, uid)
		sbs = append(sbs, listedSandbox(uid, fmt.Sprintf("%064x", 2*i), runtime.SandboxReady))
		for j := range 2 {
			cs = append(cs, listedContainer(uid, fmt.Sprintf("%063x%d", 2*i+1, j), runtime.ContainerRunning))
		}
	}
	a, rt := relistAgent(b, uids...)
	rt.set(sbs, cs)
	r, exits := newRelister(), newExitQueue()
	ctx := context.Background()
	if _, err := a.relist.once(ctx, r, exits); err != nil {
		b.Fatal(err)
	}
	woken(a)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.relist.once(ctx, r, exits); err != nil {
			b.Fatal(err)
		}
	}
	if w := woken(a); w != nil {
		b.Fatalf("steady relist woke %v", w)
	}
}

// TestRelistForgetsObjectsGoneFromTheListing: the maps a relist reuses hold
// only the latest listing: a sandbox gone from it is no orphan candidate,
// and a reported exit of a container gone from it needs no recheck.
func TestRelistForgetsObjectsGoneFromTheListing(t *testing.T) {
	a, rt := relistAgent(t, "a")
	a.sourcesReady = false // x is not killed as an orphan
	r, exits := newRelister(), newExitQueue()
	ctx := context.Background()
	rt.set([]*runtime.Sandbox{listedSandbox("a", "sa", runtime.SandboxReady), listedSandbox("x", "sx", runtime.SandboxReady)},
		[]*runtime.Container{listedContainer("a", "ca", runtime.ContainerRunning), listedContainer("x", "cx", runtime.ContainerRunning)})
	if _, err := a.relist.once(ctx, r, exits); err != nil {
		t.Fatal(err)
	}
	if !r.pods["x"] || !r.live["cx"] {
		t.Fatalf("first listing: pods %v live %v", r.pods, r.live)
	}
	rt.set([]*runtime.Sandbox{listedSandbox("a", "sa", runtime.SandboxReady)},
		[]*runtime.Container{listedContainer("a", "ca", runtime.ContainerRunning)})
	exits.add("cx", a.clock.Now())
	d, err := a.relist.once(ctx, r, exits)
	if err != nil {
		t.Fatal(err)
	}
	if d != 0 {
		t.Errorf("exit of a container gone from the listing: recheck in %v, want none", d)
	}
	if _, ok := r.pods["x"]; ok || len(r.pods) != 1 {
		t.Errorf("pods after x is gone: %v", r.pods)
	}
	if _, ok := r.live["cx"]; ok || !r.live["ca"] || !r.live["sa"] {
		t.Errorf("live after x is gone: %v", r.live)
	}
}

// The relist lists refs only; an orphan (a listed pod no source wants) is
// rebuilt from its own sandbox, listed in full, and terminated.
func TestRelistRebuildsOrphanFromItsSandbox(t *testing.T) {
	a, rt := relistAgent(t, "a")
	rt.set([]*runtime.Sandbox{listedSandbox("a", "sa", runtime.SandboxReady), listedSandbox("x", "sx", runtime.SandboxReady), listedSandbox("b", "sb", runtime.SandboxReady)},
		[]*runtime.Container{listedContainer("a", "ca", runtime.ContainerRunning)})
	a.workers["b"] = &podWorker{uid: "b", wakeCh: make(chan struct{}, 1)}
	// The orphan's worker would otherwise terminate it and leave the
	// workers map before the test looks (a flake under -race).
	rt.statusGate = make(chan struct{})
	for uid, w := range a.workers {
		w.pod = &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-" + string(uid), Namespace: "default", UID: uid}}
		w.initial = w.pod
	}
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := a.relist.once(ctx, newRelister(), newExitQueue()); err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	w := a.workers["x"]
	a.mu.Unlock()
	cancel()
	a.wg.Wait()
	if w == nil || !w.orphan || w.pod.Name != "p-x" || w.pod.UID != "x" {
		t.Fatalf("orphan worker = %+v", w)
	}
}
