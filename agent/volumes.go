package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffnode/skiff/runtime"
	"github.com/skiffnode/skiff/volumes"
)

// VolumeManager is the agent's port to the pod volume manager (the node
// adapts a volumes.Manager). All methods are safe for concurrent use and
// block on file system calls.
type VolumeManager interface {
	// SetUp makes pod's volumes ready and returns them by name; idempotent
	// and cheap once done. The error of a volume that could not be set up
	// is a *VolumeSetUpError; the returned map must not be modified.
	SetUp(ctx context.Context, pod *v1.Pod) (map[string]PodVolume, error)
	// TearDown unmounts and removes the pod's volumes; idempotent.
	TearDown(ctx context.Context, uid types.UID) error
	// CleanOrphans removes the pod directories of UIDs not in keep.
	CleanOrphans(ctx context.Context, keep map[types.UID]bool) error
	// Refresh rewrites the object-backed volumes whose content changed.
	Refresh(ctx context.Context) error
	// CheckSizeLimits returns a disk emptyDir of pod over its sizeLimit,
	// or nil.
	CheckSizeLimits(pod *v1.Pod) (*SizeLimitExceeded, error)
	// SubPath returns the host path container mounts for the subPath
	// sub of pod's set-up volume vol (named volume; index is the mount's
	// index in the container's volumeMounts): checked to stay inside the
	// volume, created when missing, and pinned, so that a container
	// changing the volume after the check cannot redirect the mount out
	// of it (CVE-2021-25741). Blocking.
	SubPath(pod *v1.Pod, container string, index int, volume string, vol PodVolume, sub string) (string, error)
}

// PodVolume is a set-up volume of a pod as its containers mount it.
type PodVolume struct {
	// HostPath is what containers bind-mount.
	HostPath string
	// ReadOnly: the volume type is read-only for containers whatever the
	// mount says (configMap, secret, downwardAPI, projected).
	ReadOnly bool
}

// VolumeSetUpError is a volume that could not be set up; its message is
// the kubelet's FailedMount event message.
type VolumeSetUpError struct {
	Volume string
	Err    error
}

func (e *VolumeSetUpError) Error() string {
	return fmt.Sprintf("MountVolume.SetUp failed for volume %q : %v", e.Volume, e.Err)
}

func (e *VolumeSetUpError) Unwrap() error { return e.Err }

// SizeLimitExceeded is a disk emptyDir whose usage exceeds its sizeLimit.
type SizeLimitExceeded struct {
	Volume string
	Limit  resource.Quantity
	Used   int64
}

// Message is the kubelet's eviction message for it.
func (v *SizeLimitExceeded) Message() string {
	return fmt.Sprintf("Usage of EmptyDir volume %q exceeds the limit %q. ", v.Volume, v.Limit.String())
}

// EventFailedMount is the kubelet's event for a volume that failed to set up.
const EventFailedMount = "FailedMount"

// Volume set-up retries back off as the kubelet's operation executor does:
// from 500ms, doubling, to 2m2s.
const (
	volumeRetryInitial = 500 * time.Millisecond
	volumeRetryMax     = 2*time.Minute + 2*time.Second
	// claimRetryMax bounds the retries of a claim not yet bound: its
	// binding is not signalled to the pod's worker, and the kubelet's
	// volume manager retries such a pod on each pass of its populator.
	claimRetryMax = 2 * time.Second
)

// volumeRetry is a pod worker's volume set-up back-off (worker goroutine
// only).
type volumeRetry struct {
	failures int
	next     time.Time
	// objectsGen is the agent's object change count at the failure: a
	// change of the ConfigMaps and Secrets retries at once.
	objectsGen uint64
}

// errNoVolumeManager fails the volumes of a pod on an agent without a
// volume manager.
var errNoVolumeManager = errors.New("volumes are not supported: this agent runs without a volume manager")

// needsVolumes reports whether acts create a sandbox or start a container:
// the pod's volumes must be set up first.
func needsVolumes(acts podActions) bool {
	return !acts.Terminal && (acts.CreateSandbox || acts.StartInit >= 0 || len(acts.StartApp) > 0 || len(acts.RestartSidecars) > 0 || len(acts.StartEphemeral) > 0)
}

