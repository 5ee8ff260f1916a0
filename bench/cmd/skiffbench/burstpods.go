package main

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Ports the test server listens on with its default flags.
const (
	testserverHTTPPort = 8080
	testserverTCPPort  = 8081
	testserverGRPCPort = 8082
)

// burstPod is one pod of the burst scenario: a short name (the manifest
// gets the agent's prefix), what it covers, and its spec.
type burstPod struct {
	name, covers string
	spec         func() v1.PodSpec
}

// burstPods are the burst scenario's 12 different pods, in report order.
// Every pod's containers exit on SIGTERM except the crash loop and the OOM
// pod, which are not running most of the time anyway.
func burstPods() []burstPod {
	return []burstPod{
		{"init2", "two init containers, then the app", func() v1.PodSpec {
			return v1.PodSpec{InitContainers: []v1.Container{busybox("init-a", "true"), busybox("init-b", "true")},
				Containers: []v1.Container{sleeperC("app")}}
		}},
		{"exec", "exec readiness probe", func() v1.PodSpec {
			c := sleeperC("app")
			c.ReadinessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}, PeriodSeconds: 10}
			return v1.PodSpec{Containers: []v1.Container{c}}
		}},
		{"http", "httpGet readiness probe (testserver /healthz)", func() v1.PodSpec {
			c := testserverC()
			c.ReadinessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(testserverHTTPPort)}}, PeriodSeconds: 10}
			return v1.PodSpec{Containers: []v1.Container{c}}
		}},
		{"tcp", "tcpSocket liveness probe (testserver)", func() v1.PodSpec {
			c := testserverC()
			c.LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(testserverTCPPort)}}, PeriodSeconds: 10}
			return v1.PodSpec{Containers: []v1.Container{c}}
		}},
		{"grpc", "grpc readiness probe (testserver grpc.health.v1)", func() v1.PodSpec {
			c := testserverC()
			c.ReadinessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: testserverGRPCPort}}, PeriodSeconds: 10}
			return v1.PodSpec{Containers: []v1.Container{c}}
		}},
		{"startup", "exec startup probe, then exec liveness", func() v1.PodSpec {
			c := sleeperC("app")
			c.StartupProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}, PeriodSeconds: 1}
			c.LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}, PeriodSeconds: 10}
			return v1.PodSpec{Containers: []v1.Container{c}}
		}},
		{"crash", "crash loop: the app exits 1 at once", func() v1.PodSpec {
			return v1.PodSpec{RestartPolicy: v1.RestartPolicyAlways, Containers: []v1.Container{busybox("app", "sh", "-c", "exit 1")}}
		}},
		{"oom", "OOM: 8Mi memory limit, tail /dev/zero allocates past it", func() v1.PodSpec {
			c := busybox("app", "tail", "/dev/zero")
			c.Resources.Limits = v1.ResourceList{v1.ResourceMemory: resource.MustParse("8Mi")}
			return v1.PodSpec{Containers: []v1.Container{c}}
		}},
		{"sidecar", "sidecar: restartable init container (restartPolicy Always), then the app", func() v1.PodSpec {
			always := v1.ContainerRestartPolicyAlways
			sc := sleeperC("sidecar")
			sc.RestartPolicy = &always
			return v1.PodSpec{InitContainers: []v1.Container{sc}, Containers: []v1.Container{sleeperC("app")}}
		}},
		{"plain", "plain busybox", func() v1.PodSpec {
			return v1.PodSpec{Containers: []v1.Container{sleeperC("app")}}
		}},
		{"guaranteed", "Guaranteed QoS: cpu and memory limits = requests", func() v1.PodSpec {
			c := sleeperC("app")
			rl := v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("32Mi")}
			c.Resources.Requests, c.Resources.Limits = rl, rl.DeepCopy()
			return v1.PodSpec{Containers: []v1.Container{c}}
		}},
		{"two", "two app containers (busybox and testserver)", func() v1.PodSpec {
			return v1.PodSpec{Containers: []v1.Container{sleeperC("app"), testserverC()}}
		}},
	}
}

// burstManifest renders burst pod p as the manifest named name.
func burstManifest(name string, p burstPod) ([]byte, error) {
	grace := int64(graceSeconds)
	spec := p.spec()
	spec.TerminationGracePeriodSeconds = &grace
	return marshalPod(&v1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: agentNamespace},
		Spec:       spec,
	})
}

func busybox(name string, cmd ...string) v1.Container {
	return v1.Container{Name: name, Image: busyboxImage, ImagePullPolicy: v1.PullIfNotPresent, Command: cmd}
}

func sleeperC(name string) v1.Container { return busybox(name, sleeper...) }

// testserverC is the test server with its default ports (HTTP 8080, TCP
// 8081, gRPC health 8082); it exits on SIGTERM.
func testserverC() v1.Container {
	return v1.Container{Name: "server", Image: testserverImage, ImagePullPolicy: v1.PullIfNotPresent}
}

// observed summarises a pod's containers as the runtime has them:
// per container name, sorted, its latest attempt's state, exit code and
// reason, and how many runs the attempt numbers show ("app: exited 137
// OOMKilled, 3 runs").
func observed(sts []*runtimeapi.ContainerStatus) string {
	latest := map[string]*runtimeapi.ContainerStatus{}
	for _, st := range sts {
		n := st.GetMetadata().GetName()
		if l, ok := latest[n]; !ok || st.GetMetadata().GetAttempt() > l.GetMetadata().GetAttempt() {
			latest[n] = st
		}
	}
	names := make([]string, 0, len(latest))
	for n := range latest {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		st := latest[n]
		s := n + ": "
		switch st.GetState() {
		case runtimeapi.ContainerState_CONTAINER_RUNNING:
			s += "running"
		case runtimeapi.ContainerState_CONTAINER_EXITED:
			s += fmt.Sprintf("exited %d", st.GetExitCode())
			if r := st.GetReason(); r != "" {
				s += " " + r
			}
		case runtimeapi.ContainerState_CONTAINER_CREATED:
			s += "created"
		default:
			s += "unknown"
		}
		if runs := st.GetMetadata().GetAttempt() + 1; runs > 1 {
			s += fmt.Sprintf(", %d runs", runs)
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "no containers"
	}
	return strings.Join(parts, "; ")
}
