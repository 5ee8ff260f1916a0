package cri

import (
	"context"
	"fmt"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/skiffnode/skiff/runtime"
)

// RunSandbox creates and starts a sandbox. CNI setup and the pause image make
// it slow, so it gets twice the per-call timeout, like the kubelet.
func (r *Runtime) RunSandbox(ctx context.Context, spec *runtime.SandboxSpec) (string, error) {
	ctx, cancel := callCtx(ctx, 2*r.timeout)
	defer cancel()
	cfg, group := sandboxConfig(spec), ""
	if r.groups != nil {
		group = r.groups.next(spec.RuntimeHandler)
		setGroup(cfg, group)
	}
	resp, err := r.rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{
		Config:         cfg,
		RuntimeHandler: spec.RuntimeHandler,
	})
	if err != nil {
		return "", wrap(err, "run sandbox for pod %s/%s", spec.Namespace, spec.Name)
	}
	if resp.PodSandboxId == "" {
		return "", fmt.Errorf("run sandbox for pod %s/%s: runtime returned no sandbox ID", spec.Namespace, spec.Name)
	}
	if r.groups != nil {
		r.groups.record(resp.PodSandboxId, group)
	}
	return resp.PodSandboxId, nil
}

// StopSandbox stops the sandbox's containers and tears down its network.
// Idempotent: a missing sandbox is not an error.
func (r *Runtime) StopSandbox(ctx context.Context, id string) error {
	ctx, cancel := callCtx(ctx, r.timeout)
	defer cancel()
	_, err := r.rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id})
	if err != nil && !isNotFound(err) {
		return wrap(err, "stop sandbox %s", id)
	}
	return nil
}

// RemoveSandbox removes the sandbox and its containers. Idempotent.
func (r *Runtime) RemoveSandbox(ctx context.Context, id string) error {
	ctx, cancel := callCtx(ctx, r.timeout)
	defer cancel()
	_, err := r.rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id})
	if err != nil && !isNotFound(err) {
		return wrap(err, "remove sandbox %s", id)
	}
	if r.groups != nil {
		r.groups.forget(id)
	}
	return nil
}

// SandboxStatus returns the sandbox's state and IPs; a missing sandbox gives
// an error wrapping runtime.ErrNotFound.
func (r *Runtime) SandboxStatus(ctx context.Context, id string) (*runtime.SandboxStatus, error) {
	ctx, cancel := callCtx(ctx, r.timeout)
	defer cancel()
	resp, err := r.rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id})
	if err != nil {
		return nil, wrap(err, "sandbox status %s", id)
	}
	if resp.Status == nil {
		return nil, fmt.Errorf("sandbox status %s: %w", id, runtime.ErrNotFound)
	}
	return sandboxStatusFromCRI(resp.Status), nil
}

// ListSandboxes lists sandboxes whose labels include labels (nil: all).
func (r *Runtime) ListSandboxes(ctx context.Context, labels map[string]string) ([]*runtime.Sandbox, error) {
	ctx, cancel := callCtx(ctx, r.timeout)
	defer cancel()
	resp, err := r.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{
		Filter: &runtimeapi.PodSandboxFilter{LabelSelector: labels},
	})
	if err != nil {
		return nil, wrap(err, "list sandboxes")
	}
	out := make([]*runtime.Sandbox, 0, len(resp.Items))
	for _, s := range resp.Items {
		out = append(out, sandboxFromCRI(s))
	}
	return out, nil
}

// networkMode is the CRI network namespace mode of a sandbox.
func networkMode(spec *runtime.SandboxSpec) runtimeapi.NamespaceMode {
	if spec.HostNetwork {
		return runtimeapi.NamespaceMode_NODE
	}
	return runtimeapi.NamespaceMode_POD
}

// namespaceOptions are the sandbox's namespaces as the kubelet sets them:
// without hostPID, hostIPC or shareProcessNamespace, its own PID namespace
// per container, the pod's IPC namespace, the pod's or the node's network.
func namespaceOptions(spec *runtime.SandboxSpec) *runtimeapi.NamespaceOption {
	return &runtimeapi.NamespaceOption{
		Network:       networkMode(spec),
		Pid:           pidMode(spec.Security),
		Ipc:           ipcMode(spec.Security),
		UsernsOptions: usernsOptions(spec.Security),
	}
}