// setUpVolumes sets the pod's volumes up (cheap once done). On failure it
// records a FailedMount event, as the kubelet does, and returns when to
// retry; the pod stays Pending with its containers ContainerCreating.
func (w *podWorker) setUpVolumes(ctx context.Context) (ok bool, retry time.Duration) {
	if w.d.volumes == nil && len(w.pod.Spec.Volumes) == 0 {
		return true, 0
	}
	now := w.d.clock.Now()
	r := &w.volumeRetry
	if r.failures > 0 && now.Before(r.next) && w.objectsGen() == r.objectsGen {
		return false, r.next.Sub(now)
	}
	// The generation before the attempt: a change signalled while SetUp
	// runs (an answer to a request SetUp made) retries at once.
	gen := w.objectsGen()
	err := errNoVolumeManager
	if w.d.volumes != nil {
		_, err = w.d.volumes.SetUp(ctx, w.pod)
	}
	if err == nil {
		*r = volumeRetry{}
		return true, 0
	}
	if ctx.Err() != nil {
		return false, time.Second
	}
	msg := err.Error()
	var se *VolumeSetUpError
	if !errors.As(err, &se) {
		msg = "MountVolume.SetUp failed : " + msg
	}
	w.log.Warn("setting up volumes", "err", err)
	w.event("", v1.EventTypeWarning, EventFailedMount, msg)
	delay := volumeRetryDelay(r.failures, err)
	r.failures++
	r.next = now.Add(delay)
	r.objectsGen = gen
	return false, delay
}

// volumeRetryDelay is the wait before the next set-up after failures
// earlier ones and this one's err: doubling from volumeRetryInitial up to
// volumeRetryMax, or to claimRetryMax while a claim is not bound yet.
func volumeRetryDelay(failures int, err error) time.Duration {
	delay := min(volumeRetryInitial<<min(failures, 8), volumeRetryMax)
	if errors.Is(err, volumes.ErrClaimNotReady) {
		delay = min(delay, claimRetryMax)
	}
	return delay
}

func (w *podWorker) objectsGen() uint64 {
	if w.d.objectsChanged == nil {
		return 0
	}
	return w.d.objectsChanged.Load()
}

// addVolumeMounts adds c's volumeMounts to spec's mounts, before the
// agent's own (termination message file); imageVols are the image IDs of
// its image volumes (ensureImageVolumes).
func (w *podWorker) addVolumeMounts(ctx context.Context, c *v1.Container, spec *runtime.ContainerSpec, imageVols map[string]string) error {
	if len(c.VolumeMounts) == 0 {
		return nil
	}
	if w.d.volumes == nil {
		return errNoVolumeManager
	}
	vols, err := w.d.volumes.SetUp(ctx, w.pod)
	if err != nil {
		return err
	}
	subPath := func(index int, volume string, vol PodVolume, sub string) (string, error) {
		return w.d.volumes.SubPath(w.pod, c.Name, index, volume, vol, sub)
	}
	mounts, err := containerMounts(c, vols, imageVols, spec.Env, mountOptions{privileged: spec.Privileged, rro: w.d.rro, subPath: subPath})
	if err != nil {
		return err
	}
	spec.Mounts = append(mounts, spec.Mounts...)
	return nil
}

// containerMounts turns c's volumeMounts into runtime mounts over the
// set-up vols, as the kubelet's makeMounts does: subPathExpr expanded from
// env, subPath created inside the volume, read-only if the mount or the
// volume type says so, propagation translated. An image volume (its image
// ID in imageVols) is the runtime's to mount, always read-only, its
// subPath a directory of the image. Every error is the container's
// configuration error (CreateContainerConfigError), as the kubelet's
// makeMounts errors are.
func containerMounts(c *v1.Container, vols map[string]PodVolume, imageVols map[string]string, env []runtime.KeyValue, o mountOptions) (_ []runtime.Mount, err error) {
	defer func() {
		var ce *configError
		if err != nil && !errors.As(err, &ce) {
			err = &configError{err}
		}
	}()
	var envMap map[string]string
	out := make([]runtime.Mount, 0, len(c.VolumeMounts))
	for i, vm := range c.VolumeMounts {
		vol, ok := vols[vm.Name]
		if !ok {
			return nil, fmt.Errorf("cannot find volume %q to mount into container %q", vm.Name, c.Name)
		}
		host := vol.HostPath
		sub := vm.SubPath
		if vm.SubPathExpr != "" {
			if envMap == nil {
				envMap = make(map[string]string, len(env))
				for _, kv := range env {
					envMap[kv.Key] = kv.Value
				}
			}
			var err error
			if sub, err = volumes.ExpandSubPathExpr(vm.SubPathExpr, envMap); err != nil {
				return nil, fmt.Errorf("volumeMount %q of container %q: %w", vm.Name, c.Name, err)
			}
		}
		rro, err := recursiveReadOnly(vm, o.rro)
		if err != nil {
			return nil, &configError{fmt.Errorf("failed to resolve recursive read-only mode: %w", err)}
		}
		if img, ok := imageVols[vm.Name]; ok {
			prop, err := mountPropagation(vm.MountPropagation, o.privileged)
			if err != nil {
				return nil, fmt.Errorf("volumeMount %q of container %q: %w", vm.Name, c.Name, err)
			}
			out = append(out, runtime.Mount{ContainerPath: vm.MountPath, ReadOnly: true, RecursiveReadOnly: rro, Propagation: prop, Image: img, ImageSubPath: sub})
			continue
		}
		if sub != "" {
			var err error
			if host, err = o.subPathOf(i, vm.Name, vol, sub); err != nil {
				return nil, fmt.Errorf("volumeMount %q of container %q: %w", vm.Name, c.Name, err)
			}
		}
		prop, err := mountPropagation(vm.MountPropagation, o.privileged)
		if err != nil {
			return nil, fmt.Errorf("volumeMount %q of container %q: %w", vm.Name, c.Name, err)
		}
		out = append(out, runtime.Mount{
			HostPath: host, ContainerPath: vm.MountPath,
			ReadOnly: vm.ReadOnly || vol.ReadOnly, RecursiveReadOnly: rro, Propagation: prop,
		})
	}
	return out, nil
}

