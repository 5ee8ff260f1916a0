package cri

import (
	"context"
	"fmt"
	"slices"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/skiffnode/skiff/runtime"
)

// CreateContainer creates a container in the sandbox. sandbox must be the
// spec the sandbox was run with: CRI wants the same PodSandboxConfig again.
func (r *Runtime) CreateContainer(ctx context.Context, sandboxID string, spec *runtime.ContainerSpec, sandbox *runtime.SandboxSpec) (string, error) {
	if sandbox == nil {
		return "", fmt.Errorf("create container %s in sandbox %s: no sandbox spec", spec.Name, sandboxID)
	}
	sbCfg := sandboxConfig(sandbox)
	if r.groups != nil {
		group, err := r.sandboxGroup(ctx, sandboxID)
		if err != nil {
			return "", fmt.Errorf("create container %s: %w", spec.Name, err)
		}
		setGroup(sbCfg, group)
	}
	ctx, cancel := callCtx(ctx, r.timeout)
	defer cancel()
	resp, err := r.rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId:  sandboxID,
		Config:        containerConfig(spec, sandbox),
		SandboxConfig: sbCfg,
	})
	if err != nil {
		return "", wrap(err, "create container %s in sandbox %s", spec.Name, sandboxID)
	}
	if resp.ContainerId == "" {
		return "", fmt.Errorf("create container %s in sandbox %s: runtime returned no container ID", spec.Name, sandboxID)
	}
	return resp.ContainerId, nil
}

// StartContainer starts a created container.
func (r *Runtime) StartContainer(ctx context.Context, id string) error {
	ctx, cancel := callCtx(ctx, r.timeout)
	defer cancel()
	if _, err := r.rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
		return wrap(err, "start container %s", id)
	}
	return nil
}

// StopContainer stops the container with the given grace period (rounded up
// to whole seconds, as CRI counts seconds) and blocks until it exited; the
// call may take the per-call timeout plus the grace period. Idempotent.
func (r *Runtime) StopContainer(ctx context.Context, id string, timeout time.Duration) error {
	secs := ceilSeconds(timeout)
	ctx, cancel := callCtx(ctx, r.timeout+time.Duration(secs)*time.Second)
	defer cancel()
	_, err := r.rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: secs})
	if err != nil && !isNotFound(err) {
		return wrap(err, "stop container %s", id)
	}
	return nil
}

// RemoveContainer removes a container, stopping it first if needed.
// Idempotent.
func (r *Runtime) RemoveContainer(ctx context.Context, id string) error {
	ctx, cancel := callCtx(ctx, r.timeout)
	defer cancel()
	_, err := r.rt.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id})
	if err != nil && !isNotFound(err) {
		return wrap(err, "remove container %s", id)
	}
	return nil
}

// ListContainers lists the containers matching filter.
func (r *Runtime) ListContainers(ctx context.Context, filter runtime.ContainerFilter) ([]*runtime.Container, error) {
	f := &runtimeapi.ContainerFilter{
		PodSandboxId:  filter.SandboxID,
		LabelSelector: filter.Labels,
	}
	if filter.State != nil {
		f.State = &runtimeapi.ContainerStateValue{State: containerStateToCRI(*filter.State)}
	}
	return r.listContainers(ctx, f)
}

func (r *Runtime) listContainers(ctx context.Context, f *runtimeapi.ContainerFilter) ([]*runtime.Container, error) {
	ctx, cancel := callCtx(ctx, r.timeout)
	defer cancel()
	resp, err := r.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: f})
	if err != nil {
		return nil, wrap(err, "list containers")
	}
	out := make([]*runtime.Container, 0, len(resp.Containers))
	for _, c := range resp.Containers {
		out = append(out, containerFromCRI(c))
	}
	return out, nil
}

// ContainerStatus returns the container's detailed state; a missing
// container gives an error wrapping runtime.ErrNotFound. CRI's status
// lacks the sandbox ID, so SandboxID stays empty: a caller that needs it
// takes it from ListContainers.
func (r *Runtime) ContainerStatus(ctx context.Context, id string) (*runtime.ContainerStatus, error) {
	cctx, cancel := callCtx(ctx, r.timeout)
	defer cancel()
	resp, err := r.rt.ContainerStatus(cctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		return nil, wrap(err, "container status %s", id)
	}
	if resp.Status == nil {
		return nil, fmt.Errorf("container status %s: %w", id, runtime.ErrNotFound)
	}
	return containerStatusFromCRI(resp.Status), nil
}

