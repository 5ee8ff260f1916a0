package agent

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffnode/skiff/internal/downward"
	"github.com/skiffnode/skiff/internal/expansion"
	"github.com/skiffnode/skiff/internal/objects"
	"github.com/skiffnode/skiff/runtime"
)

// envInput is what a container's environment is made of.
type envInput struct {
	Pod       *v1.Pod
	Container *v1.Container
	// PodIPs are the pod's IPs, primary first (for a host-network pod the
	// node's); HostIPs the node's.
	PodIPs, HostIPs []string
	// Objects holds the ConfigMaps and Secrets; nil: none exist.
	Objects objects.Getter
	// Allocatable is the node's; resourceFieldRef limits that are unset
	// read it (G.9).
	Allocatable v1.ResourceList
	// ServiceEnv are the service variables the pod gets (G.4, see
	// ServiceEnv); nil: none.
	ServiceEnv []v1.EnvVar
	// VolumePaths are the host paths of the pod's volumes by name, for
	// fileKeyRef (envfile.go); nil: none set up.
	VolumePaths map[string]string
}

// configError is a container configuration problem found before the
// container is created (a missing ConfigMap, Secret or key): the kubelet's
// CreateContainerConfigError. Its message is the cause's, unwrapped, as
// the kubelet shows it.
type configError struct{ err error }

func (e *configError) Error() string { return e.err.Error() }
func (e *configError) Unwrap() error { return e.err }

// startFailureReason is the Waiting reason of a container that failed to
// start with err.
func startFailureReason(err error) string {
	var ce *configError
	if errors.As(err, &ce) {
		return reasonCreateContainerConfigError
	}
	return "RunContainerError"
}

// podEnv is what the node tells its pods: its IPs, DNS and hosts file, the
// cluster domain, the objects and services pods may refer to, and its
// allocatable resources. Read only once the agent is built; safe for
// concurrent use.
type podEnv struct {
	hostIPs []string
	// dns: Config.DNS (nil: the runtime's default resolv.conf).
	dns func(*v1.Pod) (*runtime.DNSConfig, string, error)
	// objects: the ConfigMaps and Secrets pods may reference; nil: none.
	objects objects.Getter
	// allocatable: the node's (Config.Allocatable), for resourceFieldRef.
	allocatable v1.ResourceList
	// clusterDomain: Config.ClusterDomain; nodeHostsFile: the node's
	// hosts file ("": /etc/hosts), the base of host-network pods' one.
	clusterDomain, nodeHostsFile string
	// services: Config.Services (nil: no service variables).
	services ServiceEnv
}

// envFor resolves c's environment (see containerEnv) for pod in sandbox
// sb (nil: not known yet). Errors are *configError.
func (d *podEnv) envFor(pod *v1.Pod, c *v1.Container, sb *runtime.SandboxStatus, volumePaths map[string]string) ([]runtime.KeyValue, error) {
	podIPs := d.hostIPs
	if !pod.Spec.HostNetwork && sb != nil && sb.IP != "" {
		podIPs = append([]string{sb.IP}, sb.AdditionalIPs...)
	}
	svcEnv, err := d.serviceEnvFor(pod)
	if err != nil {
		return nil, &configError{err}
	}
	env, err := containerEnv(envInput{
		Pod: pod, Container: c, PodIPs: podIPs, HostIPs: d.hostIPs,
		Objects: d.objects, Allocatable: d.allocatable, ServiceEnv: svcEnv, VolumePaths: volumePaths,
	})
	if err != nil {
		return nil, &configError{err}
	}
	return env, nil
}

// ServiceEnv gives pods their service environment variables (G.4): those
// of the kubernetes service of the default namespace and, with
// enableServiceLinks, of the pod namespace's services
// (apisource.ServiceEnv). Safe for concurrent use; does not block.
type ServiceEnv interface {
	// ServiceEnv returns the variables for a pod in namespace. It fails
	// while the services were never read (the kubelet's "services have not
	// yet been read at least once").
	ServiceEnv(namespace string, links bool) ([]v1.EnvVar, error)
}

// serviceEnvFor is pod's service variables (nil without a ServiceEnv). A
// pod that is not an API pod (a static pod) gets none rather than wait
// while the services were never read: a node's control plane may run as
// static pods before the API server answers.
func (d *podEnv) serviceEnvFor(pod *v1.Pod) ([]v1.EnvVar, error) {
	if d.services == nil {
		return nil, nil
	}
	links := pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
	env, err := d.services.ServiceEnv(pod.Namespace, links)
	if err != nil && pod.Annotations[configSourceAnnotation] != "api" {
		return nil, nil
	}
	return env, err
}

