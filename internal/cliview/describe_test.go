package cliview

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// updateGolden rewrites the golden files of this package's tests:
// go test ./cliview -run Golden -update
var updateGolden = flag.Bool("update", false, "rewrite the golden files in testdata")

// describeNow is the fixed "now" of the describe and events golden tests.
var describeNow = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// checkGolden compares got with testdata/name, or rewrites the file under
// -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *updateGolden {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output:\n%s\nwant (testdata/%s):\n%s", got, name, want)
	}
}

func ago(d time.Duration) metav1.Time { return metav1.NewTime(describeNow.Add(-d)) }

// describedPod is a running pod that uses most of what describe shows: an
// init container, a sidecar, an app container with probes, ports,
// resources, environment and mounts, and one in CrashLoopBackOff.
func describedPod() *v1.Pod {
	p := podWith(v1.PodRunning,
		[]v1.ContainerStatus{
			{Name: "init", ContainerID: "containerd://1111", ImageID: "sha256:bbbb", State: exited(0, 0, "Completed")},
			started(status("proxy", running(), true, 0)),
		},
		[]v1.ContainerStatus{
			started(status("web", running(), true, 0)),
			status("worker", waiting("CrashLoopBackOff"), false, 4),
		},
		cond(v1.PodReadyToStartContainers, v1.ConditionTrue, ""),
		cond(v1.PodInitialized, v1.ConditionTrue, ""),
		cond(v1.PodReady, v1.ConditionFalse, "ContainersNotReady"),
	)
	p.Name, p.Namespace, p.UID = "web-node-1", "default", "5a1c"
	p.Labels = map[string]string{"app": "web", "tier": "frontend"}
	p.Annotations = map[string]string{
		"kubernetes.io/config.source":    "file",
		"kubernetes.io/config.hash":      "0123abcd",
		"example.com/long":               strings.Repeat("x", 150),
		v1.LastAppliedConfigAnnotation:   "{}",
		"example.com/multi-line-comment": "first line\nsecond line\n",
	}
	p.Spec.NodeName, p.Status.HostIP = "node-1", "192.168.1.10"
	p.Spec.Priority = ptr.To[int32](0)
	p.Status.StartTime = ptr.To(ago(10 * time.Minute))
	p.Status.PodIP = "10.88.0.7"
	p.Status.PodIPs = []v1.PodIP{{IP: "10.88.0.7"}, {IP: "fd00::7"}}
	p.Status.QOSClass = v1.PodQOSBurstable

	ic := &p.Status.InitContainerStatuses[0]
	ic.State.Terminated.StartedAt, ic.State.Terminated.FinishedAt = ago(10*time.Minute), ago(9*time.Minute)
	p.Status.InitContainerStatuses[1].State.Running.StartedAt = ago(9 * time.Minute)
	p.Status.ContainerStatuses[0].State.Running.StartedAt = ago(8 * time.Minute)
	p.Status.ContainerStatuses[0].ContainerID = "containerd://2222"
	worker := &p.Status.ContainerStatuses[1]
	worker.LastTerminationState.Terminated = &v1.ContainerStateTerminated{
		ExitCode: 137, Signal: 9, Reason: "Error", Message: "out of patience",
		StartedAt: ago(3 * time.Minute), FinishedAt: ago(2 * time.Minute),
	}

	p.Spec.InitContainers = []v1.Container{
		{Name: "init", Image: "busybox:1.36", Command: []string{"sh", "-c", "echo one\necho two"}},
		{Name: "proxy", Image: "proxy:2", RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways),
			StartupProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(9000)}},
				TimeoutSeconds: 1, PeriodSeconds: 2, SuccessThreshold: 1, FailureThreshold: 30}},
	}
	p.Spec.Containers = []v1.Container{webContainer(), {
		Name: "worker", Image: "worker:1", Args: []string{"--queue", "jobs"},
		LivenessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"cat", "/tmp/healthy"}}},
			InitialDelaySeconds: 5, TimeoutSeconds: 1, PeriodSeconds: 5, SuccessThreshold: 1, FailureThreshold: 3},
	}}
	p.Spec.Volumes = []v1.Volume{
		{Name: "data", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/srv/data", Type: ptr.To(v1.HostPathDirectoryOrCreate)}}},
		{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse("64Mi"))}}},
		{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
	}
	p.Spec.NodeSelector = map[string]string{"kubernetes.io/os": "linux"}
	p.Spec.Tolerations = []v1.Toleration{
		{Key: "node.kubernetes.io/unreachable", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
		{Operator: v1.TolerationOpExists},
		{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "web", Effect: v1.TaintEffectNoSchedule},
	}
	return p
}