// ExecSync runs cmd in the container. timeout (rounded up to whole seconds;
// 0: none) limits the command; the call itself may take the per-call
// timeout on top. A non-zero exit code is reported, not returned as error.
func (r *Runtime) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (*runtime.ExecResult, error) {
	secs := ceilSeconds(timeout)
	var callTimeout time.Duration // no limit when the command has none
	if secs > 0 {
		callTimeout = r.timeout + time.Duration(secs)*time.Second
	}
	ctx, cancel := callCtx(ctx, callTimeout)
	defer cancel()
	resp, err := r.rt.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: secs})
	if err != nil {
		return nil, wrap(err, "exec in container %s", id)
	}
	return &runtime.ExecResult{Stdout: resp.Stdout, Stderr: resp.Stderr, ExitCode: resp.ExitCode}, nil
}

// ceilSeconds rounds a positive duration up to whole seconds; <= 0 is 0.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

// containerConfig maps a ContainerSpec to CRI. The network namespace mode
// follows the sandbox, as CRI requires.
func containerConfig(spec *runtime.ContainerSpec, sandbox *runtime.SandboxSpec) *runtimeapi.ContainerConfig {
	cfg := &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: spec.Name, Attempt: spec.Attempt},
		Image:       &runtimeapi.ImageSpec{Image: spec.Image, UserSpecifiedImage: spec.Image},
		Command:     spec.Command,
		Args:        spec.Args,
		WorkingDir:  spec.WorkingDir,
		Labels:      spec.Labels,
		Annotations: spec.Annotations,
		LogPath:     spec.LogPath,
		Stdin:       spec.Stdin,
		StdinOnce:   spec.StdinOnce,
		Tty:         spec.TTY,
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources: resourcesToCRI(spec.Resources),
			SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
				Privileged:       spec.Privileged,
				NamespaceOptions: namespaceOptions(sandbox),
				RunAsUser:        int64Value(spec.RunAsUser),
				RunAsGroup:       int64Value(spec.RunAsGroup),
			},
		},
	}
	applyContainerSecurity(cfg.Linux.SecurityContext, spec.Security)
	if spec.TargetContainerID != "" {
		// A fresh NamespaceOption: namespaceOptions builds one per call.
		ns := cfg.Linux.SecurityContext.NamespaceOptions
		ns.Pid, ns.TargetId = runtimeapi.NamespaceMode_TARGET, spec.TargetContainerID
	}
	for _, kv := range spec.Env {
		cfg.Envs = append(cfg.Envs, &runtimeapi.KeyValue{Key: kv.Key, Value: []byte(kv.Value)})
	}
	// In a pod's own user namespace every mount is idmapped to it, as the
	// kubelet asks (the runtime shifts the IDs; nothing is chowned).
	var ids []*runtimeapi.IDMapping
	if sandbox.Security != nil && sandbox.Security.UserNamespace != nil {
		ids = idMappings(sandbox.Security.UserNamespace)
	}
	for _, m := range spec.Mounts {
		mt := &runtimeapi.Mount{
			HostPath:          m.HostPath,
			ContainerPath:     m.ContainerPath,
			Readonly:          m.ReadOnly,
			RecursiveReadOnly: m.RecursiveReadOnly,
			Propagation:       propagationToCRI(m.Propagation),
			UidMappings:       ids,
			GidMappings:       ids,
		}
		if m.Image != "" {
			mt.Image, mt.ImageSubPath = &runtimeapi.ImageSpec{Image: m.Image}, m.ImageSubPath
		}
		cfg.Mounts = append(cfg.Mounts, mt)
	}
	return cfg
}

func propagationToCRI(p runtime.MountPropagation) runtimeapi.MountPropagation {
	switch p {
	case runtime.PropagationHostToContainer:
		return runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER
	case runtime.PropagationBidirectional:
		return runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL
	default:
		return runtimeapi.MountPropagation_PROPAGATION_PRIVATE
	}
}

