package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/internal/podlogs"
	"github.com/skiffnode/skiff/internal/startgate"
	"github.com/skiffnode/skiff/runtime"
)

// cleanupTimeout bounds rollbacks that run after the caller's ctx ended.
const cleanupTimeout = 30 * time.Second

// apply executes one plan step. It reports whether it changed the runtime
// (so the worker syncs again at once) and, on failure, when to retry.
func (w *podWorker) apply(ctx context.Context, st *podState, acts podActions) (progressed bool, retry time.Duration) {
	if needsVolumes(acts) {
		if ok, retry := w.setUpVolumes(ctx); !ok {
			return false, retry
		}
	}
	switch {
	case acts.Terminal:
		return w.applyFinish(ctx, st, acts)
	case acts.CreateSandbox:
		if err := w.createSandbox(ctx, st, acts.SandboxAttempt); err != nil {
			w.log.Warn("creating sandbox", "err", err)
			if ctx.Err() == nil {
				w.event("", v1.EventTypeWarning, EventFailedCreateSandbox, "Failed to create pod sandbox: "+err.Error())
			}
			return false, sandboxRetryDelay
		}
		return true, 0
	}
	progressed, retry, done := w.applyKills(ctx, st, acts)
	if done {
		return progressed, retry
	}
	return w.applyStarts(ctx, st, acts, progressed)
}

// applyFinish stops a finished pod's containers and sandbox, if the plan
// says so (see apply).
func (w *podWorker) applyFinish(ctx context.Context, st *podState, acts podActions) (progressed bool, retry time.Duration) {
	if !acts.StopSandbox {
		return false, 0
	}
	if err := w.stopRunning(ctx, st, *w.graceSeconds(w.failureGrace())); err != nil {
		w.log.Warn("stopping containers of finished pod", "err", err)
		return false, 2 * time.Second
	}
	if err := w.d.rt.StopSandbox(ctx, st.sandbox().ID); err != nil {
		w.log.Warn("stopping sandbox of finished pod", "err", err)
		return false, 2 * time.Second
	}
	w.log.Info("pod finished")
	return true, 0
}

// applyKills removes the containers to kill and kills the unhealthy ones
// (see apply); done: apply returns progressed and retry without starting
// anything.
func (w *podWorker) applyKills(ctx context.Context, st *podState, acts podActions) (progressed bool, retry time.Duration, done bool) {
	for _, c := range acts.Kill {
		if err := w.stopAndRemove(ctx, c, time.Duration(*w.graceSeconds(nil))*time.Second); err != nil {
			w.log.Warn("removing container", "container", c.Name, "err", err)
			return false, 2 * time.Second, true
		}
		progressed = true
	}
	for _, u := range acts.Unhealthy {
		grace := *w.graceSeconds(u.Grace)
		if err := w.killContainer(ctx, u.Container, st.sandbox().IP, u.Message, grace, nil); err != nil {
			w.log.Warn("killing unhealthy container", "container", u.Container.Name, "err", err)
			return progressed, 2 * time.Second, true
		}
		if u.Restart {
			w.marks.markProbeKilled(u.Container.ID)
		}
		progressed = true
	}
	if len(acts.Unhealthy) > 0 {
		return progressed, 0, true // observe the kills before starting anything
	}
	return progressed, 0, false
}

// applyStarts starts the containers the plan starts, ephemeral ones and
// sidecars first (see apply); progressed: apply's so far.
func (w *podWorker) applyStarts(ctx context.Context, st *podState, acts podActions, progressed bool) (bool, time.Duration) {
	var retry time.Duration
	start := func(c *v1.Container, init bool) (bool, time.Duration) {
		return w.startContainer(ctx, st, c, init, acts.BackoffFrom[c.Name])
	}
	ephemeral := ephemeralContainers(w.pod)
	for _, i := range acts.StartEphemeral {
		if ok, d := start(ephemeral[i], false); ok {
			progressed = true
		} else {
			retry = soonest(retry, d)
		}
	}
	for _, i := range acts.RestartSidecars {
		if ok, d := start(&w.pod.Spec.InitContainers[i], true); ok {
			progressed = true
		} else {
			retry = soonest(retry, d)
		}
	}
	if acts.StartInit >= 0 {
		if ok, d := start(&w.pod.Spec.InitContainers[acts.StartInit], true); !ok {
			return progressed, soonest(retry, d)
		}
		progressed = true
	}
	for _, i := range acts.StartApp {
		if ok, d := start(&w.pod.Spec.Containers[i], false); !ok {
			retry = soonest(retry, d)
			continue
		}
		progressed = true
	}
	return progressed, retry
}

