package agent

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// hostPortsFailure rejects pod when one of its host ports is taken by an
// admitted pod, as the kubelet's predicate admission does with the
// scheduler's NodePorts check: reason NodePorts. nil: no conflict. Pure.
func hostPortsFailure(pod *v1.Pod, admitted []*v1.Pod) *podFailure {
	want := hostPorts(pod)
	if len(want) == 0 {
		return nil
	}
	used := map[hostPort]bool{}
	for _, p := range admitted {
		for _, hp := range hostPorts(p) {
			used[hp] = true
		}
	}
	for _, hp := range want {
		if hp.conflicts(used) {
			return &podFailure{Reason: "NodePorts",
				Message: "Pod was rejected: Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"}
		}
	}
	return nil
}

// listedPods are the pods of admitted a source still lists (the
// kubelet's pod manager holds those): an edited static pod's old version,
// which no source lists any more, holds no host port against the new one,
// as in the kubelet, where the old one is removed before the new one is
// admitted. A pod being deleted through the API still holds its ports.
func listedPods(want map[types.UID]*v1.Pod, admitted []*v1.Pod) []*v1.Pod {
	var out []*v1.Pod
	for _, p := range admitted {
		if _, ok := want[p.UID]; ok {
			out = append(out, p)
		}
	}
	return out
}

// hostPort is a host IP, protocol and port a pod binds, with the
// scheduler's defaults (0.0.0.0, TCP).
type hostPort struct {
	ip, protocol string
	port         int32
}

const anyHostIP = "0.0.0.0"

// conflicts is the scheduler's HostPortInfo.CheckConflict: 0.0.0.0 takes
// the protocol and port on every IP.
func (h hostPort) conflicts(used map[hostPort]bool) bool {
	if h.ip == anyHostIP {
		for u := range used {
			if u.protocol == h.protocol && u.port == h.port {
				return true
			}
		}
		return false
	}
	return used[h] || used[hostPort{anyHostIP, h.protocol, h.port}]
}

// hostPorts are the host ports of pod's containers and sidecars (init
// containers that run as long as the pod), as the scheduler's
// GetHostPorts.
func hostPorts(pod *v1.Pod) []hostPort {
	var out []hostPort
	add := func(c *v1.Container) {
		for _, p := range c.Ports {
			if p.HostPort <= 0 {
				continue
			}
			hp := hostPort{ip: p.HostIP, protocol: string(p.Protocol), port: p.HostPort}
			if hp.ip == "" {
				hp.ip = anyHostIP
			}
			if hp.protocol == "" {
				hp.protocol = string(v1.ProtocolTCP)
			}
			out = append(out, hp)
		}
	}
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			add(c)
		}
	}
	for i := range pod.Spec.Containers {
		add(&pod.Spec.Containers[i])
	}
	return out
}
