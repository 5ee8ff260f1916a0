package metrics

import (
	"context"
	"errors"
	"time"

	"github.com/skiffnode/skiff/runtime"
)

// The methods below each call the wrapped runtime and record the call
// (instrumentedRuntime.record); they return what the runtime returned.

// Version implements runtime.Runtime.
func (r *instrumentedRuntime) Version(ctx context.Context) (runtime.VersionInfo, error) {
	start := r.clock.Now()
	v, err := r.rt.Version(ctx)
	r.record(opVersion, start, err)
	return v, err
}

// Features implements runtime.Runtime; the node asks once at start, so it
// is passed through uncounted.
func (r *instrumentedRuntime) Features(ctx context.Context) (runtime.Features, error) {
	return r.rt.Features(ctx)
}

// RunSandbox implements runtime.Sandboxes.
func (r *instrumentedRuntime) RunSandbox(ctx context.Context, spec *runtime.SandboxSpec) (string, error) {
	start := r.clock.Now()
	id, err := r.rt.RunSandbox(ctx, spec)
	r.record(opRunSandbox, start, err)
	return id, err
}

// StopSandbox implements runtime.Sandboxes.
func (r *instrumentedRuntime) StopSandbox(ctx context.Context, id string) error {
	start := r.clock.Now()
	err := r.rt.StopSandbox(ctx, id)
	r.record(opStopSandbox, start, err)
	return err
}

// RemoveSandbox implements runtime.Sandboxes.
func (r *instrumentedRuntime) RemoveSandbox(ctx context.Context, id string) error {
	start := r.clock.Now()
	err := r.rt.RemoveSandbox(ctx, id)
	r.record(opRemoveSandbox, start, err)
	return err
}

// SandboxStatus implements runtime.Sandboxes.
func (r *instrumentedRuntime) SandboxStatus(ctx context.Context, id string) (*runtime.SandboxStatus, error) {
	start := r.clock.Now()
	st, err := r.rt.SandboxStatus(ctx, id)
	r.record(opSandboxStatus, start, err)
	return st, err
}

// ListSandboxes implements runtime.Sandboxes.
func (r *instrumentedRuntime) ListSandboxes(ctx context.Context, labels map[string]string) ([]*runtime.Sandbox, error) {
	start := r.clock.Now()
	sbs, err := r.rt.ListSandboxes(ctx, labels)
	r.record(opListSandboxes, start, err)
	return sbs, err
}

// CreateContainer implements runtime.Containers.
func (r *instrumentedRuntime) CreateContainer(ctx context.Context, sandboxID string, spec *runtime.ContainerSpec, sandbox *runtime.SandboxSpec) (string, error) {
	start := r.clock.Now()
	id, err := r.rt.CreateContainer(ctx, sandboxID, spec, sandbox)
	r.record(opCreateContainer, start, err)
	return id, err
}

// StartContainer implements runtime.Containers.
func (r *instrumentedRuntime) StartContainer(ctx context.Context, id string) error {
	start := r.clock.Now()
	err := r.rt.StartContainer(ctx, id)
	r.record(opStartContainer, start, err)
	return err
}

// StopContainer implements runtime.Containers.
func (r *instrumentedRuntime) StopContainer(ctx context.Context, id string, timeout time.Duration) error {
	start := r.clock.Now()
	err := r.rt.StopContainer(ctx, id, timeout)
	r.record(opStopContainer, start, err)
	return err
}

// RemoveContainer implements runtime.Containers.
func (r *instrumentedRuntime) RemoveContainer(ctx context.Context, id string) error {
	start := r.clock.Now()
	err := r.rt.RemoveContainer(ctx, id)
	r.record(opRemoveContainer, start, err)
	return err
}

// ListContainers implements runtime.Containers.
func (r *instrumentedRuntime) ListContainers(ctx context.Context, filter runtime.ContainerFilter) ([]*runtime.Container, error) {
	start := r.clock.Now()
	cs, err := r.rt.ListContainers(ctx, filter)
	r.record(opListContainers, start, err)
	return cs, err
}

// ContainerStatus implements runtime.Containers.
func (r *instrumentedRuntime) ContainerStatus(ctx context.Context, id string) (*runtime.ContainerStatus, error) {
	start := r.clock.Now()
	st, err := r.rt.ContainerStatus(ctx, id)
	r.record(opContainerStatus, start, err)
	return st, err
}

