package kubeletconfig

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"
)

type config = Configuration

// Configuration is a KubeletConfiguration with skiff's own fields, which
// the kubelet does not have (each is also a flag of skiff agent only).
type Configuration struct {
	v1beta1.KubeletConfiguration `json:",inline"`
	// OfflinePods is --offline-pods: keep the offline copy of the API
	// pods and run them from it when the API server does not answer at
	// start.
	OfflinePods bool `json:"offlinePods,omitempty"`
}

// DeepCopy copies c.
func (c *Configuration) DeepCopy() *Configuration {
	return &Configuration{KubeletConfiguration: *c.KubeletConfiguration.DeepCopy(), OfflinePods: c.OfflinePods}
}

// field binds KubeletConfiguration fields to the agent flag that sets
// them; the kubelet binds the same flag to the same field.
type field struct {
	// flag is the flag's name.
	flag string
	// paths are the JSON paths of the fields (port: port and
	// enableServer).
	paths []string
	// toFlag renders the file's fields as the flag's value; ok is false
	// where the file leaves them out (the zero value, or nil, as the
	// kubelet's defaulting sees it).
	toFlag func(c *config) (value string, ok bool, err error)
	// fromFlag stores the flag's value in the fields.
	fromFlag func(c *config, v pflag.Value) error
}