// soonest is the earlier of two retry delays, 0 meaning none.
func soonest(a, b time.Duration) time.Duration {
	if a == 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

func (w *podWorker) retryDelay() time.Duration { return 5 * time.Second }

// sandboxRetryDelay is how long a pod waits after its sandbox could not be
// created (a CNI or runtime failure): the kubelet's pod worker back-off
// after a failed sync (workerBackOffPeriod).
const sandboxRetryDelay = 10 * time.Second

// acquireStart takes a start slot of priority p; release it when done.
func (w *podWorker) acquireStart(ctx context.Context, p startgate.Priority) (release func(), err error) {
	return w.d.starts.Acquire(ctx, p)
}

// createSandbox kills whatever the pod still has, then runs a new sandbox.
func (w *podWorker) createSandbox(ctx context.Context, st *podState, attempt uint32) error {
	if err := w.killAll(ctx, st, time.Duration(*w.graceSeconds(nil))*time.Second, nil); err != nil {
		return fmt.Errorf("clean up old sandbox: %w", err)
	}
	spec, dnsWarning, err := w.d.sandboxSpec(w.pod, attempt)
	if err != nil {
		return err
	}
	if dnsWarning != "" && !w.orphan {
		w.d.events.NodeEvent(v1.EventTypeWarning, EventMissingClusterDNS, dnsWarning)
		w.event("", v1.EventTypeWarning, EventMissingClusterDNS, fmt.Sprintf("pod: %q. %s", podDesc(w.pod), dnsWarning))
	}
	if err := os.MkdirAll(spec.LogDirectory, 0o755); err != nil {
		return fmt.Errorf("pod log directory: %w", err)
	}
	if err := w.ensurePodCgroup(ctx); err != nil {
		return err
	}
	release, err := w.acquireStart(ctx, startgate.Sandbox)
	if err != nil {
		return err
	}
	defer release()
	id, err := w.d.rt.RunSandbox(ctx, spec)
	w.d.metrics().SandboxStarted(err != nil)
	if err != nil {
		return fmt.Errorf("run sandbox: %w", err)
	}
	w.log.Info("sandbox started", "sandbox", id, "attempt", attempt)
	return nil
}

// startContainer ensures the image, then creates and starts one container.
// Problems become the container's Waiting reason; it reports success and,
// on failure, when to try again (an image pull back-off's end, else the
// usual retry delay).
// backoffFrom, if set, is the exit the planner's back-off check measured
// from: a start records the restart in the back-off (podActions.BackoffFrom).
// Each attempt is recorded with Metrics.ContainerStarted, with its waiting
// reason when it failed, as the kubelet counts them, except one whose
// image pull was cancelled (the pod is killed or the agent stops).
func (w *podWorker) startContainer(ctx context.Context, st *podState, c *v1.Container, init bool, backoffFrom time.Time) (bool, time.Duration) {
	now := w.d.clock.Now()
	key := restartBackoffKey(c)
	attempt := st.nextAttempt(c.Name)
	typ := containerType(w.pod, c.Name, init)
	image, err := w.ensureImage(ctx, c)
	var imageVols map[string]string
	if err == nil {
		imageVols, err = w.ensureImageVolumes(ctx, c)
	}
	if err != nil {
		var ie *imageError
		if errors.As(err, &ie) {
			w.d.metrics().ContainerStarted(typ, ie.Reason)
		}
		if d := w.setImageWaiting(c.Name, err); d > 0 {
			return false, d
		}
		return false, w.retryDelay()
	}
	id, err := w.createAndStart(ctx, st, c, attempt, image, imageVols, init)
	if err != nil {
		reason := startFailureReason(err)
		w.d.metrics().ContainerStarted(typ, reason)
		w.log.Warn("starting container", "container", c.Name, "err", err)
		w.event(c.Name, v1.EventTypeWarning, EventFailed, "Error: "+err.Error())
		w.waiting[c.Name] = waitingState{Reason: reason, Message: err.Error()}
		return false, w.retryDelay()
	}
	w.event(c.Name, v1.EventTypeNormal, EventStarted, "Started container "+c.Name)
	w.marks.actuated[id] = c.Resources
	if !backoffFrom.IsZero() {
		w.backoff.next(key, backoffFrom, now)
	}
	if !w.postStart(ctx, st, c, id) {
		w.d.metrics().ContainerStarted(typ, reasonPostStartHookError)
		return true, 0
	}
	w.d.metrics().ContainerStarted(typ, "")
	delete(w.waiting, c.Name)
	w.pruneOld(ctx, st, c.Name, attempt)
	w.log.Info("container started", "container", c.Name, "attempt", attempt, "init", init)
	return true, 0
}

// createAndStart creates the container and starts it; a container that does
// not start is removed again (rollback under a fresh bounded context).
func (w *podWorker) createAndStart(ctx context.Context, st *podState, c *v1.Container, attempt uint32, image string, imageVols map[string]string, init bool) (_ string, retErr error) {
	rt := w.d.rt
	sb := st.sandbox()
	sbSpec, _, err := w.d.sandboxSpec(w.pod, sb.Attempt)
	if err != nil {
		return "", err
	}
	volumePaths, err := w.fileKeyVolumes(ctx, c)
	if err != nil {
		return "", err
	}
	env, err := w.d.env.envFor(w.pod, c, sb, volumePaths)
	if err != nil {
		return "", err
	}
	spec, err := containerSpec(w.pod, c, attempt, image, env, init, w.d.limits)
	if err != nil {
		return "", fmt.Errorf("container %q: %w", c.Name, err)
	}
	if spec.TargetContainerID, err = ephemeralTarget(w.pod, c.Name, st, sb.ID); err != nil {
		return "", err
	}
	if err := w.addVolumeMounts(ctx, c, spec, imageVols); err != nil {
		return "", err
	}
	if len(imageVols) > 0 {
		spec.Annotations[runtime.AnnotationImageVolumes] = strings.Join(slices.Sorted(maps.Values(imageVols)), ",")
	}
	if err := w.d.security.completeContainerSpec(ctx, rt, w.pod, c, spec); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Join(sbSpec.LogDirectory, c.Name), 0o755); err != nil {
		return "", fmt.Errorf("container log directory: %w", err)
	}
	if err := w.addTerminationMessageMount(c, spec); err != nil {
		return "", err
	}
	if err := w.addEtcHostsMount(c, spec, sb); err != nil {
		return "", err
	}
	release, err := w.acquireStart(ctx, startgate.Container)
	if err != nil {
		return "", err
	}
	defer release()
	id, err := rt.CreateContainer(ctx, sb.ID, spec, sbSpec)
	if err != nil {
		return "", fmt.Errorf("create container: %w", err)
	}
	w.event(c.Name, v1.EventTypeNormal, EventCreated, "Created container: "+c.Name)
	defer func() {
		if retErr != nil {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
			defer cancel()
			_ = rt.RemoveContainer(cctx, id)
		}
	}()
	if err := rt.StartContainer(ctx, id); err != nil {
		return "", fmt.Errorf("start container: %w", err)
	}
	return id, nil
}