// webContainer is an app container with every per-container section set.
func webContainer() v1.Container {
	return v1.Container{
		Name: "web", Image: "skiff.test/testserver:1",
		Ports: []v1.ContainerPort{
			{Name: "http", ContainerPort: 8080, Protocol: v1.ProtocolTCP},
			{ContainerPort: 8081, HostPort: 18081, Protocol: v1.ProtocolTCP},
		},
		Resources: v1.ResourceRequirements{
			Limits:   v1.ResourceList{v1.ResourceMemory: resource.MustParse("128Mi"), v1.ResourceCPU: resource.MustParse("500m")},
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m")},
		},
		LivenessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080), Scheme: v1.URISchemeHTTP}},
			TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3},
		ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: 8082, Service: ptr.To("ready")}},
			TimeoutSeconds: 2, PeriodSeconds: 3, SuccessThreshold: 2, FailureThreshold: 1},
		Env: []v1.EnvVar{
			{Name: "GREETING", Value: "hello\nworld"},
			{Name: "POD_NAME", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
			{Name: "APP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.labels['app']"}}},
			{Name: "POD_IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}}},
			{Name: "CPU_LIMIT", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.cpu", Divisor: resource.MustParse("1m")}}},
			{Name: "MEM_REQUEST", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
			{Name: "TOKEN", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}, Key: "token"}}},
		},
		VolumeMounts: []v1.VolumeMount{
			{Name: "data", MountPath: "/var/data", SubPath: "web"},
			{Name: "cache", MountPath: "/cache", ReadOnly: true},
		},
	}
}

// describedEvents are the pod's events, out of order, one of them repeated.
func describedEvents() []v1.Event {
	ev := func(typ, reason, msg string, first, last time.Duration, count int32) v1.Event {
		return v1.Event{
			Type: typ, Reason: reason, Message: msg, Count: count,
			FirstTimestamp: ago(first), LastTimestamp: ago(last),
			Source:         v1.EventSource{Component: "skiff", Host: "node-1"},
			InvolvedObject: v1.ObjectReference{Kind: "Pod", Name: "web-node-1", Namespace: "default", FieldPath: "spec.containers{worker}"},
		}
	}
	return []v1.Event{
		ev(v1.EventTypeWarning, "BackOff", "Back-off restarting failed container worker in pod web-node-1_default(5a1c)", 7*time.Minute, 30*time.Second, 12),
		ev(v1.EventTypeNormal, "Pulled", `Container image "skiff.test/testserver:1" already present on machine`, 9*time.Minute, 9*time.Minute, 1),
		ev(v1.EventTypeNormal, "Created", "Created container: web", 8*time.Minute+30*time.Second, 8*time.Minute+30*time.Second, 1),
		ev(v1.EventTypeNormal, "Started", "Started container web\n", 8*time.Minute, 8*time.Minute, 1),
	}
}

func TestDescribePodGolden_A34_A54_D6(t *testing.T) {
	pending := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pending", Namespace: "kube-system"},
		Spec: v1.PodSpec{Containers: []v1.Container{{
			Name: "app", Image: "app:1",
			Resources: v1.ResourceRequirements{Limits: v1.ResourceList{
				v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("1Gi"),
			}},
		}}},
		Status: v1.PodStatus{Phase: v1.PodPending, Reason: "Evicted", Message: "The node was low on resource: memory."},
	}
	terminating := podWith(v1.PodRunning, nil, []v1.ContainerStatus{status("app", running(), true, 0)})
	terminating.Name, terminating.Namespace = "leaving", "default"
	terminating.Spec.Containers = []v1.Container{{Name: "app", Image: "app:1"}}
	terminating.DeletionTimestamp = ptr.To(ago(5 * time.Second))
	terminating.DeletionGracePeriodSeconds = ptr.To[int64](30)
	terminating.Status.ContainerStatuses[0].State.Running.StartedAt = ago(time.Hour)
	terminating.OwnerReferences = []metav1.OwnerReference{{Kind: "Node", Name: "node-1", Controller: ptr.To(true)}}

	for _, tt := range []struct {
		golden string
		pod    *v1.Pod
		events []v1.Event
	}{
		{"describe-running.golden", describedPod(), describedEvents()},
		{"describe-pending.golden", pending, nil},
		{"describe-terminating.golden", terminating, []v1.Event{}},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			before := tt.pod.DeepCopy()
			var buf bytes.Buffer
			if err := DescribePod(&buf, tt.pod, tt.events, describeNow); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tt.golden, buf.String())
			if !equalPods(before, tt.pod) {
				t.Error("DescribePod modified the pod")
			}
		})
	}
}