// fields are the flag-bound fields skiff supports, in the order of the
// table in docs/config-file.md (docs/reference/config-file.md is generated
// from them).
func fields() []field {
	return []field{
		str("staticPodPath", "pod-manifest-path", func(c *config) *string { return &c.StaticPodPath }),
		str("containerRuntimeEndpoint", "container-runtime-endpoint", func(c *config) *string { return &c.ContainerRuntimeEndpoint }),
		str("podLogsDir", "pod-logs-dir", func(c *config) *string { return &c.PodLogsDir }),
		str("address", "address", func(c *config) *string { return &c.Address }),
		num("readOnlyPort", "read-only-port", func(c *config) *int32 { return &c.ReadOnlyPort }),
		portField(),
		str("tlsCertFile", "tls-cert-file", func(c *config) *string { return &c.TLSCertFile }),
		str("tlsPrivateKeyFile", "tls-private-key-file", func(c *config) *string { return &c.TLSPrivateKeyFile }),
		str("authentication.x509.clientCAFile", "client-ca-file", func(c *config) *string { return &c.Authentication.X509.ClientCAFile }),
		boolPtr("authentication.anonymous.enabled", "anonymous-auth", func(c *config) **bool { return &c.Authentication.Anonymous.Enabled }),
		boolPtr("authentication.webhook.enabled", "authentication-token-webhook", func(c *config) **bool { return &c.Authentication.Webhook.Enabled }),
		str("authorization.mode", "authorization-mode", func(c *config) *v1beta1.KubeletAuthorizationMode { return &c.Authorization.Mode }),
		boolVal("rotateCertificates", "rotate-certificates", func(c *config) *bool { return &c.RotateCertificates }),
		boolPtr("registerNode", "register-node", func(c *config) **bool { return &c.RegisterNode }),
		taintsField(),
		duration("nodeStatusUpdateFrequency", "node-status-update-frequency", func(c *config) *metav1.Duration { return &c.NodeStatusUpdateFrequency }),
		nodeStatusReportFrequencyField(),
		num("nodeLeaseDurationSeconds", "node-lease-duration-seconds", func(c *config) *int32 { return &c.NodeLeaseDurationSeconds }),
		kubeAPIQPSField(),
		num("kubeAPIBurst", "kube-api-burst", func(c *config) *int32 { return &c.KubeAPIBurst }),
		str("contentType", "kube-api-content-type", func(c *config) *string { return &c.ContentType }),
		boolVal("offlinePods", "offline-pods", func(c *config) *bool { return &c.OfflinePods }),
		verbosityField(),
		str("podCIDR", "pod-cidr", func(c *config) *string { return &c.PodCIDR }),
		strPtr("resolvConf", "resolv-conf", func(c *config) **string { return &c.ResolverConfig }),
		str("clusterDomain", "cluster-domain", func(c *config) *string { return &c.ClusterDomain }),
		strSlice("clusterDNS", "cluster-dns", func(c *config) *[]string { return &c.ClusterDNS }),
		duration("runtimeRequestTimeout", "runtime-request-timeout", func(c *config) *metav1.Duration { return &c.RuntimeRequestTimeout }),
		durationPtr("crashLoopBackOff.maxContainerRestartPeriod", "max-container-restart-period", func(c *config) **metav1.Duration {
			return &c.CrashLoopBackOff.MaxContainerRestartPeriod
		}),
		str("cgroupDriver", "cgroup-driver", func(c *config) *string { return &c.CgroupDriver }),
		str("cgroupRoot", "cgroup-root", func(c *config) *string { return &c.CgroupRoot }),
		boolPtr("cgroupsPerQOS", "cgroups-per-qos", func(c *config) **bool { return &c.CgroupsPerQOS }),
		resourceMap("systemReserved", "system-reserved", func(c *config) *map[string]string { return &c.SystemReserved }),
		resourceMap("kubeReserved", "kube-reserved", func(c *config) *map[string]string { return &c.KubeReserved }),
		evictionHardField(),
		num("maxPods", "max-pods", func(c *config) *int32 { return &c.MaxPods }),
		numPtr("podPidsLimit", "pod-max-pids", func(c *config) **int64 { return &c.PodPidsLimit }),
		durationPtr("cpuCFSQuotaPeriod", "cpu-cfs-quota-period", func(c *config) **metav1.Duration { return &c.CPUCFSQuotaPeriod }),
		memoryThrottlingFactorField(),
		boolPtr("singleProcessOOMKill", "single-process-oom-kill", func(c *config) **bool { return &c.SingleProcessOOMKill }),
		boolPtr("failCgroupV1", "fail-cgroupv1", func(c *config) **bool { return &c.FailCgroupV1 }),
		boolPtr("seccompDefault", "seccomp-default", func(c *config) **bool { return &c.SeccompDefault }),
		strSlice("allowedUnsafeSysctls", "allowed-unsafe-sysctls", func(c *config) *[]string { return &c.AllowedUnsafeSysctls }),
		serializeImagePullsField(),
		maxParallelImagePullsField(),
		numPtr("imageGCHighThresholdPercent", "image-gc-high-threshold", func(c *config) **int32 { return &c.ImageGCHighThresholdPercent }),
		numPtr("imageGCLowThresholdPercent", "image-gc-low-threshold", func(c *config) **int32 { return &c.ImageGCLowThresholdPercent }),
		duration("imageMinimumGCAge", "image-minimum-gc-age", func(c *config) *metav1.Duration { return &c.ImageMinimumGCAge }),
		duration("imageMaximumGCAge", "image-maximum-gc-age", func(c *config) *metav1.Duration { return &c.ImageMaximumGCAge }),
		str("containerLogMaxSize", "container-log-max-size", func(c *config) *string { return &c.ContainerLogMaxSize }),
		numPtr("containerLogMaxFiles", "container-log-max-files", func(c *config) **int32 { return &c.ContainerLogMaxFiles }),
		numPtr("containerLogMaxWorkers", "container-log-max-workers", func(c *config) **int32 { return &c.ContainerLogMaxWorkers }),
		durationPtr("containerLogMonitorInterval", "container-log-monitor-interval", func(c *config) **metav1.Duration { return &c.ContainerLogMonitorInterval }),
		duration("shutdownGracePeriod", "shutdown-grace-period", func(c *config) *metav1.Duration { return &c.ShutdownGracePeriod }),
		duration("shutdownGracePeriodCriticalPods", "shutdown-grace-period-critical-pods", func(c *config) *metav1.Duration { return &c.ShutdownGracePeriodCriticalPods }),
		byPodPriorityField(),
	}
}

func str[T ~string](path, flag string, at func(*config) *T) field {
	return field{
		flag: flag, paths: []string{path},
		toFlag: func(c *config) (string, bool, error) { v := *at(c); return string(v), v != "", nil },
		fromFlag: func(c *config, v pflag.Value) error {
			*at(c) = T(v.String())
			return nil
		},
	}
}

// strPtr is a string field where "" is a value (resolvConf: none).
func strPtr(path, flag string, at func(*config) **string) field {
	return field{
		flag: flag, paths: []string{path},
		toFlag: func(c *config) (string, bool, error) {
			p := *at(c)
			return ptr.Deref(p, ""), p != nil, nil
		},
		fromFlag: func(c *config, v pflag.Value) error { *at(c) = ptr.To(v.String()); return nil },
	}
}

type integer interface{ ~int32 | ~int64 }

// parseInt parses s into T, refusing what T cannot hold.
func parseInt[T integer](s string) (T, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err == nil && int64(T(n)) != n {
		err = fmt.Errorf("%d is out of range", n)
	}
	return T(n), err
}

