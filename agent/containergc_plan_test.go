package agent

import (
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffnode/skiff/runtime"
)

var gcNow = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)

// gcCtr is a listed container of pod uid (named "p-<uid>" in namespace
// "ns"), created age before gcNow, in sandbox "sb-<uid>-0" unless sb says
// otherwise.
func gcCtr(id, uid, name string, attempt uint32, state runtime.ContainerState, age time.Duration, sb ...string) *runtime.Container {
	sandbox := "sb-" + uid + "-0"
	if len(sb) > 0 {
		sandbox = sb[0]
	}
	return &runtime.Container{
		ID: id, SandboxID: sandbox, Name: name, Attempt: attempt, State: state,
		CreatedAt: gcNow.Add(-age),
		Labels: map[string]string{
			labelManaged: "true", labelPodUID: uid, labelPodName: "p-" + uid,
			labelPodNamespace: "ns", labelContainerName: name,
		},
	}
}

func gcSb(uid string, attempt uint32, state runtime.SandboxState) *runtime.Sandbox {
	return &runtime.Sandbox{
		ID: fmt.Sprintf("sb-%s-%d", uid, attempt), UID: uid, Attempt: attempt, State: state,
		CreatedAt: gcNow.Add(-time.Hour + time.Duration(attempt)*time.Minute),
		Labels: map[string]string{
			labelManaged: "true", labelPodUID: uid, labelPodName: "p-" + uid, labelPodNamespace: "ns",
		},
	}
}

const (
	gcExited  = runtime.ContainerExited
	gcRunning = runtime.ContainerRunning
	gcCreated = runtime.ContainerCreated
	gcUnknown = runtime.ContainerUnknown
	gcReady   = runtime.SandboxReady
	gcDown    = runtime.SandboxNotReady
)

