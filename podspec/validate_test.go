package podspec

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validPod returns a defaulted pod that passes Validate.
func validPod() *v1.Pod {
	pod := &v1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: v1.PodSpec{
			InitContainers: []v1.Container{{Name: "init", Image: "busybox"}},
			Containers:     []v1.Container{{Name: "app", Image: "busybox", Ports: []v1.ContainerPort{{ContainerPort: 80}}}},
		},
	}
	SetDefaults(pod)
	return pod
}

func ptr[T any](v T) *T { return &v }

func errorStrings(errs field.ErrorList) string {
	var b strings.Builder
	for _, e := range errs {
		b.WriteString(e.Error())
		b.WriteString("\n")
	}
	return b.String()
}

// checkValidate fails t unless Validate(pod) gives no error (want empty)
// or errors containing every string of want.
func checkValidate(t *testing.T, pod *v1.Pod, want []string) {
	t.Helper()
	got := errorStrings(Validate(pod))
	if len(want) == 0 {
		if got != "" {
			t.Errorf("Validate() = %s, want no errors", got)
		}
		return
	}
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("Validate() = %s\nwant an error containing %q", got, w)
		}
	}
}

func TestValidateAcceptsValidPods(t *testing.T) {
	if errs := Validate(validPod()); len(errs) != 0 {
		t.Errorf("Validate(validPod) = %s", errorStrings(errs))
	}
}

