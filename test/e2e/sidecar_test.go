package e2e

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/runtime"
)

// TestSidecarRunsThroughInitAndStopsAfterApp_A37_A24_A42 runs a restartable
// init container (sidecar) before a regular init container and the app. The
// sidecar keeps running while init-2 and then the app run; on deletion the
// app stops first (its TERM trap takes ~3s) and the sidecar only after it.
func TestSidecarRunsThroughInitAndStopsAfterApp_A37_A24_A42(t *testing.T) {
	e := NewEnv(t)
	e.StartAgent(t, AgentOptions{})
	exits := e.watchExits(t)
	e.WriteManifest(t, "sidecar.yaml", podSpec("sidecar", []string{"terminationGracePeriodSeconds: 10"},
		[]string{
			container("sidecar", busyboxImage, []string{"sh", "-c",
				`trap 'echo sidecar-TERM; sleep 1; exit 0' TERM; echo sidecar-up; while true; do sleep 1; done`}, nil,
				"restartPolicy: Always"),
			container("init-2", busyboxImage, []string{"sh", "-c", "echo init-2; sleep 3"}, nil),
		},
		[]string{
			container("app", busyboxImage, []string{"sh", "-c",
				`trap 'echo app-TERM; sleep 3; exit 0' TERM; echo app-up; while true; do sleep 1; done`}, nil),
		}))
	name := PodName("sidecar")

	p := e.WaitForPod(t, name, containerCond("init-2", func(st *v1.ContainerStatus) bool { return st.State.Running != nil }), podStartTimeout)
	if c := e.PodContainer(t, name, "sidecar"); c.State != runtime.ContainerRunning {
		t.Errorf("sidecar is %s in the runtime while init-2 runs, want running", c.State)
	}
	if st := statusOf(t, p, "sidecar"); st.State.Running == nil || st.Started == nil || !*st.Started {
		t.Errorf("sidecar status %s while init-2 runs, want running and started", dump(st))
	}
	if p.Status.Phase != v1.PodPending || conditionStatus(p, v1.PodInitialized) != v1.ConditionFalse {
		t.Errorf("while init-2 runs: phase %s Initialized %s, want Pending and False", p.Status.Phase, conditionStatus(p, v1.PodInitialized))
	}

	p = e.WaitForPod(t, name, runningAndReady, podStartTimeout)
	sidecar, init2, app := e.PodContainer(t, name, "sidecar"), e.PodContainer(t, name, "init-2"), e.PodContainer(t, name, "app")
	if sidecar.State != runtime.ContainerRunning || app.State != runtime.ContainerRunning {
		t.Errorf("sidecar %s, app %s in the runtime; want both running", sidecar.State, app.State)
	}
	if init2.StartedAt.Before(sidecar.StartedAt) || app.StartedAt.Before(init2.FinishedAt) {
		t.Errorf("start order: sidecar %s, init-2 %s-%s, app %s; want sidecar, then init-2, then app after init-2 finished",
			sidecar.StartedAt, init2.StartedAt, init2.FinishedAt, app.StartedAt)
	}
	st := statusOf(t, p, "sidecar")
	if st.State.Running == nil || !st.Ready || st.RestartCount != 0 {
		t.Errorf("sidecar status %s with the app running, want running, ready, no restart", dump(st))
	}

	ws := map[string]*stopWatch{
		"sidecar": {id: sidecar.ID},
		"app":     {id: app.ID},
	}
	removed := time.Now()
	e.RemoveManifest(t, "sidecar.yaml")
	e.watchStops(t, ws, exits)
	sc, ap := ws["sidecar"], ws["app"]
	t.Logf("after deletion: app ended +%s, sidecar last running +%s, ended +%s",
		ap.end.Sub(removed), sc.lastRunning.Sub(removed), sc.end.Sub(removed))
	if ap.exitCode != 0 {
		t.Errorf("app exit code %d, want 0 (its TERM trap)", ap.exitCode)
	}
	if !sc.end.After(ap.end) || !sc.lastRunning.After(ap.end) {
		t.Errorf("sidecar last seen running at +%s and ended at +%s, app ended at +%s: the sidecar must stop after the app",
			sc.lastRunning.Sub(removed), sc.end.Sub(removed), ap.end.Sub(removed))
	}
}