// mountOptions are what containerMounts needs besides the mounts: the
// container is privileged; the runtime has recursive read-only mounts;
// subPath is the volume manager's VolumeManager.SubPath for this pod and
// container (nil: volumes.SubPath, unpinned, for tests).
type mountOptions struct {
	privileged, rro bool
	subPath         func(index int, volume string, vol PodVolume, sub string) (string, error)
}

// subPathOf is o.subPath, or the unpinned check without one.
func (o mountOptions) subPathOf(index int, volume string, vol PodVolume, sub string) (string, error) {
	if o.subPath == nil {
		return volumes.SubPath(vol.HostPath, sub)
	}
	return o.subPath(index, volume, vol, sub)
}

// recursiveReadOnly is the kubelet's resolveRecursiveReadOnly: whether vm
// is mounted recursively read-only, given whether the runtime can
// (supported). IfPossible falls back to a plain read-only mount; Enabled
// on a runtime without it is an error.
func recursiveReadOnly(vm v1.VolumeMount, supported bool) (bool, error) {
	if vm.RecursiveReadOnly == nil || *vm.RecursiveReadOnly == v1.RecursiveReadOnlyDisabled {
		return false, nil
	}
	if !vm.ReadOnly {
		return false, fmt.Errorf("volume %q requested recursive read-only mode, but it is not read-only", vm.Name)
	}
	if p := vm.MountPropagation; p != nil && *p != v1.MountPropagationNone {
		return false, fmt.Errorf("volume %q requested recursive read-only mode, but it is not compatible with propagation %q", vm.Name, *p)
	}
	switch *vm.RecursiveReadOnly {
	case v1.RecursiveReadOnlyIfPossible:
		return supported, nil
	case v1.RecursiveReadOnlyEnabled:
		if !supported {
			return false, fmt.Errorf("volume %q requested recursive read-only mode, but it is not supported by the runtime", vm.Name)
		}
		return true, nil
	}
	return false, fmt.Errorf("unknown recursive read-only mode %q", *vm.RecursiveReadOnly)
}

// mountPropagation is the kubelet's translateMountPropagation.
func mountPropagation(mode *v1.MountPropagationMode, privileged bool) (runtime.MountPropagation, error) {
	if mode == nil {
		return runtime.PropagationPrivate, nil
	}
	switch *mode {
	case v1.MountPropagationNone:
		return runtime.PropagationPrivate, nil
	case v1.MountPropagationHostToContainer:
		return runtime.PropagationHostToContainer, nil
	case v1.MountPropagationBidirectional:
		if !privileged {
			return 0, errors.New("requested bidirectional mount propagation but container is not privileged")
		}
		return runtime.PropagationBidirectional, nil
	}
	return 0, fmt.Errorf("invalid MountPropagation mode: %q", *mode)
}

// tearDownVolumes unmounts and removes the pod's volumes once its
// containers and sandboxes are gone.
func (w *podWorker) tearDownVolumes(ctx context.Context) error {
	if w.d.volumes == nil {
		return nil
	}
	return w.d.volumes.TearDown(ctx, w.uid)
}

// EventEvicted is the kubelet's event for an evicted pod.
const EventEvicted = "Evicted"

// evict asks the worker to fail the pod with reason Evicted and msg, for
// the kubelet's eviction signal (the first request wins). Non-blocking,
// safe for concurrent use.
func (w *podWorker) evict(signal, msg string) {
	w.req.evict(signal, msg)
	w.wake()
}

// takeEviction turns a pending eviction into the pod's failure, with the
// kubelet's Evicted event (worker goroutine only). The failure stops the
// pod's containers and makes it Failed; it is recorded once with
// Metrics.PodEvicted.
func (w *podWorker) takeEviction() {
	msg, signal := w.req.eviction()
	if msg == "" || w.failure != nil {
		return
	}
	w.failure = &podFailure{Reason: EventEvicted, Message: msg}
	w.d.metrics().PodEvicted(signal)
	w.event("", v1.EventTypeWarning, EventEvicted, msg)
	w.log.Info("pod evicted", "reason", msg)
}