func equalPods(a, b *v1.Pod) bool {
	var ba, bb bytes.Buffer
	_ = PrintObject(&ba, a, "json")
	_ = PrintObject(&bb, b, "json")
	return ba.String() == bb.String()
}

func TestDescribePodEscapesTerminalControl(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x", Labels: map[string]string{"k": "a\x1b[31mred\rb"}}}
	var buf bytes.Buffer
	if err := DescribePod(&buf, pod, nil, describeNow); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(buf.String(), "\x1b\r") || !strings.Contains(buf.String(), `k=a^[[31mred\rb`) {
		t.Errorf("control characters not escaped:\n%q", buf.String())
	}
}

// failingWriter fails every write.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestDescribePodWriteError(t *testing.T) {
	err := DescribePod(failingWriter{}, describedPod(), describedEvents(), describeNow)
	if err == nil || !strings.Contains(err.Error(), "disk full") || !strings.Contains(err.Error(), "default/web-node-1") {
		t.Errorf("DescribePod to a failing writer: %v, want the write error naming the pod", err)
	}
}

func TestDescribeProbe_B2(t *testing.T) {
	for _, tt := range []struct {
		name  string
		probe v1.Probe
		want  string
	}{
		{"http with host and scheme", v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Host: "10.0.0.1", Scheme: v1.URISchemeHTTPS, Port: intstr.FromString("web"), Path: "/ready"}}, TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3},
			"http-get https://10.0.0.1:web/ready delay=0s timeout=1s period=10s #success=1 #failure=3"},
		{"http defaults", v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromInt32(8080), Path: "/healthz", Scheme: v1.URISchemeHTTP}}, TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3},
			"http-get http://:8080/healthz delay=0s timeout=1s period=10s #success=1 #failure=3"},
		{"tcp", v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(8081)}}, InitialDelaySeconds: 15, TimeoutSeconds: 1, PeriodSeconds: 20, SuccessThreshold: 1, FailureThreshold: 3},
			"tcp-socket :8081 delay=15s timeout=1s period=20s #success=1 #failure=3"},
		{"grpc without service", v1.Probe{ProbeHandler: v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: 8082}}, TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3},
			"grpc <pod>:8082  delay=0s timeout=1s period=10s #success=1 #failure=3"},
		{"exec", v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"cat", "/tmp/healthy"}}}, TimeoutSeconds: 1, PeriodSeconds: 5, SuccessThreshold: 1, FailureThreshold: 3},
			"exec [cat /tmp/healthy] delay=0s timeout=1s period=5s #success=1 #failure=3"},
		{"no handler", v1.Probe{}, "unknown delay=0s timeout=0s period=0s #success=0 #failure=0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := DescribeProbe(&tt.probe); got != tt.want {
				t.Errorf("DescribeProbe = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPodQOSWithoutStatus_D6(t *testing.T) {
	res := func(lim, req v1.ResourceList) v1.Container {
		return v1.Container{Resources: v1.ResourceRequirements{Limits: lim, Requests: req}}
	}
	cpuMem := func(cpu, mem string) v1.ResourceList {
		return v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}
	}
	for _, tt := range []struct {
		name       string
		containers []v1.Container
		want       v1.PodQOSClass
	}{
		{"nothing set", []v1.Container{{}}, v1.PodQOSBestEffort},
		{"zero quantities", []v1.Container{res(cpuMem("0", "0"), nil)}, v1.PodQOSBestEffort},
		// As in kubectl, requests are not defaulted from limits here.
		{"limits only, requests not defaulted", []v1.Container{res(cpuMem("1", "1Gi"), nil)}, v1.PodQOSBurstable},
		{"equal requests", []v1.Container{res(cpuMem("1", "1Gi"), cpuMem("1000m", "1Gi"))}, v1.PodQOSGuaranteed},
		{"lower request", []v1.Container{res(cpuMem("1", "1Gi"), cpuMem("500m", "1Gi"))}, v1.PodQOSBurstable},
		{"one container without limits", []v1.Container{res(cpuMem("1", "1Gi"), nil), {}}, v1.PodQOSBurstable},
		{"memory only", []v1.Container{res(v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")}, nil)}, v1.PodQOSBurstable},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{Containers: tt.containers}}
			if got := podQOS(pod); got != tt.want {
				t.Errorf("podQOS = %s, want %s", got, tt.want)
			}
		})
	}
}
