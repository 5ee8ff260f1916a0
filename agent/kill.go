package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/internal/podlogs"
	"github.com/skiffnode/skiff/internal/startgate"
	"github.com/skiffnode/skiff/runtime"
)

// minKillGrace is the kubelet's minimum shutdown window: a container always
// gets at least this long between its stop signal and SIGKILL.
const minKillGrace = 2

// killContainer stops one running container the kubelet's way (A.42,
// C.6-C.9): a Killing event, the preStop hook within the grace period, then
// the stop signal with what is left of it, at least minKillGrace seconds. A
// preStop still running at expiry so gets a one-off 2s extension. turn, if
// set, blocks until the container's turn to stop (sidecar ordering) and is
// given the remaining grace. Blocks until the container exited.
func (w *podWorker) killContainer(ctx context.Context, cs *runtime.ContainerStatus, podIP, message string, grace int64, turn func(time.Duration)) error {
	spec := w.specOf(cs.Name)
	if message == "" {
		message = "Stopping container " + cs.Name
	}
	w.event(cs.Name, v1.EventTypeNormal, EventKilling, message)
	start := w.d.clock.Now()
	if spec != nil && spec.Lifecycle != nil && spec.Lifecycle.PreStop != nil && grace > 0 {
		hookCtx, cancel := context.WithCancel(ctx)
		defer cancel() // the hook may run on during the extension
		w.runPreStop(hookCtx, spec, cs.ID, podIP, time.Duration(grace)*time.Second)
	}
	left := time.Duration(grace)*time.Second - w.d.clock.Since(start)
	if turn != nil && left > 0 {
		turn(left)
		left = time.Duration(grace)*time.Second - w.d.clock.Since(start)
	}
	// Round up: a few microseconds spent here must not cost a whole second
	// of the container's grace period.
	secs := max(int64((left+time.Second-1)/time.Second), minKillGrace)
	if err := w.d.rt.StopContainer(ctx, cs.ID, time.Duration(secs)*time.Second); err != nil && !errors.Is(err, runtime.ErrNotFound) {
		return fmt.Errorf("stop container %s: %w", cs.Name, err)
	}
	return nil
}

// runPreStop runs the preStop hook and waits for it at most budget. The
// hook's call is cancelled when the budget is spent or ctx ends, and
// runPreStop returns only after it returned: no hook outlives the worker.
func (w *podWorker) runPreStop(ctx context.Context, c *v1.Container, id, podIP string, budget time.Duration) {
	hctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	defer func() {
		cancel()
		<-done
	}()
	go func() {
		defer close(done)
		if msg, err := w.d.hooks.run(hctx, w.pod, c, id, podIP, c.Lifecycle.PreStop); err != nil && hctx.Err() == nil {
			w.log.Warn("preStop hook failed", "container", c.Name, "err", err, "message", msg)
			w.event(c.Name, v1.EventTypeWarning, EventFailedPreStopHook, "PreStopHook failed")
		}
	}()
	t := w.d.clock.NewTimer(budget)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C():
		w.log.Info("preStop hook not completed in grace period", "container", c.Name, "grace", budget)
	case <-ctx.Done():
	}
}