// containerEnv builds a container's environment as the kubelet's
// makeEnvironmentVariables does (G.3, G.6, G.8, G.9): envFrom sources in
// order, then env entries in order, a later definition of a name replacing
// an earlier one; a value is expanded ($(VAR), see package expansion)
// against the names defined before it; valueFrom resolves ConfigMap and
// Secret keys, pod fields and container resources. A missing object or key
// is an error with the kubelet's message (the container then waits with
// CreateContainerConfigError) unless the reference is optional, in which
// case the entry is skipped.
//
// Every ConfigMap and Secret key is a valid (relaxed, as of Kubernetes
// 1.34) variable name, so the kubelet skips none; neither does skiff.
// Service variables (G.4) may be referenced by $(VAR) and follow the
// container's own, except those it defines.
//
// Variables come out in the order of their first definition, the service
// variables last; the result is deterministic. Pure apart from reading
// in.Objects.
func containerEnv(in envInput) ([]runtime.KeyValue, error) {
	env := newEnvList()
	r := &envResolver{in: in, configMaps: map[string]*v1.ConfigMap{}, secrets: map[string]*v1.Secret{}}
	for _, from := range in.Container.EnvFrom {
		if err := r.addEnvFrom(env, from); err != nil {
			return nil, err
		}
	}
	services := make(map[string]string, len(in.ServiceEnv))
	for _, e := range in.ServiceEnv {
		services[e.Name] = e.Value
	}
	mapping := expansion.MappingFor(env.values, services)
	for _, e := range in.Container.Env {
		value := e.Value
		if value != "" {
			value = expansion.Expand(value, mapping)
		} else if e.ValueFrom != nil {
			v, ok, err := r.valueFrom(e.ValueFrom)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue // an optional reference to a missing object or key
			}
			value = v
		}
		env.set(e.Name, value)
	}
	for _, e := range in.ServiceEnv {
		if _, defined := env.values[e.Name]; !defined {
			env.set(e.Name, e.Value)
		}
	}
	return env.list(), nil
}

// expandCommandAndArgs expands $(VAR) in c's command and args with env, as
// the kubelet's ExpandContainerCommandAndArgs (nil stays nil).
func expandCommandAndArgs(c *v1.Container, env []runtime.KeyValue) (command, args []string) {
	vars := make(map[string]string, len(env))
	for _, kv := range env {
		vars[kv.Key] = kv.Value
	}
	mapping := expansion.MappingFor(vars)
	for _, s := range c.Command {
		command = append(command, expansion.Expand(s, mapping))
	}
	for _, s := range c.Args {
		args = append(args, expansion.Expand(s, mapping))
	}
	return command, args
}

// envList is an ordered map of variables.
type envList struct {
	names  []string
	values map[string]string
}

func newEnvList() *envList { return &envList{values: map[string]string{}} }

func (l *envList) set(name, value string) {
	if _, ok := l.values[name]; !ok {
		l.names = append(l.names, name)
	}
	l.values[name] = value
}

func (l *envList) list() []runtime.KeyValue {
	out := make([]runtime.KeyValue, len(l.names))
	for i, n := range l.names {
		out[i] = runtime.KeyValue{Key: n, Value: l.values[n]}
	}
	return out
}

// envResolver reads the objects of one container's environment, each once.
type envResolver struct {
	in         envInput
	configMaps map[string]*v1.ConfigMap
	secrets    map[string]*v1.Secret
}

// addEnvFrom adds every key of one envFrom source, prefixed, in key order.
func (r *envResolver) addEnvFrom(env *envList, from v1.EnvFromSource) error {
	switch {
	case from.ConfigMapRef != nil:
		cm, err := r.configMap(from.ConfigMapRef.Name, from.ConfigMapRef.Optional)
		if err != nil || cm == nil {
			return err
		}
		for _, k := range slices.Sorted(maps.Keys(cm.Data)) {
			env.set(from.Prefix+k, cm.Data[k])
		}
	case from.SecretRef != nil:
		s, err := r.secret(from.SecretRef.Name, from.SecretRef.Optional)
		if err != nil || s == nil {
			return err
		}
		for _, k := range slices.Sorted(maps.Keys(s.Data)) {
			env.set(from.Prefix+k, string(s.Data[k]))
		}
	}
	return nil
}

