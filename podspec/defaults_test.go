package podspec

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestSetDefaultsPod checks the pod-level defaults (A.55).
func TestSetDefaultsPod(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox"}}}}
	SetDefaults(pod)
	s := pod.Spec
	checks := []struct {
		name      string
		got, want any
	}{
		{"metadata.namespace", pod.Namespace, "default"},
		{"spec.restartPolicy", s.RestartPolicy, v1.RestartPolicyAlways},
		{"spec.terminationGracePeriodSeconds", *s.TerminationGracePeriodSeconds, int64(30)},
		{"spec.dnsPolicy", s.DNSPolicy, v1.DNSClusterFirst},
		{"spec.schedulerName", s.SchedulerName, "default-scheduler"},
		{"spec.securityContext is {}", isSet(reflect.ValueOf(s.SecurityContext)) || s.SecurityContext == nil, false},
		{"spec.enableServiceLinks", *s.EnableServiceLinks, true},
		{"containers[0].terminationMessagePath", s.Containers[0].TerminationMessagePath, "/dev/termination-log"},
		{"containers[0].terminationMessagePolicy", s.Containers[0].TerminationMessagePolicy, v1.TerminationMessageReadFile},
		{"containers[0].imagePullPolicy", s.Containers[0].ImagePullPolicy, v1.PullAlways},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

// TestSetDefaultsKeepsSetValues: defaults never override explicit values.
func TestSetDefaultsKeepsSetValues(t *testing.T) {
	grace, links := int64(0), false
	pod := &v1.Pod{Spec: v1.PodSpec{
		RestartPolicy: v1.RestartPolicyNever, DNSPolicy: v1.DNSDefault, SchedulerName: "other",
		TerminationGracePeriodSeconds: &grace, EnableServiceLinks: &links,
		Containers: []v1.Container{{
			Name: "c", Image: "busybox", ImagePullPolicy: v1.PullNever,
			TerminationMessagePath: "/x", TerminationMessagePolicy: v1.TerminationMessageFallbackToLogsOnError,
			Ports: []v1.ContainerPort{{ContainerPort: 53, Protocol: v1.ProtocolUDP}},
		}},
	}}
	pod.Namespace = "kube-system"
	want := pod.DeepCopy()
	SetDefaults(pod)
	want.Spec.SecurityContext = &v1.PodSecurityContext{}
	if !apiequality.Semantic.DeepEqual(pod, want) {
		t.Errorf("SetDefaults changed explicit values:\n got %+v\nwant %+v", pod.Spec, want.Spec)
	}
}

// TestDefaultPullPolicy checks upstream's tag rule.
func TestDefaultPullPolicy(t *testing.T) {
	digest := "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	tests := []struct {
		image string
		want  v1.PullPolicy
	}{
		{"busybox", v1.PullAlways},
		{"busybox:latest", v1.PullAlways},
		{"busybox:1.36", v1.PullIfNotPresent},
		{"docker.io/library/busybox", v1.PullAlways},
		{"localhost:5000/busybox", v1.PullAlways},
		{"localhost:5000/busybox:1", v1.PullIfNotPresent},
		{"localhost:5000/busybox:latest", v1.PullAlways},
		{"busybox" + digest, v1.PullIfNotPresent},
		{"localhost:5000/busybox" + digest, v1.PullIfNotPresent},
		{"busybox:1.36" + digest, v1.PullIfNotPresent},
		{"busybox:latest" + digest, v1.PullAlways},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			if got := defaultPullPolicy(tt.image); got != tt.want {
				t.Errorf("defaultPullPolicy(%q) = %s, want %s", tt.image, got, tt.want)
			}
		})
	}
}

// TestSetDefaultsContainers covers ports, resources, env and probes (B.15),
// for init and app containers.
func TestSetDefaultsContainers(t *testing.T) {
	probe := func() *v1.Probe {
		return &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromInt32(80)}}}
	}
	mk := func() v1.Container {
		return v1.Container{
			Name: "c", Image: "busybox:1",
			Ports: []v1.ContainerPort{{ContainerPort: 80}, {ContainerPort: 81, HostPort: 9000}},
			Env:   []v1.EnvVar{{Name: "N", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
			Resources: v1.ResourceRequirements{
				Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("0.0001"), v1.ResourceMemory: resource.MustParse("1Gi")},
				Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("100Mi")},
			},
			LivenessProbe: probe(), ReadinessProbe: probe(), StartupProbe: probe(),
			Lifecycle: &v1.Lifecycle{PreStop: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromInt32(80)}}},
		}
	}
	for _, hostNetwork := range []bool{false, true} {
		pod := &v1.Pod{Spec: v1.PodSpec{HostNetwork: hostNetwork, InitContainers: []v1.Container{mk()}, Containers: []v1.Container{mk()}}}
		SetDefaults(pod)
		for _, c := range []v1.Container{pod.Spec.InitContainers[0], pod.Spec.Containers[0]} {
			if c.ImagePullPolicy != v1.PullIfNotPresent {
				t.Errorf("imagePullPolicy = %s, want IfNotPresent", c.ImagePullPolicy)
			}
			if c.Ports[0].Protocol != v1.ProtocolTCP {
				t.Errorf("ports[0].protocol = %q, want TCP", c.Ports[0].Protocol)
			}
			wantHostPort := int32(0)
			if hostNetwork {
				wantHostPort = 80
			}
			if c.Ports[0].HostPort != wantHostPort || c.Ports[1].HostPort != 9000 {
				t.Errorf("hostNetwork=%v: hostPorts = %d,%d, want %d,9000", hostNetwork, c.Ports[0].HostPort, c.Ports[1].HostPort, wantHostPort)
			}
			if got := c.Env[0].ValueFrom.FieldRef.APIVersion; got != "v1" {
				t.Errorf("fieldRef.apiVersion = %q, want v1", got)
			}
			if got := c.Resources.Requests[v1.ResourceCPU]; got.String() != "1m" {
				t.Errorf("requests.cpu = %s, want 1m (limit rounded up to milli and copied)", got.String())
			}
			if got := c.Resources.Requests[v1.ResourceMemory]; got.String() != "100Mi" {
				t.Errorf("requests.memory = %s, want the explicit 100Mi", got.String())
			}
			for _, p := range []*v1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
				if p.TimeoutSeconds != 1 || p.PeriodSeconds != 10 || p.SuccessThreshold != 1 || p.FailureThreshold != 3 {
					t.Errorf("probe defaults = %d/%d/%d/%d, want 1/10/1/3", p.TimeoutSeconds, p.PeriodSeconds, p.SuccessThreshold, p.FailureThreshold)
				}
				if p.InitialDelaySeconds != 0 || p.HTTPGet.Path != "/" || p.HTTPGet.Scheme != v1.URISchemeHTTP {
					t.Errorf("httpGet defaults = %q %q, want / HTTP", p.HTTPGet.Path, p.HTTPGet.Scheme)
				}
			}
			if h := c.Lifecycle.PreStop.HTTPGet; h.Path != "/" || h.Scheme != v1.URISchemeHTTP {
				t.Errorf("preStop httpGet defaults = %q %q, want / HTTP", h.Path, h.Scheme)
			}
		}
		again := pod.DeepCopy()
		SetDefaults(again)
		if !apiequality.Semantic.DeepEqual(pod, again) {
			t.Errorf("SetDefaults is not idempotent")
		}
	}
}

func TestSetDefaultsNil(t *testing.T) {
	SetDefaults(nil) // must not panic
}