// usernsOptions is the pod's own user namespace (mode POD) when the
// sandbox has one; nil keeps the node's (the runtime's default, NODE).
func usernsOptions(sec *runtime.SandboxSecurity) *runtimeapi.UserNamespace {
	if sec == nil || sec.UserNamespace == nil {
		return nil
	}
	ids := idMappings(sec.UserNamespace)
	return &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: ids, Gids: ids}
}

// idMappings is m as CRI's one-line mapping list.
func idMappings(m *runtime.IDMapping) []*runtimeapi.IDMapping {
	return []*runtimeapi.IDMapping{{HostId: m.HostID, ContainerId: m.ContainerID, Length: m.Length}}
}

// sandboxConfig maps a SandboxSpec to CRI. CreateContainer must send the
// same config again, so this is deterministic.
func sandboxConfig(spec *runtime.SandboxSpec) *runtimeapi.PodSandboxConfig {
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{
			Name:      spec.Name,
			Namespace: spec.Namespace,
			Uid:       spec.UID,
			Attempt:   spec.Attempt,
		},
		LogDirectory: spec.LogDirectory,
		Labels:       spec.Labels,
		Annotations:  spec.Annotations,
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			CgroupParent: spec.CgroupParent,
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: namespaceOptions(spec),
				Privileged:       spec.Privileged,
			},
		},
	}
	applySandboxSecurity(cfg.Linux, spec.Security)
	if !spec.HostNetwork {
		// Like the kubelet: a host-network pod keeps the node's hostname.
		cfg.Hostname = spec.Hostname
	}
	if spec.DNS != nil {
		cfg.DnsConfig = &runtimeapi.DNSConfig{
			Servers:  spec.DNS.Servers,
			Searches: spec.DNS.Searches,
			Options:  spec.DNS.Options,
		}
	}
	for _, pm := range spec.PortMappings {
		cfg.PortMappings = append(cfg.PortMappings, &runtimeapi.PortMapping{
			Protocol:      protocolToCRI(pm.Protocol),
			ContainerPort: pm.ContainerPort,
			HostPort:      pm.HostPort,
			HostIp:        pm.HostIP,
		})
	}
	return cfg
}

// protocolToCRI maps "TCP", "UDP", "SCTP" (any case); "" and unknown
// protocols are TCP, the Kubernetes default.
func protocolToCRI(p string) runtimeapi.Protocol {
	switch strings.ToUpper(p) {
	case "UDP":
		return runtimeapi.Protocol_UDP
	case "SCTP":
		return runtimeapi.Protocol_SCTP
	default:
		return runtimeapi.Protocol_TCP
	}
}

func sandboxStateFromCRI(s runtimeapi.PodSandboxState) runtime.SandboxState {
	if s == runtimeapi.PodSandboxState_SANDBOX_READY {
		return runtime.SandboxReady
	}
	return runtime.SandboxNotReady
}

func sandboxFromCRI(s *runtimeapi.PodSandbox) *runtime.Sandbox {
	md := s.GetMetadata()
	return &runtime.Sandbox{
		ID:          s.Id,
		Name:        md.GetName(),
		Namespace:   md.GetNamespace(),
		UID:         md.GetUid(),
		Attempt:     md.GetAttempt(),
		State:       sandboxStateFromCRI(s.State),
		CreatedAt:   timeFromNanos(s.CreatedAt),
		Labels:      s.Labels,
		Annotations: s.Annotations,
	}
}

// sandboxStatusFromCRI is sandboxFromCRI of the status's sandbox fields,
// with the network.
func sandboxStatusFromCRI(s *runtimeapi.PodSandboxStatus) *runtime.SandboxStatus {
	sb := sandboxFromCRI(&runtimeapi.PodSandbox{
		Id: s.Id, Metadata: s.Metadata, State: s.State, CreatedAt: s.CreatedAt, Labels: s.Labels, Annotations: s.Annotations,
	})
	st := &runtime.SandboxStatus{
		Sandbox:     *sb,
		IP:          s.GetNetwork().GetIp(),
		HostNetwork: s.GetLinux().GetNamespaces().GetOptions().GetNetwork() == runtimeapi.NamespaceMode_NODE,
	}
	for _, ip := range s.GetNetwork().GetAdditionalIps() {
		if ip.GetIp() != "" {
			st.AdditionalIPs = append(st.AdditionalIPs, ip.GetIp())
		}
	}
	return st
}
