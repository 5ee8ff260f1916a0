package cri

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// CgroupDriver asks the runtime which cgroup driver it uses (CRI
// RuntimeConfig): "systemd" or "cgroupfs", or "" when the runtime does not
// implement the call (containerd before 2.0), so the caller cannot check.
func (r *Runtime) CgroupDriver(ctx context.Context) (string, error) {
	ctx, cancel := callCtx(ctx, r.timeout)
	defer cancel()
	resp, err := r.rt.RuntimeConfig(ctx, &runtimeapi.RuntimeConfigRequest{})
	if status.Code(err) == codes.Unimplemented {
		return "", nil
	}
	if err != nil {
		return "", wrap(err, "runtime config")
	}
	if resp.GetLinux() == nil {
		return "", nil
	}
	if resp.GetLinux().GetCgroupDriver() == runtimeapi.CgroupDriver_CGROUPFS {
		return "cgroupfs", nil
	}
	return "systemd", nil
}
