package agent

import (
	"errors"
	"fmt"
	"strconv"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/internal/podlogs"
	"github.com/skiffnode/skiff/runtime"
)

// sandboxSpec builds the runtime's sandbox spec for pod, and the DNS
// warning of Config.DNS (none: "").
func (d *workerDeps) sandboxSpec(pod *v1.Pod, attempt uint32) (*runtime.SandboxSpec, string, error) {
	hostname, err := d.env.sandboxHostname(pod)
	if err != nil {
		return nil, "", err
	}
	spec := &runtime.SandboxSpec{
		Name:         pod.Name,
		Namespace:    pod.Namespace,
		UID:          string(pod.UID),
		Attempt:      attempt,
		Hostname:     hostname,
		LogDirectory: podlogs.PodDir(d.podLogsDir, pod.Namespace, pod.Name, string(pod.UID)),
		HostNetwork:  pod.Spec.HostNetwork,
		Labels:       sandboxLabels(pod),
		Annotations:  sandboxAnnotations(pod),
		Privileged:   anyPrivileged(pod),
		Security:     sandboxSecurity(pod),
	}
	if pod.Spec.HostUsers != nil && !*pod.Spec.HostUsers {
		if d.userns == nil {
			return nil, "", errors.New("can't set `spec.hostUsers: false`: this node has no user namespaces")
		}
		m, err := d.userns.Mapping(string(pod.UID))
		if err != nil {
			return nil, "", fmt.Errorf("create user namespace: %w", err)
		}
		spec.Security.UserNamespace = &m
	}
	if d.cgroups != nil {
		spec.CgroupParent = d.cgroups.CgroupParent(pod)
	}
	var dnsWarning string
	if d.env.dns != nil {
		dns, warning, err := d.env.dns(pod)
		if err != nil {
			return nil, "", fmt.Errorf("pod DNS config: %w", err)
		}
		spec.DNS, dnsWarning = dns, warning
	}
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.HostPort == 0 {
				continue
			}
			spec.PortMappings = append(spec.PortMappings, runtime.PortMapping{
				Protocol: string(p.Protocol), ContainerPort: p.ContainerPort, HostPort: p.HostPort, HostIP: p.HostIP,
			})
		}
	}
	return spec, dnsWarning, nil
}

func anyPrivileged(pod *v1.Pod) bool {
	for _, c := range append(append([]v1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...) {
		if c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged {
			return true
		}
	}
	return false
}

// containerSpec builds the runtime's container spec for c, whose resolved
// environment is env (see containerEnv); $(VAR) in command and args is
// expanded with it.
func containerSpec(pod *v1.Pod, c *v1.Container, attempt uint32, image string, env []runtime.KeyValue, init bool, limits containerLimits) (*runtime.ContainerSpec, error) {
	command, args := expandCommandAndArgs(c, env)
	spec := &runtime.ContainerSpec{
		Name:       c.Name,
		Attempt:    attempt,
		Image:      image,
		Command:    command,
		Args:       args,
		WorkingDir: c.WorkingDir,
		Env:        env,
		LogPath:    podlogs.ContainerLogRel(c.Name, int(attempt)),
		Labels:     containerLabels(pod, c.Name),
		Annotations: map[string]string{
			annotationRestartCount: strconv.FormatUint(uint64(attempt), 10),
			annotationInit:         strconv.FormatBool(init),
			annotationHash:         containerHash(c),
			annotationResources:    resourcesAnnotation(c.Resources),
		},
		Stdin:     c.Stdin,
		StdinOnce: c.StdinOnce,
		TTY:       c.TTY,
		Resources: limits.of(c.Resources),
	}
	if sc := c.SecurityContext; sc != nil {
		spec.Privileged = sc.Privileged != nil && *sc.Privileged
		spec.RunAsUser, spec.RunAsGroup = sc.RunAsUser, sc.RunAsGroup
	}
	if psc := pod.Spec.SecurityContext; psc != nil {
		if spec.RunAsUser == nil {
			spec.RunAsUser = psc.RunAsUser
		}
		if spec.RunAsGroup == nil {
			spec.RunAsGroup = psc.RunAsGroup
		}
	}
	return spec, nil
}
