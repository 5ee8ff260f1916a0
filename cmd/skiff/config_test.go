package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/skiffnode/skiff/internal/kubeletconfig"
)

const configHeader = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"

// writeFile writes a configuration file with body under the header.
func writeConfigFile(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(configHeader+body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// parseAgent parses args as `skiff agent` would and applies --config,
// without running the agent.
func parseAgent(t *testing.T, args ...string) (*cobra.Command, error) {
	t.Helper()
	cmd := newAgentCmd()
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	file, _ := cmd.Flags().GetString("config")
	o := &configOptions{file: file}
	return cmd, o.load(cmd.Flags())
}

// Each field skiff supports sets its flag (issue 18, "Configuration
// file"); the table must name every field of kubeletconfig.Bindings.
func TestConfigFileSetsEachField(t *testing.T) {
	tests := []struct {
		path string
		yaml string
		flag string
		want string
	}{
		{"staticPodPath", "staticPodPath: /etc/skiff/pods", "pod-manifest-path", "/etc/skiff/pods"},
		{"containerRuntimeEndpoint", "containerRuntimeEndpoint: unix:///run/crio.sock", "container-runtime-endpoint", "unix:///run/crio.sock"},
		{"podLogsDir", "podLogsDir: /logs", "pod-logs-dir", "/logs"},
		{"address", "address: 0.0.0.0", "address", "0.0.0.0"},
		{"readOnlyPort", "readOnlyPort: 10255", "read-only-port", "10255"},
		{"port", "port: 11250", "port", "11250"},
		{"enableServer", "enableServer: false\nport: 11250", "port", "0"},
		{"tlsCertFile", "tlsCertFile: /pki/c.crt", "tls-cert-file", "/pki/c.crt"},
		{"tlsPrivateKeyFile", "tlsPrivateKeyFile: /pki/c.key", "tls-private-key-file", "/pki/c.key"},
		{"authentication.x509.clientCAFile", "authentication: {x509: {clientCAFile: /pki/ca.crt}}", "client-ca-file", "/pki/ca.crt"},
		{"authentication.anonymous.enabled", "authentication: {anonymous: {enabled: true}}", "anonymous-auth", "true"},
		{"authentication.webhook.enabled", "authentication: {webhook: {enabled: true}}", "authentication-token-webhook", "true"},
		{"authorization.mode", "authorization: {mode: Webhook}", "authorization-mode", "Webhook"},
		{"rotateCertificates", "rotateCertificates: true", "rotate-certificates", "true"},
		{"registerNode", "registerNode: false", "register-node", "false"},
		{"registerWithTaints", "registerWithTaints: [{key: a, value: b, effect: NoSchedule}, {key: c, effect: NoExecute}]", "register-with-taints", "a=b:NoSchedule,c:NoExecute"},
		{"nodeStatusUpdateFrequency", "nodeStatusUpdateFrequency: 20s", "node-status-update-frequency", "20s"},
		{"nodeStatusReportFrequency", "nodeStatusReportFrequency: 1m", "node-status-report-frequency", "1m0s"},
		{"nodeStatusReportFrequency from nodeStatusUpdateFrequency", "nodeStatusUpdateFrequency: 20s", "node-status-report-frequency", "20s"},
		{"nodeLeaseDurationSeconds", "nodeLeaseDurationSeconds: 60", "node-lease-duration-seconds", "60"},
		{"kubeAPIQPS", "kubeAPIQPS: 25", "kube-api-qps", "25"},
		{"kubeAPIBurst", "kubeAPIBurst: 30", "kube-api-burst", "30"},
		{"contentType", "contentType: application/vnd.kubernetes.protobuf", "kube-api-content-type", "application/vnd.kubernetes.protobuf"},
		{"offlinePods", "offlinePods: true", "offline-pods", "true"},
		{"logging.verbosity", "logging: {verbosity: 4}", "v", "4"},
		{"podCIDR", "podCIDR: 10.99.0.0/16", "pod-cidr", "10.99.0.0/16"},
		{"resolvConf", `resolvConf: ""`, "resolv-conf", ""},
		{"clusterDomain", "clusterDomain: example.org", "cluster-domain", "example.org"},
		{"clusterDNS", "clusterDNS: [10.96.0.10, 'fd00::a']", "cluster-dns", "[10.96.0.10,fd00::a]"},
		{"runtimeRequestTimeout", "runtimeRequestTimeout: 30s", "runtime-request-timeout", "30s"},
		{"crashLoopBackOff.maxContainerRestartPeriod", "crashLoopBackOff: {maxContainerRestartPeriod: 1m}", "max-container-restart-period", "1m0s"},
		{"cgroupDriver", "cgroupDriver: systemd", "cgroup-driver", "systemd"},
		{"cgroupRoot", "cgroupRoot: /skiff", "cgroup-root", "/skiff"},
		{"cgroupsPerQOS", "cgroupsPerQOS: false", "cgroups-per-qos", "false"},
		{"systemReserved", "systemReserved: {memory: 256Mi, cpu: 100m}", "system-reserved", "cpu=100m,memory=256Mi"},
		{"kubeReserved", "kubeReserved: {cpu: 200m}", "kube-reserved", "cpu=200m"},
		{"evictionHard", "evictionHard: {memory.available: 200Mi, nodefs.available: 10%}", "eviction-hard", "memory.available<200Mi"},
		{"maxPods", "maxPods: 20", "max-pods", "20"},
		{"podPidsLimit", "podPidsLimit: 1024", "pod-max-pids", "1024"},
		{"cpuCFSQuotaPeriod", "cpuCFSQuotaPeriod: 50ms", "cpu-cfs-quota-period", "50ms"},
		{"memoryThrottlingFactor", "memoryThrottlingFactor: 0.8", "memory-throttling-factor", "0.8"},
		{"singleProcessOOMKill", "singleProcessOOMKill: true", "single-process-oom-kill", "true"},
		{"failCgroupV1", "failCgroupV1: true", "fail-cgroupv1", "true"},
		{"seccompDefault", "seccompDefault: true", "seccomp-default", "true"},
		{"allowedUnsafeSysctls", "allowedUnsafeSysctls: ['kernel.msg*', net.core.somaxconn]", "allowed-unsafe-sysctls", "[kernel.msg*,net.core.somaxconn]"},
		{"serializeImagePulls", "serializeImagePulls: false", "serialize-image-pulls", "false"},
		{"maxParallelImagePulls", "maxParallelImagePulls: 3", "max-parallel-image-pulls", "3"},
		{"maxParallelImagePulls sets serializeImagePulls", "maxParallelImagePulls: 3", "serialize-image-pulls", "false"},
		{"serializeImagePulls wins over maxParallelImagePulls", "maxParallelImagePulls: 3\nserializeImagePulls: true", "serialize-image-pulls", "true"},
		{"imageGCHighThresholdPercent", "imageGCHighThresholdPercent: 90", "image-gc-high-threshold", "90"},
		{"imageGCLowThresholdPercent", "imageGCLowThresholdPercent: 0", "image-gc-low-threshold", "0"},
		{"imageMinimumGCAge", "imageMinimumGCAge: 5m", "image-minimum-gc-age", "5m0s"},
		{"imageMaximumGCAge", "imageMaximumGCAge: 24h", "image-maximum-gc-age", "24h0m0s"},
		{"containerLogMaxSize", "containerLogMaxSize: 50Mi", "container-log-max-size", "50Mi"},
		{"containerLogMaxFiles", "containerLogMaxFiles: 3", "container-log-max-files", "3"},
		{"containerLogMaxWorkers", "containerLogMaxWorkers: 2", "container-log-max-workers", "2"},
		{"containerLogMonitorInterval", "containerLogMonitorInterval: 30s", "container-log-monitor-interval", "30s"},
		{"shutdownGracePeriod", "shutdownGracePeriod: 30s", "shutdown-grace-period", "30s"},
		{"shutdownGracePeriodCriticalPods", "shutdownGracePeriodCriticalPods: 10s", "shutdown-grace-period-critical-pods", "10s"},
		{"shutdownGracePeriodByPodPriority", "shutdownGracePeriodByPodPriority: [{priority: 100000, shutdownGracePeriodSeconds: 10}, {priority: 0, shutdownGracePeriodSeconds: 60}]", "shutdown-grace-period-by-pod-priority", "100000=10,0=60"},
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.path] = true
		t.Run(tt.path, func(t *testing.T) {
			cmd, err := parseAgent(t, "--config", writeConfigFile(t, tt.yaml+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			fl := cmd.Flags().Lookup(tt.flag)
			if got := fl.Value.String(); got != tt.want {
				t.Errorf("--%s = %q, want %q", tt.flag, got, tt.want)
			}
			if got := fl.Value.String(); got == fl.DefValue && !strings.Contains(tt.path, " wins ") {
				t.Errorf("--%s kept its default %q: the test must set another value", tt.flag, got)
			}
		})
	}
	for _, b := range kubeletconfig.Bindings() {
		if !covered[b.Path] {
			t.Errorf("field %s (--%s) has no case here", b.Path, b.Flag)
		}
	}
}

// A flag given on the command line wins over the file, wherever it is on
// the line; the file wins over the flags' defaults.
func TestConfigFlagWinsOverFile(t *testing.T) {
	path := writeConfigFile(t, "maxPods: 20\nclusterDomain: example.org\nseccompDefault: true\n")
	for _, args := range [][]string{
		{"--max-pods", "50", "--seccomp-default=false", "--config", path},
		{"--config", path, "--max-pods=50", "--seccomp-default=false"},
	} {
		cmd, err := parseAgent(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		f := cmd.Flags()
		for flag, want := range map[string]string{"max-pods": "50", "seccomp-default": "false", "cluster-domain": "example.org"} {
			if got := f.Lookup(flag).Value.String(); got != want {
				t.Errorf("%v: --%s = %q, want %q", args, flag, got, want)
			}
		}
	}
}

// Bad files are refused with the file and the field named.
func TestConfigFileErrors(t *testing.T) {
	tests := []struct {
		name, body string
		want       []string
	}{
		{"unknown field", "cpuManagerPolicyX: static\n", []string{"config.yaml", `unknown field "cpuManagerPolicyX"`}},
		{"unknown nested field", "authentication: {x509: {clientCA: /ca}}\n", []string{`unknown field "authentication.x509.clientCA"`}},
		{"wrong case", "MaxPods: 20\n", []string{`unknown field "MaxPods"`}},
		{"duplicate field", "maxPods: 20\nmaxPods: 30\n", []string{"config.yaml", `"maxPods"`}},
		{"unsupported field", "cpuManagerPolicy: static\n", []string{"config.yaml", `field "cpuManagerPolicy" is not supported by skiff`, `"none"`}},
		{"unsupported nested field", "authentication: {webhook: {cacheTTL: 1m}}\n", []string{`field "authentication.webhook.cacheTTL" is not supported by skiff`}},
		{"unsupported field without default", "featureGates: {NodeSwap: true}\n", []string{`field "featureGates" is not supported by skiff`}},
		{"unsupported logging format", "logging: {format: json}\n", []string{`field "logging.format" is not supported by skiff`}},
		{"unsupported eviction signal", "evictionHard: {memory.available: 100Mi, nodefs.available: 20%}\n", []string{"config.yaml", `field "evictionHard"`, `"nodefs.available" is not supported by skiff`}},
		{"bad value", "maxPods: many\n", []string{"config.yaml", "maxPods"}},
		{"bad quantity value", "podPidsLimit: 1.5\n", []string{"config.yaml", "podPidsLimit"}},
		{"memoryThrottlingFactor out of range", "memoryThrottlingFactor: 1.5\n", []string{"config.yaml", `field "memoryThrottlingFactor"`, "greater than 0 and at most 1"}},
		{"memoryReservationPolicy not supported", "memoryReservationPolicy: TieredReservation\n", []string{"config.yaml", `field "memoryReservationPolicy" is not supported by skiff`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseAgent(t, "--config", writeConfigFile(t, tt.body))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	t.Run("wrong kind", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(path, []byte("apiVersion: kubelet.config.k8s.io/v1\nkind: KubeletConfiguration\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := parseAgent(t, "--config", path)
		if err == nil || !strings.Contains(err.Error(), `apiVersion "kubelet.config.k8s.io/v1"`) {
			t.Errorf("err = %v, want one naming the apiVersion", err)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		_, err := parseAgent(t, "--config", filepath.Join(t.TempDir(), "none.yaml"))
		if err == nil || !strings.Contains(err.Error(), "none.yaml") {
			t.Errorf("err = %v, want one naming the file", err)
		}
	})
}

// A file that spells out the kubelet's defaults for fields skiff does
// not support (as kubeadm writes them) is accepted.
func TestConfigFileAcceptsKubeletDefaults(t *testing.T) {
	body := `cpuManagerPolicy: none
cpuManagerReconcilePeriod: 10s
syncFrequency: 1m0s
fileCheckFrequency: 20s
httpCheckFrequency: 20s
healthzBindAddress: 127.0.0.1
healthzPort: 10248
oomScoreAdj: -999
registryPullQPS: 5
registryBurst: 10
eventRecordQPS: 50
eventBurst: 100
streamingConnectionIdleTimeout: 4h0m0s
volumeStatsAggPeriod: 1m0s
memoryManagerPolicy: None
topologyManagerPolicy: none
topologyManagerScope: container
hairpinMode: promiscuous-bridge
cpuCFSQuota: true
cpuCFSQuotaPeriod: 100ms
maxOpenFiles: 1000000
failSwapOn: true
enforceNodeAllocatable: [pods]
evictionHard: {imagefs.available: 15%, imagefs.inodesFree: 5%, memory.available: 100Mi, nodefs.available: 10%, nodefs.inodesFree: 5%}
evictionPressureTransitionPeriod: 5m0s
enableDebuggingHandlers: true
volumePluginDir: /usr/libexec/kubernetes/kubelet-plugins/volume/exec/
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true, cacheTTL: 2m0s}
  x509: {clientCAFile: /etc/kubernetes/pki/ca.crt}
authorization:
  mode: AlwaysAllow
  webhook: {cacheAuthorizedTTL: 5m0s, cacheUnauthorizedTTL: 30s}
logging:
  flushFrequency: 5s
  format: text
  verbosity: 0
  options: {json: {infoBufferSize: "0"}, text: {infoBufferSize: "0"}}
shutdownGracePeriod: 0s
`
	cmd, err := parseAgent(t, "--config", writeConfigFile(t, body))
	if err != nil {
		t.Fatal(err)
	}
	if got := cmd.Flags().Lookup("eviction-hard").Value.String(); got != "memory.available<100Mi" {
		t.Errorf("--eviction-hard = %q", got)
	}
}

// runAgentCmd runs `skiff agent args...` and returns its output.
func runAgentCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newAgentCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs(args)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(t.Context())
	return out.String(), err
}

// --write-config prints the effective configuration; fed back with
// --config (and no flags) it gives the same flags and prints the same.
func TestWriteConfigRoundTrip(t *testing.T) {
	file := writeConfigFile(t, "maxPods: 30\nshutdownGracePeriod: 30s\nshutdownGracePeriodCriticalPods: 10s\n")
	tests := []struct {
		name string
		args []string
		want []string // lines of the written configuration
	}{
		{"defaults", nil, []string{"maxPods: 110", "enableServer: false"}},
		{"flags", []string{
			"--pod-manifest-path", "/etc/skiff/pods", "--address", "0.0.0.0", "--read-only-port", "10255",
			"--port", "11250", "--anonymous-auth=false", "--client-ca-file", "/ca.crt", "--register-with-taints", "a=b:NoSchedule,c:NoExecute",
			"--resolv-conf", "", "--system-reserved", "cpu=100m,memory=256Mi", "--eviction-hard", "memory.available<1Gi",
			"--allowed-unsafe-sysctls", "kernel.msg*,net.core.somaxconn", "--serialize-image-pulls=false", "--max-parallel-image-pulls", "4",
			"--cgroups-per-qos=false", "--v", "4", "--kube-api-qps", "20", "--image-maximum-gc-age", "1h",
			"--shutdown-grace-period-by-pod-priority", "100000=10,0=60",
		}, []string{"port: 11250", "  memory.available: 1Gi", "resolvConf: \"\"", "- effect: NoExecute\n  key: c", "- priority: 100000\n  shutdownGracePeriodSeconds: 10"}},
		{"joining without --port", []string{"--kubeconfig", "/etc/skiff/kubeconfig"}, []string{"port: 10250"}},
		{"file and flags", []string{"--config", file, "--max-pods", "40"}, []string{"maxPods: 40", "shutdownGracePeriod: 30s", "shutdownGracePeriodCriticalPods: 10s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first, err := runAgentCmd(t, append(tt.args, "--write-config")...)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(first, "\n"+w+"\n") {
					t.Errorf("written configuration has no line %q:\n%s", w, first)
				}
			}
			written := filepath.Join(t.TempDir(), "written.yaml")
			if err := os.WriteFile(written, []byte(first), 0o600); err != nil {
				t.Fatal(err)
			}
			// The flags that are not in a configuration file come again.
			var again []string
			if slices.Contains(tt.args, "--kubeconfig") {
				again = []string{"--kubeconfig", "/etc/skiff/kubeconfig"}
			}
			second, err := runAgentCmd(t, append(again, "--config", written, "--write-config")...)
			if err != nil {
				t.Fatal(err)
			}
			if first != second {
				t.Errorf("written again:\n%s\nwant:\n%s", second, first)
			}
			from, _ := parseAgent(t, tt.args...)
			back, err := parseAgent(t, append(again, "--config", written)...)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range kubeletconfig.Bindings() {
				switch b.Flag {
				case "port", "authentication-token-webhook", "authorization-mode":
					// The agent's defaults for absent flags that depend on
					// how it runs apply after parsing (kubeletAPIOptions.
					// resolve); the file holds them resolved.
					continue
				}
				if w, g := from.Flags().Lookup(b.Flag).Value.String(), back.Flags().Lookup(b.Flag).Value.String(); w != g {
					t.Errorf("--%s = %q read back, want %q", b.Flag, g, w)
				}
			}
		})
	}
}

// --write-config refuses a value that the file would read as something
// else rather than print a configuration that means another thing.
func TestWriteConfigRefusesUnwritableValues(t *testing.T) {
	for _, args := range [][]string{
		{"--image-minimum-gc-age", "0s"}, // imageMinimumGCAge 0: the default, 2m
		{"--kube-api-qps", "2.5"},        // kubeAPIQPS is an integer
	} {
		_, err := runAgentCmd(t, append(args, "--write-config")...)
		if err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("%v: err = %v, want one naming %s", args, err, args[0])
		}
	}
}

// The kubelet API's port given in the file counts as given: a node that
// joins no API server serves it; enableServer: false turns it off.
func TestConfigFilePortCountsAsGiven(t *testing.T) {
	tests := []struct {
		name, body string
		args       []string
		want       string
	}{
		{"standalone, no port", "maxPods: 20\n", nil, "port: "},
		{"standalone, port in file", "port: 10250\nauthorization: {mode: AlwaysAllow}\n", nil, "port: 10250"},
		{"joining, server off", "enableServer: false\n", []string{"--kubeconfig", "/k"}, "enableServer: false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := runAgentCmd(t, append(tt.args, "--config", writeConfigFile(t, tt.body), "--write-config")...)
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == "port: " {
				if !strings.Contains(out, "enableServer: false") {
					t.Errorf("output has no enableServer: false:\n%s", out)
				}
				return
			}
			if !strings.Contains(out, tt.want) {
				t.Errorf("output has no %q:\n%s", tt.want, out)
			}
		})
	}
}

// docs/config-file.md, the hand-written page beside the generated
// reference, names every field skiff supports and its flag in its table of
// where a left-out field differs from the kubelet's.
func TestConfigFilePageListsConfigFields(t *testing.T) {
	data, err := os.ReadFile("../../docs/config-file.md")
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	for _, b := range kubeletconfig.Bindings() {
		if !strings.Contains(page, "`"+b.Path+"`") {
			t.Errorf("docs/config-file.md does not list %s", b.Path)
		}
		if !strings.Contains(page, "`--"+b.Flag+"`") {
			t.Errorf("docs/config-file.md does not name --%s", b.Flag)
		}
	}
}

// A --config file that leaves authentication and authorization out gets
// the kubelet's v1beta1 defaults for them when the agent joins an API
// server (issue 29): anonymous requests refused, TokenReview, Webhook;
// without one, Webhook and TokenReview cannot work and the file gets
// AlwaysAllow of authenticated requests. What the file sets is kept.
func TestConfigFileKubeletAPIAuthDefaults(t *testing.T) {
	bare := writeConfigFile(t, "maxPods: 30\n")
	open := writeConfigFile(t, "authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}\nauthorization: {mode: AlwaysAllow}\n")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"joined, left out", []string{"--config", bare, "--kubeconfig", "/k"},
			"authentication:\n  anonymous:\n    enabled: false\n  webhook:\n    enabled: true\nauthorization:\n  mode: Webhook\n"},
		{"static with --port, left out", []string{"--config", bare, "--port", "10250", "--client-ca-file", "/ca.crt"},
			"authentication:\n  anonymous:\n    enabled: false\n  webhook:\n    enabled: false\n  x509:\n    clientCAFile: /ca.crt\nauthorization:\n  mode: AlwaysAllow\n"},
		{"joined, opened by the file", []string{"--config", open, "--kubeconfig", "/k"},
			"authentication:\n  anonymous:\n    enabled: true\n  webhook:\n    enabled: false\nauthorization:\n  mode: AlwaysAllow\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runAgentCmd(t, append(tc.args, "--write-config")...)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, tc.want) {
				t.Errorf("written configuration has no\n%s\nin:\n%s", tc.want, out)
			}
		})
	}
}