// valueFrom resolves one env entry's source; ok is false when an optional
// object or key is missing.
func (r *envResolver) valueFrom(src *v1.EnvVarSource) (value string, ok bool, err error) {
	ns := r.in.Pod.Namespace
	switch {
	case src.FieldRef != nil:
		v, err := downward.FieldValue(r.in.Pod, src.FieldRef.FieldPath, r.in.PodIPs, r.in.HostIPs)
		return v, err == nil, err
	case src.ResourceFieldRef != nil:
		v, err := resourceValue(src.ResourceFieldRef, r.in.Pod, r.in.Container, r.in.Allocatable)
		return v, err == nil, err
	case src.ConfigMapKeyRef != nil:
		ref := src.ConfigMapKeyRef
		cm, err := r.configMap(ref.Name, ref.Optional)
		if err != nil || cm == nil {
			return "", false, err
		}
		if v, found := cm.Data[ref.Key]; found {
			return v, true, nil
		}
		if isTrue(ref.Optional) {
			return "", false, nil
		}
		return "", false, fmt.Errorf("couldn't find key %v in ConfigMap %v/%v", ref.Key, ns, ref.Name)
	case src.FileKeyRef != nil:
		return fileKeyValue(src.FileKeyRef, r.in.VolumePaths)
	case src.SecretKeyRef != nil:
		ref := src.SecretKeyRef
		s, err := r.secret(ref.Name, ref.Optional)
		if err != nil || s == nil {
			return "", false, err
		}
		if v, found := s.Data[ref.Key]; found {
			return string(v), true, nil
		}
		if isTrue(ref.Optional) {
			return "", false, nil
		}
		return "", false, fmt.Errorf("couldn't find key %v in Secret %v/%v", ref.Key, ns, ref.Name)
	}
	return "", false, errors.New("env valueFrom: no source set")
}

// configMap returns the pod-namespace ConfigMap name; nil, nil when it is
// missing and optional. The error for a missing one is the kubelet's.
func (r *envResolver) configMap(name string, optional *bool) (*v1.ConfigMap, error) {
	if cm, ok := r.configMaps[name]; ok {
		return cm, nil
	}
	var cm *v1.ConfigMap
	if r.in.Objects != nil {
		var gerr error
		if cm, gerr = r.in.Objects.ConfigMap(r.in.Pod.Namespace, name); gerr != nil && !errors.Is(gerr, objects.ErrNotFound) {
			return nil, gerr
		}
	}
	if cm == nil {
		if isTrue(optional) {
			return nil, nil
		}
		return nil, fmt.Errorf("configmap %q not found", name)
	}
	r.configMaps[name] = cm
	return cm, nil
}

// secret is configMap for Secrets.
func (r *envResolver) secret(name string, optional *bool) (*v1.Secret, error) {
	if s, ok := r.secrets[name]; ok {
		return s, nil
	}
	var s *v1.Secret
	if r.in.Objects != nil {
		var gerr error
		if s, gerr = r.in.Objects.Secret(r.in.Pod.Namespace, name); gerr != nil && !errors.Is(gerr, objects.ErrNotFound) {
			return nil, gerr
		}
	}
	if s == nil {
		if isTrue(optional) {
			return nil, nil
		}
		return nil, fmt.Errorf("secret %q not found", name)
	}
	r.secrets[name] = s
	return s, nil
}

// resourceValue resolves a resourceFieldRef (G.8, G.9) as the kubelet:
// the container's (or containerName's) limit or request, divided by the
// divisor (default 1) and rounded up; an unset or zero cpu, memory or
// ephemeral-storage limit of an app container reads the node's
// allocatable. (The kubelet fills those limits for app containers only, so
// a containerName naming an init container does not fall back, nor does
// skiff.)
func resourceValue(fs *v1.ResourceFieldSelector, pod *v1.Pod, c *v1.Container, allocatable v1.ResourceList) (string, error) {
	if fs.ContainerName != "" {
		found, isApp := downward.FindContainer(pod, fs.ContainerName)
		if found == nil {
			return "", fmt.Errorf("container %s not found", fs.ContainerName)
		}
		if c = found; !isApp {
			allocatable = nil
		}
	}
	return downward.ResourceValue(fs, c, allocatable)
}

func isTrue(b *bool) bool { return b != nil && *b }