func int64Value(v *int64) *runtimeapi.Int64Value {
	if v == nil {
		return nil
	}
	return &runtimeapi.Int64Value{Value: *v}
}

func resourcesToCRI(res *runtime.Resources) *runtimeapi.LinuxContainerResources {
	if res == nil {
		return nil
	}
	return &runtimeapi.LinuxContainerResources{
		CpuShares:          res.CPUShares,
		CpuQuota:           res.CPUQuota,
		CpuPeriod:          res.CPUPeriod,
		MemoryLimitInBytes: res.MemoryLimit,
		Unified:            res.Unified,
	}
}

func containerStateToCRI(s runtime.ContainerState) runtimeapi.ContainerState {
	switch s {
	case runtime.ContainerCreated:
		return runtimeapi.ContainerState_CONTAINER_CREATED
	case runtime.ContainerRunning:
		return runtimeapi.ContainerState_CONTAINER_RUNNING
	case runtime.ContainerExited:
		return runtimeapi.ContainerState_CONTAINER_EXITED
	default:
		return runtimeapi.ContainerState_CONTAINER_UNKNOWN
	}
}

func containerStateFromCRI(s runtimeapi.ContainerState) runtime.ContainerState {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return runtime.ContainerCreated
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return runtime.ContainerRunning
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return runtime.ContainerExited
	default:
		return runtime.ContainerUnknown
	}
}

func containerFromCRI(c *runtimeapi.Container) *runtime.Container {
	return &runtime.Container{
		ID:          c.Id,
		SandboxID:   c.PodSandboxId,
		Name:        c.GetMetadata().GetName(),
		Attempt:     c.GetMetadata().GetAttempt(),
		Image:       c.GetImage().GetImage(),
		ImageRef:    c.ImageRef,
		State:       containerStateFromCRI(c.State),
		CreatedAt:   timeFromNanos(c.CreatedAt),
		Labels:      c.Labels,
		Annotations: c.Annotations,
	}
}

func containerStatusFromCRI(s *runtimeapi.ContainerStatus) *runtime.ContainerStatus {
	return &runtime.ContainerStatus{
		Container: runtime.Container{
			ID:          s.Id,
			Name:        s.GetMetadata().GetName(),
			Attempt:     s.GetMetadata().GetAttempt(),
			Image:       s.GetImage().GetImage(),
			ImageRef:    s.ImageRef,
			State:       containerStateFromCRI(s.State),
			CreatedAt:   timeFromNanos(s.CreatedAt),
			Labels:      s.Labels,
			Annotations: s.Annotations,
		},
		StartedAt:  timeFromNanos(s.StartedAt),
		FinishedAt: timeFromNanos(s.FinishedAt),
		ExitCode:   s.ExitCode,
		Reason:     s.Reason,
		Message:    s.Message,
		LogPath:    s.LogPath,
		User:       containerUserFromCRI(s.GetUser().GetLinux()),
	}
}

// containerUserFromCRI is the reported identity; nil for none.
func containerUserFromCRI(u *runtimeapi.LinuxContainerUser) *runtime.ContainerUser {
	if u == nil {
		return nil
	}
	return &runtime.ContainerUser{UID: u.Uid, GID: u.Gid, SupplementalGroups: slices.Clone(u.SupplementalGroups)}
}

// UpdateContainerResources changes a running container's Linux resources.
func (r *Runtime) UpdateContainerResources(ctx context.Context, id string, res *runtime.Resources) error {
	ctx, cancel := callCtx(ctx, r.timeout)
	defer cancel()
	req := &runtimeapi.UpdateContainerResourcesRequest{ContainerId: id, Linux: resourcesToCRI(res)}
	if _, err := r.rt.UpdateContainerResources(ctx, req); err != nil {
		return wrap(err, "update container resources %s", id)
	}
	return nil
}

// ReopenContainerLog asks the runtime to reopen the container's log file
// (after the caller renamed it: log rotation).
func (r *Runtime) ReopenContainerLog(ctx context.Context, id string) error {
	ctx, cancel := callCtx(ctx, r.timeout)
	defer cancel()
	if _, err := r.rt.ReopenContainerLog(ctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: id}); err != nil {
		return wrap(err, "reopen container log %s", id)
	}
	return nil
}
