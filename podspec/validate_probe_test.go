package podspec

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// okProbe returns a valid, defaulted exec probe.
func okProbe() *v1.Probe {
	return &v1.Probe{
		ProbeHandler:   v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}},
		TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3,
	}
}

// withProbe returns okProbe changed by f.
func withProbe(f func(p *v1.Probe)) *v1.Probe {
	p := okProbe()
	f(p)
	return p
}

// TestValidate_Probes checks the probe rules on a mutated valid pod; want
// is the exact list of errors, in order.
func TestValidate_Probes(t *testing.T) {
	app := func(p *v1.Pod) *v1.Container { return &p.Spec.Containers[0] }
	initC := func(p *v1.Pod) *v1.Container { return &p.Spec.InitContainers[0] }
	const forbidInit = "Forbidden: may not be set for init containers without restartPolicy=Always"
	tests := []struct {
		name   string
		mutate func(p *v1.Pod)
		want   []string
	}{
		{"B.1 all three probes accepted", func(p *v1.Pod) {
			c := app(p)
			c.LivenessProbe, c.ReadinessProbe, c.StartupProbe = okProbe(), okProbe(), okProbe()
		}, nil},
		{"B.12 liveness on an init container", func(p *v1.Pod) { initC(p).LivenessProbe = okProbe() },
			[]string{"spec.initContainers[0].livenessProbe: " + forbidInit}},
		{"B.12 readiness on an init container", func(p *v1.Pod) { initC(p).ReadinessProbe = okProbe() },
			[]string{"spec.initContainers[0].readinessProbe: " + forbidInit}},
		{"B.12 startup on an init container", func(p *v1.Pod) { initC(p).StartupProbe = okProbe() },
			[]string{"spec.initContainers[0].startupProbe: " + forbidInit}},
		{"B.12 all probes on a sidecar accepted", func(p *v1.Pod) {
			c := initC(p)
			c.RestartPolicy = ptr(v1.ContainerRestartPolicyAlways)
			c.LivenessProbe, c.ReadinessProbe, c.StartupProbe = okProbe(), okProbe(), okProbe()
		}, nil},
		{"B.12 sidecar probes are validated", func(p *v1.Pod) {
			c := initC(p)
			c.RestartPolicy = ptr(v1.ContainerRestartPolicyAlways)
			c.StartupProbe = withProbe(func(p *v1.Probe) { p.SuccessThreshold = 2 })
		}, []string{"spec.initContainers[0].startupProbe.successThreshold: Invalid value: 2: must be 1"}},
		{"B.2 no handler", func(p *v1.Pod) { app(p).ReadinessProbe = withProbe(func(p *v1.Probe) { p.Exec = nil }) },
			[]string{"spec.containers[0].readinessProbe: Required value: must specify a handler type"}},
		{"B.2 two handlers", func(p *v1.Pod) {
			app(p).LivenessProbe = withProbe(func(p *v1.Probe) { p.GRPC = &v1.GRPCAction{Port: 9090} })
		}, []string{"spec.containers[0].livenessProbe.grpc: Forbidden: may not specify more than 1 handler type"}},
		{"B.2 four handlers", func(p *v1.Pod) {
			app(p).StartupProbe = withProbe(func(p *v1.Probe) {
				p.HTTPGet = &v1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(80), Scheme: v1.URISchemeHTTP}
				p.TCPSocket = &v1.TCPSocketAction{Port: intstr.FromInt32(80)}
				p.GRPC = &v1.GRPCAction{Port: 9090}
			})
		}, []string{
			"spec.containers[0].startupProbe.httpGet: Forbidden: may not specify more than 1 handler type",
			"spec.containers[0].startupProbe.tcpSocket: Forbidden: may not specify more than 1 handler type",
			"spec.containers[0].startupProbe.grpc: Forbidden: may not specify more than 1 handler type",
		}},
		{"B.3 exec needs a command", func(p *v1.Pod) {
			app(p).LivenessProbe = withProbe(func(p *v1.Probe) { p.Exec.Command = nil })
		}, []string{"spec.containers[0].livenessProbe.exec.command: Required value"}},
		{"B.15 liveness successThreshold must be 1", func(p *v1.Pod) {
			app(p).LivenessProbe = withProbe(func(p *v1.Probe) { p.SuccessThreshold = 3 })
		}, []string{"spec.containers[0].livenessProbe.successThreshold: Invalid value: 3: must be 1"}},
		{"B.15 startup successThreshold must be 1", func(p *v1.Pod) {
			app(p).StartupProbe = withProbe(func(p *v1.Probe) { p.SuccessThreshold = 2 })
		}, []string{"spec.containers[0].startupProbe.successThreshold: Invalid value: 2: must be 1"}},
		{"B.15 readiness successThreshold may be above 1", func(p *v1.Pod) {
			app(p).ReadinessProbe = withProbe(func(p *v1.Probe) { p.SuccessThreshold = 3 })
		}, nil},
		{"B.15 negative initialDelaySeconds", func(p *v1.Pod) {
			app(p).ReadinessProbe = withProbe(func(p *v1.Probe) { p.InitialDelaySeconds = -1 })
		}, []string{"spec.containers[0].readinessProbe.initialDelaySeconds: Invalid value: -1: must be greater than or equal to 0"}},
		{"B.15 negative timing fields", func(p *v1.Pod) {
			app(p).ReadinessProbe = withProbe(func(p *v1.Probe) {
				p.TimeoutSeconds, p.PeriodSeconds, p.SuccessThreshold, p.FailureThreshold = -1, -2, -3, -4
			})
		}, []string{
			"spec.containers[0].readinessProbe.timeoutSeconds: Invalid value: -1: must be greater than or equal to 1",
			"spec.containers[0].readinessProbe.periodSeconds: Invalid value: -2: must be greater than or equal to 1",
			"spec.containers[0].readinessProbe.successThreshold: Invalid value: -3: must be greater than or equal to 1",
			"spec.containers[0].readinessProbe.failureThreshold: Invalid value: -4: must be greater than or equal to 1",
		}},
		{"B.15 negative successThreshold of liveness", func(p *v1.Pod) {
			app(p).LivenessProbe = withProbe(func(p *v1.Probe) { p.SuccessThreshold = -1 })
		}, []string{
			"spec.containers[0].livenessProbe.successThreshold: Invalid value: -1: must be greater than or equal to 1",
			"spec.containers[0].livenessProbe.successThreshold: Invalid value: -1: must be 1",
		}},
		{"B.16 terminationGracePeriodSeconds on liveness and startup", func(p *v1.Pod) {
			c := app(p)
			c.LivenessProbe = withProbe(func(p *v1.Probe) { p.TerminationGracePeriodSeconds = ptr(int64(5)) })
			c.StartupProbe = withProbe(func(p *v1.Probe) { p.TerminationGracePeriodSeconds = ptr(int64(1)) })
		}, nil},
		{"B.16 terminationGracePeriodSeconds forbidden on readiness", func(p *v1.Pod) {
			app(p).ReadinessProbe = withProbe(func(p *v1.Probe) { p.TerminationGracePeriodSeconds = ptr(int64(5)) })
		}, []string{"spec.containers[0].readinessProbe.terminationGracePeriodSeconds: Invalid value: 5: must not be set for readinessProbes"}},
		{"B.16 terminationGracePeriodSeconds must be positive", func(p *v1.Pod) {
			c := app(p)
			c.LivenessProbe = withProbe(func(p *v1.Probe) { p.TerminationGracePeriodSeconds = ptr(int64(0)) })
			c.StartupProbe = withProbe(func(p *v1.Probe) { p.TerminationGracePeriodSeconds = ptr(int64(-3)) })
		}, []string{
			"spec.containers[0].livenessProbe.terminationGracePeriodSeconds: Invalid value: 0: must be greater than 0",
			"spec.containers[0].startupProbe.terminationGracePeriodSeconds: Invalid value: -3: must be greater than 0",
		}},
		{"B.4 httpGet fields", func(p *v1.Pod) {
			app(p).LivenessProbe = withProbe(func(p *v1.Probe) {
				p.Exec = nil
				p.HTTPGet = &v1.HTTPGetAction{Port: intstr.FromString("HTTP_port"), Scheme: "FTP",
					HTTPHeaders: []v1.HTTPHeader{{Name: "X-Ok", Value: "1"}, {Name: "bad header", Value: "x"}}}
			})
		}, []string{
			"spec.containers[0].livenessProbe.httpGet.path: Required value",
			`spec.containers[0].livenessProbe.httpGet.port: Invalid value: "HTTP_port": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)`,
			`spec.containers[0].livenessProbe.httpGet.scheme: Unsupported value: "FTP": supported values: "HTTP", "HTTPS"`,
			`spec.containers[0].livenessProbe.httpGet.httpHeaders[1].name: Invalid value: "bad header": a valid HTTP header must consist of alphanumeric characters or '-' (e.g. 'X-Header-Name', regex used for validation is '[-A-Za-z0-9]+')`,
		}},
		{"B.4 httpGet named port accepted", func(p *v1.Pod) {
			app(p).ReadinessProbe = withProbe(func(p *v1.Probe) {
				p.Exec = nil
				p.HTTPGet = &v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http"), Scheme: v1.URISchemeHTTPS}
			})
		}, nil},
		{"B.5 tcpSocket port range", func(p *v1.Pod) {
			app(p).ReadinessProbe = withProbe(func(p *v1.Probe) {
				p.Exec, p.TCPSocket = nil, &v1.TCPSocketAction{Port: intstr.FromInt32(70000)}
			})
		}, []string{"spec.containers[0].readinessProbe.tcpSocket.port: Invalid value: 70000: must be between 1 and 65535, inclusive"}},
		{"B.6 grpc port required", func(p *v1.Pod) {
			app(p).StartupProbe = withProbe(func(p *v1.Probe) { p.Exec, p.GRPC = nil, &v1.GRPCAction{} })
		}, []string{"spec.containers[0].startupProbe.grpc.port: Invalid value: 0: must be between 1 and 65535, inclusive"}},
		{"C.1 hook httpGet header names are checked too", func(p *v1.Pod) {
			app(p).Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{
				Path: "/", Port: intstr.FromInt32(80), Scheme: v1.URISchemeHTTP, HTTPHeaders: []v1.HTTPHeader{{Name: "a:b"}}}}}
		}, []string{`spec.containers[0].lifecycle.postStart.httpGet.httpHeaders[0].name: Invalid value: "a:b": a valid HTTP header must consist of alphanumeric characters or '-' (e.g. 'X-Header-Name', regex used for validation is '[-A-Za-z0-9]+')`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := validPod()
			tt.mutate(pod)
			var got []string
			for _, e := range Validate(pod) {
				got = append(got, e.Error())
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Validate() =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}