// addTerminationMessageMount mounts a fresh host file at the container's
// terminationMessagePath (A.40).
func (w *podWorker) addTerminationMessageMount(c *v1.Container, spec *runtime.ContainerSpec) error {
	spec.Annotations[annotationTermMessagePath] = c.TerminationMessagePath
	spec.Annotations[annotationTermMessagePolicy] = string(c.TerminationMessagePolicy)
	host, err := terminationMessageFile(w.d.podsDir, w.pod, c)
	if err != nil || host == "" {
		return err
	}
	spec.Annotations[annotationTermMessageHost] = host
	spec.Mounts = append(spec.Mounts, runtime.Mount{HostPath: host, ContainerPath: c.TerminationMessagePath})
	return nil
}

// postStart runs the container's postStart hook, if any, while the worker
// waits: the container is not reported Running before it completes (C.3).
// On failure the container is killed (through preStop) and waits with
// PostStartHookError (C.4). It reports whether the hook succeeded.
func (w *podWorker) postStart(ctx context.Context, st *podState, c *v1.Container, id string) bool {
	if c.Lifecycle == nil || c.Lifecycle.PostStart == nil {
		return true
	}
	w.inPostStart[c.Name] = true
	defer delete(w.inPostStart, c.Name)
	w.publishStatus(st, w.d.clock.Now())
	podIP := st.sandbox().IP
	msg, err := w.d.hooks.run(ctx, w.pod, c, id, podIP, c.Lifecycle.PostStart)
	if err == nil {
		return true
	}
	w.log.Warn("postStart hook failed", "container", c.Name, "err", err)
	w.event(c.Name, v1.EventTypeWarning, EventFailedPostStartHook, "PostStartHook failed")
	cs := &runtime.ContainerStatus{Container: runtime.Container{ID: id, Name: c.Name}}
	if kerr := w.killContainer(ctx, cs, podIP, "FailedPostStartHook", *w.graceSeconds(nil), nil); kerr != nil {
		w.log.Warn("killing container after postStart failure", "container", c.Name, "err", kerr)
	}
	w.waiting[c.Name] = waitingState{Reason: reasonPostStartHookError, Message: msg}
	return false
}