// TestValidate checks each rule on a mutated valid pod. want lists
// substrings that must all appear in the errors.
func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(p *v1.Pod)
		want   []string
	}{
		{"A.1 name required", func(p *v1.Pod) { p.Name = "" }, []string{"metadata.name: Required value"}},
		{"A.1 name is a DNS subdomain", func(p *v1.Pod) { p.Name = "Web_1" }, []string{`metadata.name: Invalid value: "Web_1"`}},
		{"A.1 dotted name is fine", func(p *v1.Pod) { p.Name = "web.example" }, nil},
		{"namespace is a DNS label", func(p *v1.Pod) { p.Namespace = "a.b" }, []string{`metadata.namespace: Invalid value: "a.b"`}},
		{"label key", func(p *v1.Pod) { p.Labels = map[string]string{"bad key": "v"} }, []string{`metadata.labels: Invalid value: "bad key"`}},
		{"label value", func(p *v1.Pod) { p.Labels = map[string]string{"k": "bad value"} }, []string{`metadata.labels: Invalid value: "bad value"`}},
		{"annotation key", func(p *v1.Pod) { p.Annotations = map[string]string{"a/b/c": ""} }, []string{`metadata.annotations: Invalid value: "a/b/c"`}},
		{"at least one container", func(p *v1.Pod) { p.Spec.Containers = nil }, []string{"spec.containers: Required value"}},
		{"container name required", func(p *v1.Pod) { p.Spec.Containers[0].Name = "" }, []string{"spec.containers[0].name: Required value"}},
		{"container name is a DNS label", func(p *v1.Pod) { p.Spec.Containers[0].Name = "a.b" }, []string{`spec.containers[0].name: Invalid value: "a.b"`}},
		{"A.29 duplicate app names", func(p *v1.Pod) { p.Spec.Containers = append(p.Spec.Containers, p.Spec.Containers[0]) },
			[]string{`spec.containers[1].name: Duplicate value: "app"`}},
		{"A.29 duplicate across init and app", func(p *v1.Pod) { p.Spec.Containers[0].Name = "init" },
			[]string{`spec.containers[0].name: Duplicate value: "init"`}},
		{"image required", func(p *v1.Pod) { p.Spec.InitContainers[0].Image = "" }, []string{"spec.initContainers[0].image: Required value"}},
		{"image whitespace", func(p *v1.Pod) { p.Spec.Containers[0].Image = " busybox" }, []string{"spec.containers[0].image: Invalid value", "whitespace"}},
		{"restartPolicy enum", func(p *v1.Pod) { p.Spec.RestartPolicy = "Sometimes" }, []string{`spec.restartPolicy: Unsupported value: "Sometimes"`}},
		{"restartPolicy required", func(p *v1.Pod) { p.Spec.RestartPolicy = "" }, []string{"spec.restartPolicy: Required value"}},
		{"resizePolicy", func(p *v1.Pod) {
			p.Spec.Containers[0].ResizePolicy = []v1.ContainerResizePolicy{{ResourceName: v1.ResourceCPU, RestartPolicy: v1.NotRequired},
				{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}}
		}, nil},
		{"resizePolicy resource and policy", func(p *v1.Pod) {
			p.Spec.Containers[0].ResizePolicy = []v1.ContainerResizePolicy{{ResourceName: v1.ResourceCPU, RestartPolicy: v1.NotRequired},
				{ResourceName: v1.ResourceCPU, RestartPolicy: "Later"}, {ResourceName: "gpu", RestartPolicy: v1.NotRequired}}
		}, []string{`spec.containers[0].resizePolicy[1].resourceName: Duplicate value: "cpu"`,
			`spec.containers[0].resizePolicy[1].restartPolicy: Unsupported value: "Later"`,
			`spec.containers[0].resizePolicy[2].resourceName: Unsupported value: "gpu"`}},
		{"imagePullPolicy enum", func(p *v1.Pod) { p.Spec.Containers[0].ImagePullPolicy = "Maybe" }, []string{`spec.containers[0].imagePullPolicy: Unsupported value: "Maybe"`}},
		{"terminationMessagePolicy enum", func(p *v1.Pod) { p.Spec.Containers[0].TerminationMessagePolicy = "X" }, []string{`spec.containers[0].terminationMessagePolicy: Unsupported value: "X"`}},
		{"dnsPolicy enum", func(p *v1.Pod) { p.Spec.DNSPolicy = "ClusterLast" }, []string{`spec.dnsPolicy: Unsupported value: "ClusterLast"`}},
		{"G.11 dnsPolicy ClusterFirstWithHostNet accepted", func(p *v1.Pod) {
			p.Spec.DNSPolicy, p.Spec.HostNetwork = v1.DNSClusterFirstWithHostNet, true
		}, nil},
		{"dnsPolicy None needs dnsConfig", func(p *v1.Pod) { p.Spec.DNSPolicy = v1.DNSNone }, []string{"spec.dnsConfig: Required value"}},
		{"dnsPolicy None needs a nameserver", func(p *v1.Pod) {
			p.Spec.DNSPolicy, p.Spec.DNSConfig = v1.DNSNone, &v1.PodDNSConfig{Searches: []string{"a"}}
		},
			[]string{"spec.dnsConfig.nameservers: Required value"}},
		{"dnsConfig nameserver IP", func(p *v1.Pod) { p.Spec.DNSConfig = &v1.PodDNSConfig{Nameservers: []string{"dns"}} }, []string{`spec.dnsConfig.nameservers[0]: Invalid value: "dns"`}},
		{"dnsConfig too many nameservers", func(p *v1.Pod) {
			p.Spec.DNSConfig = &v1.PodDNSConfig{Nameservers: []string{"1.1.1.1", "1.1.1.2", "1.1.1.3", "1.1.1.4"}}
		}, []string{"spec.dnsConfig.nameservers: Too many"}},
		{"dnsConfig option name", func(p *v1.Pod) { p.Spec.DNSConfig = &v1.PodDNSConfig{Options: []v1.PodDNSConfigOption{{}}} }, []string{"spec.dnsConfig.options[0].name: Required value"}},
		{"grace period non-negative", func(p *v1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr(int64(-1)) }, []string{"spec.terminationGracePeriodSeconds: Invalid value: -1"}},
		{"grace period zero is fine", func(p *v1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr(int64(0)) }, nil},
		{"activeDeadlineSeconds positive", func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr(int64(0)) },
			[]string{"spec.activeDeadlineSeconds: Invalid value: 0"}},
		{"A.9 activeDeadlineSeconds accepted", func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr(int64(5)) }, nil},
		{"C.1 hook needs one handler", func(p *v1.Pod) { p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{}} },
			[]string{"spec.containers[0].lifecycle.postStart: Required value: must specify a handler type"}},
		{"C.1 hook with two handlers", func(p *v1.Pod) {
			p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{
				Exec: &v1.ExecAction{Command: []string{"true"}}, Sleep: &v1.SleepAction{Seconds: 1}}}
		}, []string{"spec.containers[0].lifecycle.preStop.sleep: Forbidden: may not specify more than 1 handler type"}},
		{"C.2 tcpSocket hook rejected", func(p *v1.Pod) {
			p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(80)}}}
		}, []string{"spec.containers[0].lifecycle.preStop.tcpSocket: Forbidden: not supported by skiff"}},
		{"C.1 sleep hook accepted", func(p *v1.Pod) {
			p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 3}}}
		}, nil},
		{"C.1 sleep hook longer than the grace period", func(p *v1.Pod) {
			p.Spec.TerminationGracePeriodSeconds = ptr(int64(5))
			p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 6}}}
		}, []string{"spec.containers[0].lifecycle.preStop.sleep.seconds: Invalid value: 6: must be non-negative and less than terminationGracePeriodSeconds (5)"}},
		{"C.1 sleep hook equal to the grace period accepted", func(p *v1.Pod) {
			p.Spec.TerminationGracePeriodSeconds = ptr(int64(5))
			p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 5}}}
		}, nil},
		{"restartPolicy and rules on app containers", func(p *v1.Pod) {
			p.Spec.Containers[0].RestartPolicy = ptr(v1.ContainerRestartPolicyNever)
			p.Spec.Containers[0].RestartPolicyRules = []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart,
				ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
			p.Spec.InitContainers[0].RestartPolicy = ptr(v1.ContainerRestartPolicyOnFailure)
		}, nil},
		{"restart rules need a policy and valid rules", func(p *v1.Pod) {
			p.Spec.Containers[0].RestartPolicyRules = []v1.ContainerRestartRule{{Action: "Explode"}}
			p.Spec.InitContainers[0].RestartPolicy = ptr(v1.ContainerRestartPolicy("Sometimes"))
			p.Spec.InitContainers[0].RestartPolicyRules = []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart,
				ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: "Maybe"}}}
		}, []string{"spec.containers[0].restartPolicy: Required value: must specify restartPolicy when restart rules are used",
			`spec.initContainers[0].restartPolicy: Unsupported value: "Sometimes"`,
			`spec.initContainers[0].restartPolicyRules[0].exitCodes.operator: Unsupported value: "Maybe"`}},
		{"sidecar restartPolicy accepted", func(p *v1.Pod) { p.Spec.InitContainers[0].RestartPolicy = ptr(v1.ContainerRestartPolicyAlways) }, nil},
		{"B.12 sidecar may have probes", func(p *v1.Pod) {
			p.Spec.InitContainers[0].RestartPolicy = ptr(v1.ContainerRestartPolicyAlways)
			p.Spec.InitContainers[0].StartupProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}},
				TimeoutSeconds: 1, PeriodSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3}
		}, nil},
		{"A.50 os windows rejected", func(p *v1.Pod) { p.Spec.OS = &v1.PodOS{Name: v1.Windows} }, []string{`spec.os.name: Unsupported value: "windows": supported values: "linux"`}},
		{"A.50 os linux accepted", func(p *v1.Pod) { p.Spec.OS = &v1.PodOS{Name: v1.Linux} }, nil},
		{"os name required", func(p *v1.Pod) { p.Spec.OS = &v1.PodOS{} }, []string{"spec.os.name: Required value"}},
		{"port range", func(p *v1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 70000 }, []string{"spec.containers[0].ports[0].containerPort: Invalid value: 70000"}},
		{"containerPort required", func(p *v1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 0 }, []string{"spec.containers[0].ports[0].containerPort: Required value"}},
		{"hostPort range", func(p *v1.Pod) { p.Spec.Containers[0].Ports[0].HostPort = -1 }, []string{"spec.containers[0].ports[0].hostPort: Invalid value: -1"}},
		{"protocol enum", func(p *v1.Pod) { p.Spec.Containers[0].Ports[0].Protocol = "ICMP" }, []string{`spec.containers[0].ports[0].protocol: Unsupported value: "ICMP"`}},
		{"port name", func(p *v1.Pod) { p.Spec.Containers[0].Ports[0].Name = "HTTP_port" }, []string{`spec.containers[0].ports[0].name: Invalid value: "HTTP_port"`}},
		{"duplicate port name", func(p *v1.Pod) {
			p.Spec.Containers[0].Ports = []v1.ContainerPort{{Name: "http", ContainerPort: 80, Protocol: "TCP"}, {Name: "http", ContainerPort: 81, Protocol: "TCP"}}
		}, []string{`spec.containers[0].ports[1].name: Duplicate value: "http"`}},
		{"hostIP", func(p *v1.Pod) { p.Spec.Containers[0].Ports[0].HostIP = "local" }, []string{`spec.containers[0].ports[0].hostIP: Invalid value: "local"`}},
		{"duplicate hostPort across containers", func(p *v1.Pod) {
			p.Spec.Containers[0].Ports[0].HostPort = 8080
			p.Spec.InitContainers[0].Ports = []v1.ContainerPort{{ContainerPort: 1, HostPort: 8080, Protocol: "TCP"}}
		}, []string{`spec.containers[0].ports[0].hostPort: Duplicate value: "8080/TCP"`}},
		{"same hostPort other protocol is fine", func(p *v1.Pod) {
			p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 53, HostPort: 53, Protocol: "TCP"}, {ContainerPort: 53, HostPort: 53, Protocol: "UDP"}}
		}, nil},
		{"hostNetwork hostPort must equal containerPort", func(p *v1.Pod) {
			p.Spec.HostNetwork = true
			p.Spec.Containers[0].Ports[0].HostPort = 8080
		}, []string{"spec.containers[0].ports[0].containerPort: Invalid value: 80: must match `hostPort`"}},
		{"env name", func(p *v1.Pod) { p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "1=BAD"}} }, []string{`spec.containers[0].env[0].name: Invalid value: "1=BAD"`}},
		{"env name required", func(p *v1.Pod) { p.Spec.Containers[0].Env = []v1.EnvVar{{Value: "x"}} }, []string{"spec.containers[0].env[0].name: Required value"}},
		{"env value and valueFrom", func(p *v1.Pod) {
			p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "A", Value: "x", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}}}
		}, []string{"spec.containers[0].env[0].valueFrom: Invalid value", "may not be specified when `value` is not empty"}},
		{"env fieldRef path", func(p *v1.Pod) {
			p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "A", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.labels"}}}}
		}, []string{`spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: Unsupported value: "metadata.labels"`}},
		{"env fieldRef apiVersion", func(p *v1.Pod) {
			p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "A", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v2", FieldPath: "spec.nodeName"}}}}
		}, []string{`spec.containers[0].env[0].valueFrom.fieldRef.apiVersion: Unsupported value: "v2"`}},
		{"resource names", func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Limits = v1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
		}, []string{`spec.containers[0].resources.limits[nvidia.com/gpu]: Unsupported value: "nvidia.com/gpu"`}},
		{"negative resource", func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("-1")}
		}, []string{"spec.containers[0].resources.requests[cpu]: Invalid value: \"-1\""}},
		{"request above limit", func(p *v1.Pod) {
			p.Spec.Containers[0].Resources = v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("2Gi")},
				Limits:   v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")},
			}
		}, []string{"spec.containers[0].resources.requests[memory]: Invalid value: \"2Gi\": must be less than or equal to memory limit of 1Gi"}},
		{"runAsUser range", func(p *v1.Pod) { p.Spec.SecurityContext.RunAsUser = ptr(int64(-5)) }, []string{"spec.securityContext.runAsUser: Invalid value: -5"}},
		{"container runAsGroup range", func(p *v1.Pod) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{RunAsGroup: ptr(int64(1 << 40))}
		}, []string{"spec.containers[0].securityContext.runAsGroup: Invalid value"}},
		{"hostname", func(p *v1.Pod) { p.Spec.Hostname = "a.b" }, []string{`spec.hostname: Invalid value: "a.b"`}},
		{"hostnameOverride", func(p *v1.Pod) { p.Spec.HostnameOverride = ptr("db-0.example.com") }, nil},
		{"hostnameOverride rules", func(p *v1.Pod) {
			p.Spec.HostnameOverride, p.Spec.HostNetwork, p.Spec.SetHostnameAsFQDN = ptr("Bad_Name"), true, ptr(true)
		}, []string{"spec.hostnameOverride: Forbidden: may not be specified when setHostnameAsFQDN is true",
			"spec.hostnameOverride: Forbidden: may not be specified when hostNetwork is true",
			`spec.hostnameOverride: Invalid value: "Bad_Name"`}},
		{"nodeName", func(p *v1.Pod) { p.Spec.NodeName = "Node_1" }, []string{`spec.nodeName: Invalid value: "Node_1"`}},
		{"nodeSelector", func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"-x": "y"} }, []string{`spec.nodeSelector: Invalid value: "-x"`}},
		{"toleration key empty needs Exists", func(p *v1.Pod) { p.Spec.Tolerations = []v1.Toleration{{Operator: v1.TolerationOpEqual}} },
			[]string{"spec.tolerations[0].operator: Invalid value: \"Equal\""}},
		{"toleration Exists with value", func(p *v1.Pod) { p.Spec.Tolerations = []v1.Toleration{{Key: "k", Operator: "Exists", Value: "v"}} },
			[]string{"spec.tolerations[0].value: Invalid value: \"v\""}},
		{"toleration effect", func(p *v1.Pod) { p.Spec.Tolerations = []v1.Toleration{{Key: "k", Effect: "Sometimes"}} },
			[]string{`spec.tolerations[0].effect: Unsupported value: "Sometimes"`}},
		{"tolerationSeconds needs NoExecute", func(p *v1.Pod) { p.Spec.Tolerations = []v1.Toleration{{Key: "k", TolerationSeconds: ptr(int64(1))}} },
			[]string{"spec.tolerations[0].effect: Invalid value"}},
		{"readinessGate type", func(p *v1.Pod) { p.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "a b"}} },
			[]string{`spec.readinessGates[0].conditionType: Invalid value: "a b"`}},
		{"serviceAccountName other than default", func(p *v1.Pod) { p.Spec.ServiceAccountName = "admin" },
			[]string{`spec.serviceAccountName: Unsupported value: "admin": supported values: "default"`}},
		{"A.28 init container probe", func(p *v1.Pod) {
			p.Spec.InitContainers[0].ReadinessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}},
				TimeoutSeconds: 1, PeriodSeconds: 1, SuccessThreshold: 1, FailureThreshold: 1}
		}, []string{"spec.initContainers[0].readinessProbe: Forbidden: may not be set for init containers without restartPolicy=Always"}},
		{"A.28 init container lifecycle", func(p *v1.Pod) { p.Spec.InitContainers[0].Lifecycle = &v1.Lifecycle{} },
			[]string{"spec.initContainers[0].lifecycle: Forbidden: may not be set for init containers"}},
		{"B.15 probe needs a handler", func(p *v1.Pod) {
			p.Spec.Containers[0].LivenessProbe = &v1.Probe{TimeoutSeconds: 1, PeriodSeconds: 1, SuccessThreshold: 1, FailureThreshold: 1}
		}, []string{"spec.containers[0].livenessProbe: Required value: must specify a handler type"}},
		{"B.15 probe one handler", func(p *v1.Pod) {
			p.Spec.Containers[0].ReadinessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{
				Exec: &v1.ExecAction{Command: []string{"true"}}, TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(80)},
			}, TimeoutSeconds: 1, PeriodSeconds: 1, SuccessThreshold: 2, FailureThreshold: 1}
		}, []string{"spec.containers[0].readinessProbe.tcpSocket: Forbidden: may not specify more than 1 handler type"}},
		{"B.15 liveness successThreshold 1", func(p *v1.Pod) {
			p.Spec.Containers[0].LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromString("http"), Scheme: "HTTP"}},
				TimeoutSeconds: 0, PeriodSeconds: 1, SuccessThreshold: 2, FailureThreshold: 1}
		}, []string{"spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1",
			"spec.containers[0].livenessProbe.timeoutSeconds: Invalid value: 0"}},
		{"B.15 httpGet scheme and port", func(p *v1.Pod) {
			p.Spec.Containers[0].StartupProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromInt32(0), Scheme: "FTP"}},
				TimeoutSeconds: 1, PeriodSeconds: 1, SuccessThreshold: 1, FailureThreshold: 1}
		}, []string{"spec.containers[0].startupProbe.httpGet.port: Invalid value: 0", `spec.containers[0].startupProbe.httpGet.scheme: Unsupported value: "FTP"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := validPod()
			tt.mutate(pod)
			checkValidate(t, pod, tt.want)
		})
	}
}

func TestValidateNil(t *testing.T) {
	if errs := Validate(nil); len(errs) != 1 {
		t.Errorf("Validate(nil) = %v, want one error", errs)
	}
}

// TestValidateAPIPodServiceAccount: an API server's pod may name any
// service account that is a DNS subdomain; a static pod only "default".
func TestValidateAPIPodServiceAccount(t *testing.T) {
	for _, tt := range []struct {
		name       string
		sa         string
		deprecated string
		wantAPI    []string
		wantLocal  []string
	}{
		{"default", "default", "", nil, nil},
		{"empty", "", "", nil, nil},
		{"another", "guest", "", nil, []string{`spec.serviceAccountName: Unsupported value: "guest": supported values: "default"`}},
		{"both the same", "guest", "guest", nil, []string{
			`spec.serviceAccountName: Unsupported value: "guest": supported values: "default"`,
			`spec.serviceAccount: Unsupported value: "guest": supported values: "default"`}},
		{"the deprecated field only", "", "guest", []string{`spec.serviceAccount: Invalid value: "guest": must equal spec.serviceAccountName, which names the pod's service account`},
			[]string{`spec.serviceAccount: Unsupported value: "guest": supported values: "default"`}},
		{"deprecated default", "", "default", nil, nil},
		{"not a DNS subdomain", "Guest_1", "",
			[]string{`spec.serviceAccountName: Invalid value: "Guest_1": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
			[]string{`spec.serviceAccountName: Unsupported value: "Guest_1": supported values: "default"`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pod := validPod()
			pod.Spec.ServiceAccountName, pod.Spec.DeprecatedServiceAccount = tt.sa, tt.deprecated
			if got, want := errorStrings(ValidateAPIPod(pod)), lines(tt.wantAPI); got != want {
				t.Errorf("ValidateAPIPod =\n%s want\n%s", got, want)
			}
			if got, want := errorStrings(Validate(pod)), lines(tt.wantLocal); got != want {
				t.Errorf("Validate =\n%s want\n%s", got, want)
			}
		})
	}
}

// lines is errorStrings' form of the errors msgs.
func lines(msgs []string) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(m + "\n")
	}
	return b.String()
}