// specOf returns the spec of the pod's container name, or nil.
func (w *podWorker) specOf(name string) *v1.Container {
	for _, c := range append(allContainers(w.pod), ephemeralContainers(w.pod)...) {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// stopRunning stops every running container of the current state with the
// grace period (seconds): app containers (and anything unknown) at once,
// sidecars after them in reverse order, as the kubelet's termination
// ordering does (A.42, sidecars). Blocks until all have exited.
func (w *podWorker) stopRunning(ctx context.Context, st *podState, grace int64) error {
	podIP := ""
	if sb := st.sandbox(); sb != nil {
		podIP = sb.IP
	}
	var running []*runtime.ContainerStatus
	for _, c := range st.Containers {
		if c.State == runtime.ContainerRunning {
			running = append(running, c)
		}
	}
	done := make(map[string]chan struct{}, len(running))
	for _, c := range running {
		done[c.ID] = make(chan struct{})
	}
	var wg sync.WaitGroup
	errs := make([]error, len(running))
	for i, c := range running {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(done[c.ID])
			errs[i] = w.killContainer(ctx, c, podIP, "", grace, w.turnOf(c, running, done))
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// turnOf returns, for a sidecar, a wait for every container that must stop
// before it: all non-sidecars and the sidecars declared after it. Others
// get nil (no wait).
func (w *podWorker) turnOf(c *runtime.ContainerStatus, running []*runtime.ContainerStatus, done map[string]chan struct{}) func(time.Duration) {
	idx := sidecarIndex(w.pod, c.Name)
	if idx < 0 {
		return nil
	}
	var before []chan struct{}
	for _, o := range running {
		if o == c {
			continue
		}
		if j := sidecarIndex(w.pod, o.Name); j < 0 || j > idx {
			before = append(before, done[o.ID])
		}
	}
	return func(budget time.Duration) {
		t := w.d.clock.NewTimer(budget)
		defer t.Stop()
		for _, ch := range before {
			select {
			case <-ch:
			case <-t.C():
				return
			}
		}
	}
}

// sidecarIndex is the init container index of sidecar name, or -1.
func sidecarIndex(pod *v1.Pod, name string) int {
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; c.Name == name && isSidecar(c) {
			return i
		}
	}
	return -1
}

// Teardown priorities on the agent's teardown gate: stopping a sandbox
// goes before removing anything, so when many pods go at once every pod is
// down (its network torn down) before the records are cleaned up.
const (
	prioStopSandbox = startgate.Container
	prioRemove      = startgate.Sandbox
)

// killAll stops every container of the pod with the grace period, then
// stops the sandboxes, then removes the containers and sandboxes (A.42).
// The steps after the containers stopped each hold a slot of the agent's
// teardown gate: when many pods go at once, the runtime tears down a few
// at a time instead of all (issue 5, density: the CRI floor stops 110 pods
// in 39-45 s with 2-8 workers and 51 s with one per pod). Stopping
// containers is not gated: it waits out grace periods.
//
// stopped, if not nil, is called once everything is stopped, before the
// removal.
func (w *podWorker) killAll(ctx context.Context, st *podState, grace time.Duration, stopped func()) error {
	if err := w.stopRunning(ctx, st, int64(grace/time.Second)); err != nil {
		return err
	}
	rt := w.d.rt
	err := w.teardownStep(ctx, prioStopSandbox, func() error {
		for _, sb := range st.Sandboxes {
			if err := rt.StopSandbox(ctx, sb.ID); err != nil {
				return fmt.Errorf("stop sandbox %s: %w", sb.ID, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if stopped != nil {
		stopped()
	}
	return w.teardownStep(ctx, prioRemove, func() error {
		for _, c := range st.Containers {
			if err := rt.RemoveContainer(ctx, c.ID); err != nil {
				return fmt.Errorf("remove container %s: %w", c.Name, err)
			}
		}
		for _, sb := range st.Sandboxes {
			if err := rt.RemoveSandbox(ctx, sb.ID); err != nil {
				return fmt.Errorf("remove sandbox %s: %w", sb.ID, err)
			}
		}
		return nil
	})
}

// teardownStep runs fn holding a slot of the teardown gate.
func (w *podWorker) teardownStep(ctx context.Context, p startgate.Priority, fn func() error) error {
	release, err := w.d.teardowns.Acquire(ctx, p)
	if err != nil {
		return err
	}
	defer release()
	return fn()
}

// graceSeconds is the grace period of a kill (A.43); at least 2s, like the
// kubelet's minimum for kills.
func (w *podWorker) graceSeconds(override *int64) *int64 {
	g := gracePeriod(w.pod)
	if override != nil {
		g = *override
	}
	g = max(g, 2)
	return &g
}

// failureGrace is the grace period the pod's failure asks for (nil: the
// pod's own).
func (w *podWorker) failureGrace() *int64 {
	if w.failure == nil {
		return nil
	}
	return w.failure.Grace
}

// terminate stops and removes all of the pod's containers and sandboxes
// (A.42): every container gets its stop signal, SIGKILL after the grace
// period, then the sandbox goes. It reports whether the pod is gone.
func (w *podWorker) terminate(ctx context.Context, override *int64) bool {
	defer w.observePass(OperationKill, w.d.clock.Now())
	grace := time.Duration(*w.graceSeconds(override)) * time.Second
	st, err := observe(ctx, w.d.rt, string(w.uid))
	if err != nil {
		w.log.Warn("cannot observe pod for termination", "err", err)
		return false
	}
	w.publishStatus(st, w.d.clock.Now())
	if err := w.killAll(ctx, st, grace, func() { w.stopped.Store(true); w.publishStopped(ctx) }); err != nil {
		if ctx.Err() == nil {
			w.log.Warn("terminating pod", "err", err)
		}
		return false
	}
	w.d.prober.RemovePod(w.uid)
	w.removePodCgroup(ctx)
	if err := w.tearDownVolumes(ctx); err != nil {
		w.log.Warn("tearing down volumes", "err", err)
		return false
	}
	dir := podlogs.PodDir(w.d.podLogsDir, w.pod.Namespace, w.pod.Name, string(w.uid))
	if err := os.RemoveAll(dir); err != nil {
		w.log.Warn("removing pod logs", "dir", dir, "err", err)
	}
	if w.d.userns != nil {
		if err := w.d.userns.Release(string(w.uid)); err != nil {
			w.log.Warn("releasing the pod's user namespace", "err", err)
		}
	}
	if w.d.podsDir != "" {
		if err := os.RemoveAll(filepath.Join(w.d.podsDir, string(w.uid))); err != nil {
			w.log.Warn("removing pod directory", "err", err)
		}
	}
	w.log.Info("pod terminated")
	return true
}

// publishStopped publishes the status of the pod whose containers and
// sandboxes were just stopped, before they are removed: every container
// terminated with its exit code, and a terminal phase once every app
// container has exited, as the kubelet's last status of a deleted pod
// (generateAPIPodStatus with podIsTerminal). A failed observation leaves
// the status as it was.
func (w *podWorker) publishStopped(ctx context.Context) {
	st, err := observe(ctx, w.d.rt, string(w.uid))
	if err != nil {
		return
	}
	w.stoppedStatus = true
	clear(w.waiting) // no restart is coming: the exits show as they are
	w.publishStatus(st, w.d.clock.Now())
}