// pruneOld removes dead containers of name older than the previous attempt
// (kept for lastState and `logs --previous`), and their log files with
// their rotated siblings.
func (w *podWorker) pruneOld(ctx context.Context, st *podState, name string, attempt uint32) {
	for _, old := range st.history(name) {
		if old.Attempt+1 >= attempt || old.State == runtime.ContainerRunning {
			continue
		}
		if err := w.d.rt.RemoveContainer(ctx, old.ID); err != nil {
			w.log.Warn("removing old container", "container", name, "id", old.ID, "err", err)
			continue
		}
		dir := podlogs.PodDir(w.d.podLogsDir, w.pod.Namespace, w.pod.Name, string(w.uid))
		_ = podlogs.RemoveContainerLogs(podlogs.ContainerLogPath(dir, name, int(old.Attempt)))
	}
}

// stopAndRemove stops c with grace and removes it.
func (w *podWorker) stopAndRemove(ctx context.Context, c *runtime.ContainerStatus, grace time.Duration) error {
	rt := w.d.rt
	if c.State == runtime.ContainerRunning || c.State == runtime.ContainerCreated {
		if err := rt.StopContainer(ctx, c.ID, grace); err != nil {
			return fmt.Errorf("stop container %s: %w", c.Name, err)
		}
	}
	if err := rt.RemoveContainer(ctx, c.ID); err != nil {
		return fmt.Errorf("remove container %s: %w", c.Name, err)
	}
	return nil
}

// ephemeralTarget returns the ID of the running container whose PID
// namespace ephemeral container name joins (its targetContainerName, as
// kubectl debug --target sets it); "" for any other container or without
// a target. The target must run in the current sandbox.
func ephemeralTarget(pod *v1.Pod, name string, st *podState, sandboxID string) (string, error) {
	for _, ec := range pod.Spec.EphemeralContainers {
		if ec.Name != name || ec.TargetContainerName == "" {
			continue
		}
		if cs := st.latestIn(sandboxID)[ec.TargetContainerName]; cs != nil && cs.State == runtime.ContainerRunning {
			return cs.ID, nil
		}
		return "", fmt.Errorf("target container %q of ephemeral container %q is not running", ec.TargetContainerName, name)
	}
	return "", nil
}