func TestPlanContainerGC_F5_F10(t *testing.T) {
	def := DefaultContainerGCPolicy()
	tests := []struct {
		name         string
		policy       ContainerGCPolicy
		sbs          []*runtime.Sandbox
		cs           []*runtime.Container
		live         []types.UID
		notReady     bool
		known        map[types.UID]string
		wantC, wantS []string
		wantDirs     []string
		wantRemember []types.UID
	}{
		{
			name: "live pod: old exited instances go oldest first, the newest dead one and running ones stay (F.10)", policy: def,
			sbs: []*runtime.Sandbox{gcSb("a", 0, gcReady)},
			cs: []*runtime.Container{
				gcCtr("init0", "a", "init", 0, gcExited, 10*time.Minute),
				gcCtr("app0", "a", "app", 0, gcExited, 9*time.Minute),
				gcCtr("app1", "a", "app", 1, gcExited, 8*time.Minute),
				gcCtr("app2", "a", "app", 2, gcExited, 7*time.Minute),
				gcCtr("app3", "a", "app", 3, gcRunning, 6*time.Minute),
			},
			live: []types.UID{"a"}, wantC: []string{"app0", "app1"}, wantRemember: []types.UID{"a"},
		},
		{
			name: "live pod: MaxPerPodContainer 0 still keeps the newest dead instance (F.10)", policy: ContainerGCPolicy{MaxPerPodContainer: 0, MaxContainers: -1},
			sbs: []*runtime.Sandbox{gcSb("a", 0, gcReady)},
			cs: []*runtime.Container{
				gcCtr("init0", "a", "init", 0, gcExited, 10*time.Minute),
				gcCtr("app0", "a", "app", 0, gcExited, 9*time.Minute),
				gcCtr("app1", "a", "app", 1, gcExited, 8*time.Minute),
			},
			live: []types.UID{"a"}, wantC: []string{"app0"}, wantRemember: []types.UID{"a"},
		},
		{
			name: "live pod: MaxPerPodContainer 2 keeps two, < 0 keeps all", policy: ContainerGCPolicy{MaxPerPodContainer: 2, MaxContainers: -1},
			sbs: []*runtime.Sandbox{gcSb("a", 0, gcReady), gcSb("b", 0, gcReady)},
			cs: []*runtime.Container{
				gcCtr("a0", "a", "app", 0, gcExited, 9*time.Minute),
				gcCtr("a1", "a", "app", 1, gcExited, 8*time.Minute),
				gcCtr("a2", "a", "app", 2, gcExited, 7*time.Minute),
			},
			live: []types.UID{"a", "b"}, wantC: []string{"a0"}, wantRemember: []types.UID{"a", "b"},
		},
		{
			name: "live pod: a created or unknown instance may be the worker's, never the GC's", policy: def,
			sbs: []*runtime.Sandbox{gcSb("a", 0, gcReady)},
			cs: []*runtime.Container{
				gcCtr("app0", "a", "app", 0, gcUnknown, 9*time.Minute),
				gcCtr("app1", "a", "app", 1, gcExited, 8*time.Minute),
				gcCtr("app2", "a", "app", 2, gcExited, 7*time.Minute),
				gcCtr("app3", "a", "app", 3, gcCreated, time.Second),
			},
			live: []types.UID{"a"}, wantC: []string{"app1"}, wantRemember: []types.UID{"a"},
		},
		{
			name: "deleted pod: every dead container, its dead sandboxes, then its log directory (F.8)", policy: def,
			sbs: []*runtime.Sandbox{gcSb("gone", 0, gcDown), gcSb("gone", 1, gcDown)},
			cs: []*runtime.Container{
				gcCtr("g-init", "gone", "init", 0, gcExited, 10*time.Minute, "sb-gone-0"),
				gcCtr("g-app", "gone", "app", 0, gcCreated, 9*time.Minute, "sb-gone-1"),
				gcCtr("g-side", "gone", "side", 0, gcUnknown, 8*time.Minute, "sb-gone-1"),
			},
			wantC: []string{"g-init", "g-app", "g-side"}, wantS: []string{"sb-gone-0", "sb-gone-1"},
			wantDirs: []string{"/logs/ns_p-gone_gone"},
		},
		{
			name: "deleted pod: a running container and a ready sandbox stay, and so does the log directory", policy: def,
			sbs: []*runtime.Sandbox{gcSb("gone", 0, gcDown), gcSb("gone", 1, gcReady)},
			cs: []*runtime.Container{
				gcCtr("g-run", "gone", "app", 1, gcRunning, 9*time.Minute, "sb-gone-0"),
				gcCtr("g-dead", "gone", "app", 0, gcExited, 10*time.Minute, "sb-gone-0"),
			},
			wantC: []string{"g-dead"}, wantRemember: []types.UID{"gone"},
		},
		{
			name: "containers without a sandbox of a deleted pod go too (F.6)", policy: def,
			cs:    []*runtime.Container{gcCtr("stray", "gone", "app", 0, gcExited, time.Minute, "sb-missing")},
			wantC: []string{"stray"}, wantDirs: []string{"/logs/ns_p-gone_gone"},
		},
		{
			name: "until every source is ready no pod counts as deleted", policy: def, notReady: true,
			sbs: []*runtime.Sandbox{gcSb("x", 0, gcDown)},
			cs: []*runtime.Container{
				gcCtr("x0", "x", "app", 0, gcExited, 10*time.Minute),
				gcCtr("x1", "x", "app", 1, gcExited, 9*time.Minute),
			},
			wantC: []string{"x0"}, wantRemember: []types.UID{"x"},
		},
		{
			name: "MinAge keeps young dead containers, and so the sandbox and logs (F.5)", policy: ContainerGCPolicy{MinAge: 5 * time.Minute, MaxPerPodContainer: 1, MaxContainers: -1},
			sbs: []*runtime.Sandbox{gcSb("gone", 0, gcDown)},
			cs: []*runtime.Container{
				gcCtr("old", "gone", "app", 0, gcExited, 6*time.Minute),
				gcCtr("young", "gone", "app", 1, gcExited, 4*time.Minute),
			},
			wantC: []string{"old"}, wantRemember: []types.UID{"gone"},
		},
		{
			name: "MaxContainers lowers the per-container limit, never below one (F.7)", policy: ContainerGCPolicy{MaxPerPodContainer: -1, MaxContainers: 4},
			sbs: []*runtime.Sandbox{gcSb("a", 0, gcReady)},
			cs: []*runtime.Container{
				gcCtr("a0", "a", "app", 0, gcExited, 9*time.Minute),
				gcCtr("a1", "a", "app", 1, gcExited, 8*time.Minute),
				gcCtr("a2", "a", "app", 2, gcExited, 7*time.Minute),
				gcCtr("b0", "a", "side", 0, gcExited, 6*time.Minute),
				gcCtr("b1", "a", "side", 1, gcExited, 5*time.Minute),
				gcCtr("c0", "a", "init", 0, gcExited, 10*time.Minute),
			},
			live: []types.UID{"a"}, wantC: []string{"a0", "a1", "b0"}, wantRemember: []types.UID{"a"},
		},
		{
			name: "live pod: old dead sandboxes without containers go, the newest stays even when not ready", policy: def,
			sbs: []*runtime.Sandbox{gcSb("a", 0, gcDown), gcSb("a", 1, gcDown), gcSb("a", 2, gcDown), gcSb("a", 3, gcDown)},
			cs: []*runtime.Container{
				gcCtr("app0", "a", "app", 0, gcExited, 9*time.Minute, "sb-a-0"),
				gcCtr("app1", "a", "app", 1, gcExited, 8*time.Minute, "sb-a-1"),
			},
			live: []types.UID{"a"}, wantC: []string{"app0"}, wantS: []string{"sb-a-0", "sb-a-2"}, wantRemember: []types.UID{"a"},
		},
		{
			name: "a pod seen earlier and gone from the runtime loses its log directory; a live one is remembered", policy: def,
			known: map[types.UID]string{"old": "/logs/ns_p-old_old", "a": "/logs/ns_p-a_a"},
			live:  []types.UID{"a"}, wantDirs: []string{"/logs/ns_p-old_old"}, wantRemember: []types.UID{"a"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			live := map[types.UID]bool{}
			for _, uid := range tc.live {
				live[uid] = true
			}
			plan := planContainerGC(gcInput{
				Sandboxes: tc.sbs, Containers: tc.cs, Live: live, SourcesReady: !tc.notReady,
				Known: tc.known, PodLogsDir: "/logs",
			}, tc.policy, gcNow)
			var gotC, gotS, gotD []string
			for _, c := range plan.Containers {
				gotC = append(gotC, c.ID)
			}
			for _, sb := range plan.Sandboxes {
				gotS = append(gotS, sb.ID)
			}
			for _, d := range plan.LogDirs {
				gotD = append(gotD, d.Dir)
			}
			var gotR []types.UID
			for uid := range plan.Remember {
				gotR = append(gotR, uid)
			}
			sort.Slice(gotR, func(i, j int) bool { return gotR[i] < gotR[j] })
			if !slices.Equal(gotC, tc.wantC) {
				t.Errorf("containers %v, want %v", gotC, tc.wantC)
			}
			if !slices.Equal(gotS, tc.wantS) {
				t.Errorf("sandboxes %v, want %v", gotS, tc.wantS)
			}
			if !slices.Equal(gotD, tc.wantDirs) {
				t.Errorf("log dirs %v, want %v", gotD, tc.wantDirs)
			}
			if !slices.Equal(gotR, tc.wantRemember) {
				t.Errorf("remembered %v, want %v", gotR, tc.wantRemember)
			}
		})
	}
}

func TestPlanContainerGCLogPaths(t *testing.T) {
	plan := planContainerGC(gcInput{
		Containers:   []*runtime.Container{gcCtr("c", "u", "app", 3, gcExited, time.Minute)},
		SourcesReady: true, PodLogsDir: "/var/log/pods",
	}, DefaultContainerGCPolicy(), gcNow)
	if len(plan.Containers) != 1 || plan.Containers[0].LogPath != "/var/log/pods/ns_p-u_u/app/3.log" {
		t.Errorf("plan %+v, want the container with log /var/log/pods/ns_p-u_u/app/3.log", plan.Containers)
	}
}