// num is an integer field where 0 means the default.
func num[T integer](path, flag string, at func(*config) *T) field {
	return field{
		flag: flag, paths: []string{path},
		toFlag: func(c *config) (string, bool, error) {
			v := *at(c)
			return strconv.FormatInt(int64(v), 10), v != 0, nil
		},
		fromFlag: func(c *config, v pflag.Value) error {
			n, err := parseInt[T](v.String())
			*at(c) = n
			return err
		},
	}
}

// numPtr is an integer field where nil means the default.
func numPtr[T integer](path, flag string, at func(*config) **T) field {
	return field{
		flag: flag, paths: []string{path},
		toFlag: func(c *config) (string, bool, error) {
			p := *at(c)
			if p == nil {
				return "", false, nil
			}
			return strconv.FormatInt(int64(*p), 10), true, nil
		},
		fromFlag: func(c *config, v pflag.Value) error {
			n, err := parseInt[T](v.String())
			*at(c) = &n
			return err
		},
	}
}

func boolPtr(path, flag string, at func(*config) **bool) field {
	return field{
		flag: flag, paths: []string{path},
		toFlag: func(c *config) (string, bool, error) {
			p := *at(c)
			return strconv.FormatBool(ptr.Deref(p, false)), p != nil, nil
		},
		fromFlag: func(c *config, v pflag.Value) error {
			b, err := strconv.ParseBool(v.String())
			*at(c) = &b
			return err
		},
	}
}

// boolVal is a bool field whose default is false.
func boolVal(path, flag string, at func(*config) *bool) field {
	return field{
		flag: flag, paths: []string{path},
		toFlag: func(c *config) (string, bool, error) { return "true", *at(c), nil },
		fromFlag: func(c *config, v pflag.Value) error {
			b, err := strconv.ParseBool(v.String())
			*at(c) = b
			return err
		},
	}
}

func duration(path, flag string, at func(*config) *metav1.Duration) field {
	return field{
		flag: flag, paths: []string{path},
		toFlag: func(c *config) (string, bool, error) {
			d := at(c).Duration
			return d.String(), d != 0, nil
		},
		fromFlag: func(c *config, v pflag.Value) error {
			d, err := time.ParseDuration(v.String())
			*at(c) = metav1.Duration{Duration: d}
			return err
		},
	}
}

func durationPtr(path, flag string, at func(*config) **metav1.Duration) field {
	return field{
		flag: flag, paths: []string{path},
		toFlag: func(c *config) (string, bool, error) {
			p := *at(c)
			if p == nil {
				return "", false, nil
			}
			return p.Duration.String(), true, nil
		},
		fromFlag: func(c *config, v pflag.Value) error {
			d, err := time.ParseDuration(v.String())
			*at(c) = &metav1.Duration{Duration: d}
			return err
		},
	}
}

func strSlice(path, flag string, at func(*config) *[]string) field {
	return field{
		flag: flag, paths: []string{path},
		toFlag: func(c *config) (string, bool, error) {
			s := *at(c)
			return strings.Join(s, ","), s != nil, nil
		},
		fromFlag: func(c *config, v pflag.Value) error {
			sv, ok := v.(pflag.SliceValue)
			if !ok {
				return fmt.Errorf("--%s is not a list flag", flag)
			}
			*at(c) = sv.GetSlice()
			return nil
		},
	}
}

// resourceMap is systemReserved or kubeReserved: {cpu: 100m} is the
// flag's cpu=100m.
func resourceMap(path, flag string, at func(*config) *map[string]string) field {
	return field{
		flag: flag, paths: []string{path},
		toFlag: func(c *config) (string, bool, error) {
			m := *at(c)
			return joinMap(m, "="), m != nil, nil
		},
		fromFlag: func(c *config, v pflag.Value) error {
			m, err := splitMap(v.String(), "=")
			*at(c) = m
			return err
		},
	}
}

// joinMap renders m as the flags' k<sep>v,... in key order.
func joinMap(m map[string]string, sep string) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+sep+m[k])
	}
	return strings.Join(parts, ",")
}

func splitMap(s, sep string) (map[string]string, error) {
	pairs, err := splitPairs(s, sep)
	m := make(map[string]string, len(pairs))
	for _, kv := range pairs {
		m[kv[0]] = kv[1]
	}
	return m, err
}

// splitPairs reads the flags' k<sep>v,... in order.
func splitPairs(s, sep string) ([][2]string, error) {
	var out [][2]string
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, sep)
		if !ok {
			return nil, fmt.Errorf("%q is not name%svalue", part, sep)
		}
		out = append(out, [2]string{strings.TrimSpace(k), strings.TrimSpace(v)})
	}
	return out, nil
}
