package cri

import (
	"context"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/skiffnode/skiff/runtime"
)

var _ runtime.Streamer = (*Runtime)(nil)

// Exec asks the runtime's streaming server for an exec session (CRI Exec)
// and returns its URL.
func (r *Runtime) Exec(ctx context.Context, containerID string, cmd []string, tty, stdin, stdout, stderr bool) (string, error) {
	ctx, cancel := callCtx(ctx, r.timeout)
	defer cancel()
	resp, err := r.rt.Exec(ctx, &runtimeapi.ExecRequest{
		ContainerId: containerID, Cmd: cmd, Tty: tty, Stdin: stdin, Stdout: stdout, Stderr: stderr,
	})
	if err != nil {
		return "", wrap(err, "exec in container %s", containerID)
	}
	return streamURL(resp.Url, "exec in container", containerID)
}

// Attach asks the runtime's streaming server for an attach session (CRI
// Attach) and returns its URL.
func (r *Runtime) Attach(ctx context.Context, containerID string, tty, stdin, stdout, stderr bool) (string, error) {
	ctx, cancel := callCtx(ctx, r.timeout)
	defer cancel()
	resp, err := r.rt.Attach(ctx, &runtimeapi.AttachRequest{
		ContainerId: containerID, Tty: tty, Stdin: stdin, Stdout: stdout, Stderr: stderr,
	})
	if err != nil {
		return "", wrap(err, "attach to container %s", containerID)
	}
	return streamURL(resp.Url, "attach to container", containerID)
}

// PortForward asks the runtime's streaming server for a port-forward
// session into the sandbox (CRI PortForward) and returns its URL.
func (r *Runtime) PortForward(ctx context.Context, sandboxID string, ports []int32) (string, error) {
	ctx, cancel := callCtx(ctx, r.timeout)
	defer cancel()
	resp, err := r.rt.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: sandboxID, Port: ports})
	if err != nil {
		return "", wrap(err, "port-forward to sandbox %s", sandboxID)
	}
	return streamURL(resp.Url, "port-forward to sandbox", sandboxID)
}

// streamURL checks that the runtime returned a URL (as the kubelet's CRI
// client does).
func streamURL(u, what, id string) (string, error) {
	if u == "" {
		return "", fmt.Errorf("%s %s: runtime returned no streaming URL", what, id)
	}
	return u, nil
}
