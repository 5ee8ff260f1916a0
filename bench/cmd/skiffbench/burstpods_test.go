package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"sigs.k8s.io/yaml"
)

func TestBurstPods(t *testing.T) {
	app := func(p *v1.Pod) v1.Container { return p.Spec.Containers[0] }
	tests := []struct {
		name  string
		check func(t *testing.T, p *v1.Pod)
	}{
		{"init2", func(t *testing.T, p *v1.Pod) {
			if len(p.Spec.InitContainers) != 2 || p.Spec.InitContainers[0].Name == p.Spec.InitContainers[1].Name {
				t.Errorf("init containers = %+v, want two", p.Spec.InitContainers)
			}
		}},
		{"exec", func(t *testing.T, p *v1.Pod) {
			if rp := app(p).ReadinessProbe; rp == nil || rp.Exec == nil {
				t.Errorf("readiness probe = %+v, want exec", rp)
			}
		}},
		{"http", func(t *testing.T, p *v1.Pod) {
			rp := app(p).ReadinessProbe
			if rp == nil || rp.HTTPGet == nil || rp.HTTPGet.Path != "/healthz" || rp.HTTPGet.Port.IntValue() != testserverHTTPPort || app(p).Image != testserverImage {
				t.Errorf("readiness probe = %+v on %s, want httpGet /healthz:8080 on testserver", rp, app(p).Image)
			}
		}},
		{"tcp", func(t *testing.T, p *v1.Pod) {
			if lp := app(p).LivenessProbe; lp == nil || lp.TCPSocket == nil || lp.TCPSocket.Port.IntValue() != testserverTCPPort {
				t.Errorf("liveness probe = %+v, want tcpSocket 8081", lp)
			}
		}},
		{"grpc", func(t *testing.T, p *v1.Pod) {
			if rp := app(p).ReadinessProbe; rp == nil || rp.GRPC == nil || rp.GRPC.Port != testserverGRPCPort {
				t.Errorf("readiness probe = %+v, want grpc 8082", rp)
			}
		}},
		{"startup", func(t *testing.T, p *v1.Pod) {
			if c := app(p); c.StartupProbe == nil || c.StartupProbe.Exec == nil || c.LivenessProbe == nil {
				t.Errorf("probes = %+v / %+v, want exec startup and liveness", c.StartupProbe, c.LivenessProbe)
			}
		}},
		{"crash", func(t *testing.T, p *v1.Pod) {
			if c := app(p); !slices.Equal(c.Command, []string{"sh", "-c", "exit 1"}) || p.Spec.RestartPolicy != v1.RestartPolicyAlways {
				t.Errorf("command %v, restart policy %q; want exit 1, Always", c.Command, p.Spec.RestartPolicy)
			}
		}},
		{"oom", func(t *testing.T, p *v1.Pod) {
			if c := app(p); c.Resources.Limits.Memory().Value() != 8<<20 || !slices.Equal(c.Command, []string{"tail", "/dev/zero"}) {
				t.Errorf("limits %v, command %v; want 8Mi and tail /dev/zero", c.Resources.Limits, c.Command)
			}
		}},
		{"sidecar", func(t *testing.T, p *v1.Pod) {
			ic := p.Spec.InitContainers
			if len(ic) != 1 || ic[0].RestartPolicy == nil || *ic[0].RestartPolicy != v1.ContainerRestartPolicyAlways {
				t.Errorf("init containers = %+v, want one with restartPolicy Always", ic)
			}
		}},
		{"plain", func(t *testing.T, p *v1.Pod) {
			if c := app(p); c.Image != busyboxImage || c.ReadinessProbe != nil || len(p.Spec.InitContainers) != 0 {
				t.Errorf("container = %+v", c)
			}
		}},
		{"guaranteed", func(t *testing.T, p *v1.Pod) {
			c := app(p)
			if c.Resources.Limits.Cpu().Cmp(*c.Resources.Requests.Cpu()) != 0 || c.Resources.Limits.Memory().Cmp(*c.Resources.Requests.Memory()) != 0 || c.Resources.Limits.Cpu().IsZero() {
				t.Errorf("resources = %+v, want limits = requests", c.Resources)
			}
		}},
		{"two", func(t *testing.T, p *v1.Pod) {
			if len(p.Spec.Containers) != 2 {
				t.Errorf("containers = %+v, want two", p.Spec.Containers)
			}
		}},
	}
	pods := burstPods()
	if len(pods) != 12 || len(tests) != len(pods) {
		t.Fatalf("%d burst pods, %d cases; want 12 each", len(pods), len(tests))
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bp := pods[i]
			if bp.name != tt.name || bp.covers == "" {
				t.Fatalf("pod %d = %q (%q), want %q with a description", i, bp.name, bp.covers, tt.name)
			}
			data, err := burstManifest("s-b-"+bp.name, bp)
			if err != nil {
				t.Fatal(err)
			}
			var p v1.Pod
			if err := yaml.UnmarshalStrict(data, &p); err != nil {
				t.Fatalf("manifest does not decode: %v\n%s", err, data)
			}
			if p.Kind != "Pod" || p.Name != "s-b-"+bp.name || p.Namespace != agentNamespace || *p.Spec.TerminationGracePeriodSeconds != graceSeconds {
				t.Errorf("pod header = %+v", p.ObjectMeta)
			}
			tt.check(t, &p)
		})
	}
}

func TestDensityFloorProbeMirrorsTheManifest(t *testing.T) {
	p := densityFloorProbe()
	rp := appContainer(kindDensity).ReadinessProbe
	if !slices.Equal(p.Command, rp.Exec.Command) || p.Period != 10*time.Second || p.Timeout != time.Second {
		t.Errorf("floor probe = %+v, want %v every 10s, timeout 1s", p, rp.Exec.Command)
	}
}

func TestObserved(t *testing.T) {
	ctr := func(name string, attempt uint32, state runtimeapi.ContainerState, code int32, reason string) *runtimeapi.ContainerStatus {
		return &runtimeapi.ContainerStatus{Metadata: &runtimeapi.ContainerMetadata{Name: name, Attempt: attempt},
			State: state, ExitCode: code, Reason: reason}
	}
	exited, running := runtimeapi.ContainerState_CONTAINER_EXITED, runtimeapi.ContainerState_CONTAINER_RUNNING
	tests := []struct {
		name string
		sts  []*runtimeapi.ContainerStatus
		want string
	}{
		{"none", nil, "no containers"},
		{"oom, latest attempt wins", []*runtimeapi.ContainerStatus{
			ctr("app", 2, exited, 137, "OOMKilled"), ctr("app", 1, exited, 1, "Error")}, "app: exited 137 OOMKilled, 3 runs"},
		{"sidecar and app, sorted", []*runtimeapi.ContainerStatus{
			ctr("sidecar", 0, running, 0, ""), ctr("app", 0, running, 0, "")}, "app: running; sidecar: running"},
		{"inits done", []*runtimeapi.ContainerStatus{
			ctr("init-a", 0, exited, 0, "Completed"), ctr("app", 0, running, 0, "")}, "app: running; init-a: exited 0 Completed"},
	}
	for _, tt := range tests {
		if got := observed(tt.sts); got != tt.want {
			t.Errorf("%s: observed = %q, want %q", tt.name, got, tt.want)
		}
	}
	if !strings.Contains(observed([]*runtimeapi.ContainerStatus{ctr("x", 0, runtimeapi.ContainerState_CONTAINER_CREATED, 0, "")}), "created") {
		t.Error("created container not shown")
	}
}
