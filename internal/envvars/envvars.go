// Package envvars computes the service environment variables the kubelet
// gives containers (G.4): {NAME}_SERVICE_HOST, {NAME}_SERVICE_PORT[_{PORT}]
// and the Docker link variables {NAME}_PORT..., for the kubernetes service
// of the default namespace and, with enableServiceLinks, the services of
// the pod's namespace. Pure.
package envvars

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Select returns the services whose variables a pod in namespace gets, as
// the kubelet's getServiceEnvVarMap: the kubernetes service of the default
// namespace always, and with links every service of namespace (one of the
// namespace's named "kubernetes" wins over the default one's), each with a
// cluster IP. Sorted by name.
func Select(all []*v1.Service, namespace string, links bool) []*v1.Service {
	byName := map[string]*v1.Service{}
	for _, s := range all {
		if !ipSet(s) {
			continue
		}
		switch {
		case s.Namespace == namespace && links:
			byName[s.Name] = s
		case s.Namespace == v1.NamespaceDefault && s.Name == "kubernetes":
			if _, ok := byName[s.Name]; !ok {
				byName[s.Name] = s
			}
		}
	}
	out := make([]*v1.Service, 0, len(byName))
	for _, s := range byName {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ipSet reports whether s has a cluster IP (not headless, not unset).
func ipSet(s *v1.Service) bool {
	return s.Spec.ClusterIP != "" && s.Spec.ClusterIP != v1.ClusterIPNone
}

// FromServices returns the variables of services, in the kubelet's order
// (envvars.FromServices).
func FromServices(services []*v1.Service) []v1.EnvVar {
	var out []v1.EnvVar
	for _, s := range services {
		if !ipSet(s) || len(s.Spec.Ports) == 0 {
			continue
		}
		prefix := name(s.Name)
		out = append(out, v1.EnvVar{Name: prefix + "_SERVICE_HOST", Value: s.Spec.ClusterIP})
		port := prefix + "_SERVICE_PORT"
		out = append(out, v1.EnvVar{Name: port, Value: strconv.Itoa(int(s.Spec.Ports[0].Port))})
		for _, sp := range s.Spec.Ports {
			if sp.Name != "" {
				out = append(out, v1.EnvVar{Name: port + "_" + name(sp.Name), Value: strconv.Itoa(int(sp.Port))})
			}
		}
		out = append(out, links(s, prefix)...)
	}
	return out
}

// links are the Docker link variables of s.
func links(s *v1.Service, prefix string) []v1.EnvVar {
	var out []v1.EnvVar
	for i, sp := range s.Spec.Ports {
		proto := string(v1.ProtocolTCP)
		if sp.Protocol != "" {
			proto = string(sp.Protocol)
		}
		lower := strings.ToLower(proto)
		url := lower + "://" + net.JoinHostPort(s.Spec.ClusterIP, strconv.Itoa(int(sp.Port)))
		if i == 0 {
			out = append(out, v1.EnvVar{Name: prefix + "_PORT", Value: url})
		}
		pp := fmt.Sprintf("%s_PORT_%d_%s", prefix, sp.Port, strings.ToUpper(proto))
		out = append(out,
			v1.EnvVar{Name: pp, Value: url},
			v1.EnvVar{Name: pp + "_PROTO", Value: lower},
			v1.EnvVar{Name: pp + "_PORT", Value: strconv.Itoa(int(sp.Port))},
			v1.EnvVar{Name: pp + "_ADDR", Value: s.Spec.ClusterIP})
	}
	return out
}

// name is a service or port name as a variable name: upper case, '-' as
// '_'.
func name(s string) string { return strings.ToUpper(strings.ReplaceAll(s, "-", "_")) }