// ExecSync implements runtime.Containers.
func (r *instrumentedRuntime) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (*runtime.ExecResult, error) {
	start := r.clock.Now()
	res, err := r.rt.ExecSync(ctx, id, cmd, timeout)
	r.record(opExecSync, start, err)
	return res, err
}

// ReopenContainerLog implements runtime.Containers.
func (r *instrumentedRuntime) ReopenContainerLog(ctx context.Context, id string) error {
	start := r.clock.Now()
	err := r.rt.ReopenContainerLog(ctx, id)
	r.record(opReopenContainerLog, start, err)
	return err
}

// UpdateContainerResources implements runtime.Containers.
func (r *instrumentedRuntime) UpdateContainerResources(ctx context.Context, id string, res *runtime.Resources) error {
	start := r.clock.Now()
	err := r.rt.UpdateContainerResources(ctx, id, res)
	r.record(opUpdateContainerResources, start, err)
	return err
}

// ImageStatus implements runtime.Images. An absent image is no error
// here: CRI answers ImageStatus for one with an empty status, which the
// kubelet does not count as an error either.
func (r *instrumentedRuntime) ImageStatus(ctx context.Context, ref string) (*runtime.Image, error) {
	start := r.clock.Now()
	img, err := r.rt.ImageStatus(ctx, ref)
	recorded := err
	if errors.Is(err, runtime.ErrNotFound) {
		recorded = nil
	}
	r.record(opImageStatus, start, recorded)
	return img, err
}

// PullImage implements runtime.Images.
func (r *instrumentedRuntime) PullImage(ctx context.Context, ref string, auth *runtime.AuthConfig) (string, error) {
	start := r.clock.Now()
	id, err := r.rt.PullImage(ctx, ref, auth)
	r.record(opPullImage, start, err)
	return id, err
}

// ListImages implements runtime.Images.
func (r *instrumentedRuntime) ListImages(ctx context.Context) ([]*runtime.Image, error) {
	start := r.clock.Now()
	imgs, err := r.rt.ListImages(ctx)
	r.record(opListImages, start, err)
	return imgs, err
}

// RemoveImage implements runtime.Images.
func (r *instrumentedRuntime) RemoveImage(ctx context.Context, ref string) error {
	start := r.clock.Now()
	err := r.rt.RemoveImage(ctx, ref)
	r.record(opRemoveImage, start, err)
	return err
}

// ImageFsInfo implements runtime.Images.
func (r *instrumentedRuntime) ImageFsInfo(ctx context.Context) ([]runtime.FilesystemUsage, error) {
	start := r.clock.Now()
	fs, err := r.rt.ImageFsInfo(ctx)
	r.record(opImageFsInfo, start, err)
	return fs, err
}

// ListContainerRefs implements runtime.RefLister (list_containers).
func (r *instrumentedRuntime) ListContainerRefs(ctx context.Context, labels map[string]string, key string, into []runtime.ContainerRef) ([]runtime.ContainerRef, error) {
	start := r.clock.Now()
	refs, err := runtime.ListContainerRefs(ctx, r.rt, labels, key, into)
	r.record(opListContainers, start, err)
	return refs, err
}

// ListSandboxRefs implements runtime.RefLister (list_podsandbox).
func (r *instrumentedRuntime) ListSandboxRefs(ctx context.Context, labels map[string]string, key string, into []runtime.SandboxRef) ([]runtime.SandboxRef, error) {
	start := r.clock.Now()
	refs, err := runtime.ListSandboxRefs(ctx, r.rt, labels, key, into)
	r.record(opListSandboxes, start, err)
	return refs, err
}

// Exec implements runtime.Streamer.
func (r *instrumentedStreamer) Exec(ctx context.Context, containerID string, cmd []string, tty, stdin, stdout, stderr bool) (string, error) {
	start := r.clock.Now()
	url, err := r.s.Exec(ctx, containerID, cmd, tty, stdin, stdout, stderr)
	r.record(opExec, start, err)
	return url, err
}

// Attach implements runtime.Streamer.
func (r *instrumentedStreamer) Attach(ctx context.Context, containerID string, tty, stdin, stdout, stderr bool) (string, error) {
	start := r.clock.Now()
	url, err := r.s.Attach(ctx, containerID, tty, stdin, stdout, stderr)
	r.record(opAttach, start, err)
	return url, err
}

// PortForward implements runtime.Streamer.
func (r *instrumentedStreamer) PortForward(ctx context.Context, sandboxID string, ports []int32) (string, error) {
	start := r.clock.Now()
	url, err := r.s.PortForward(ctx, sandboxID, ports)
	r.record(opPortForward, start, err)
	return url, err
}
