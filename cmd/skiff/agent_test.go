package main

import (
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/skiffnode/skiff/node"
)

// The agent runs on one P and GOGC 50 unless the environment says
// otherwise (issue 5: steady CPU and RSS with 110 pods).
func TestTuneGoRuntime(t *testing.T) {
	procs, gc := goruntime.GOMAXPROCS(0), debug.SetGCPercent(-1)
	debug.SetGCPercent(gc)
	t.Cleanup(func() { goruntime.GOMAXPROCS(procs); debug.SetGCPercent(gc) })
	tests := []struct {
		name              string
		envProcs, envGC   string
		wantProcs, wantGC int
	}{
		{"defaults", "", "", agentMaxProcs, agentGCPercent},
		{"environment wins", "3", "80", 3, 80},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("GOMAXPROCS", tt.envProcs)
			t.Setenv("GOGC", tt.envGC)
			// What the Go runtime would have read from the environment.
			goruntime.GOMAXPROCS(3)
			debug.SetGCPercent(80)
			tuneGoRuntime()
			if got := goruntime.GOMAXPROCS(0); got != tt.wantProcs {
				t.Errorf("GOMAXPROCS = %d, want %d", got, tt.wantProcs)
			}
			if got := debug.SetGCPercent(80); got != tt.wantGC {
				t.Errorf("GC percent = %d, want %d", got, tt.wantGC)
			}
		})
	}
}

// A negative --max-parallel-starts is refused before anything starts, with
// the flag named (issue 13: 0 is the adaptive default, N > 0 its bound).
func TestAgentRefusesNegativeMaxParallelStarts(t *testing.T) {
	cmd := newAgentCmd()
	cmd.SetArgs([]string{"--max-parallel-starts=-1", "--root-dir", t.TempDir()})
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(t.Context())
	if err == nil || !strings.Contains(err.Error(), "--max-parallel-starts -1") {
		t.Fatalf("err = %v, want one naming --max-parallel-starts -1", err)
	}
}

// A flag outside the kubelet's range for its field is refused before
// anything starts, with the flag and the range named: the restart back-off
// cap (1s..300s), the CFS period (1ms..1sec) and the memory throttling
// factor ((0, 1]; 0 is unset).
func TestAgentRefusesOutOfRangeFlags(t *testing.T) {
	tests := []struct {
		flag   string
		values []string
		want   string
	}{
		{"max-container-restart-period", []string{"500ms", "301s"}, "between 1s and 300s"},
		{"cpu-cfs-quota-period", []string{"0s", "500us", "2s"}, "between 1ms and 1sec"},
		{"memory-throttling-factor", []string{"-0.5", "1.5", "NaN"}, "greater than 0 and at most 1"},
		{"offline-pods", []string{"true"}, "needs an API server"},
	}
	for _, tt := range tests {
		for _, v := range tt.values {
			cmd := newAgentCmd()
			cmd.SetArgs([]string{"--" + tt.flag + "=" + v, "--root-dir", t.TempDir()})
			cmd.SilenceUsage, cmd.SilenceErrors = true, true
			err := cmd.ExecuteContext(t.Context())
			if err == nil || !strings.Contains(err.Error(), "--"+tt.flag) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("--%s=%s: err = %v, want one naming the flag and %q", tt.flag, v, err, tt.want)
			}
		}
	}
}

// TestAgentRefusesBadClusterDNS: a --cluster-dns entry that is not an IP
// address is refused before anything starts, naming the flag and value.
func TestAgentRefusesBadClusterDNS(t *testing.T) {
	cmd := newAgentCmd()
	cmd.SetArgs([]string{"--cluster-dns=10.96.0.10,kube-dns", "--root-dir", t.TempDir()})
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(t.Context())
	if err == nil || !strings.Contains(err.Error(), `--cluster-dns "kube-dns"`) || !strings.Contains(err.Error(), "not an IP address") {
		t.Errorf("err = %v, want one naming --cluster-dns and kube-dns", err)
	}
}

// Bad graceful shutdown settings are refused before anything starts, with
// the setting named (H.18, H.20).
func TestAgentRefusesBadShutdownGracePeriods_H18_H20(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
	}{
		{[]string{"--shutdown-grace-period=10s", "--shutdown-grace-period-critical-pods=20s"}, "shutdownGracePeriodCriticalPods 20s must be <= shutdownGracePeriod 10s"},
		{[]string{"--shutdown-grace-period=10s", "--shutdown-grace-period-by-pod-priority=0=10"}, "cannot specify both"},
		{[]string{"--shutdown-grace-period-by-pod-priority=0:10"}, `--shutdown-grace-period-by-pod-priority: "0:10" is not priority=seconds`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			cmd := newAgentCmd()
			cmd.SetArgs(append(tt.args, "--root-dir", t.TempDir()))
			cmd.SilenceUsage, cmd.SilenceErrors = true, true
			err := cmd.ExecuteContext(t.Context())
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestSecurityFlags_G15(t *testing.T) {
	cmd := newAgentCmd()
	if err := cmd.Flags().Parse([]string{"--seccomp-default", "--allowed-unsafe-sysctls=kernel.msg*,net.core.somaxconn"}); err != nil {
		t.Fatal(err)
	}
	v, _ := cmd.Flags().GetStringSlice("allowed-unsafe-sysctls")
	d, _ := cmd.Flags().GetBool("seccomp-default")
	if len(v) != 2 || v[0] != "kernel.msg*" || v[1] != "net.core.somaxconn" || !d {
		t.Errorf("flags: allowed-unsafe-sysctls %v, seccomp-default %v", v, d)
	}
}

// The GC and log rotation flags have the kubelet's names and defaults,
// and bad values are refused before anything starts (F.3, F.9).
func TestAgentGCFlags_F3_F9(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
	}{
		{args: nil},
		{args: []string{"--image-gc-high-threshold=1", "--image-gc-low-threshold=0", "--image-minimum-gc-age=0s"}},
		{args: []string{"--image-gc-high-threshold=80", "--image-gc-low-threshold=80"}, wantErr: "(--image-gc-low-threshold) 80 must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) 80"},
		{args: []string{"--image-gc-high-threshold=101"}, wantErr: "must be between 0 and 100"},
		{args: []string{"--image-maximum-gc-age=1m"}, wantErr: "imageMaximumGCAge 1m0s must be greater than imageMinimumGCAge 2m0s"},
		{args: []string{"--container-log-max-files=1"}, wantErr: "(--container-log-max-files) 1 must be greater than 1"},
		{args: []string{"--container-log-max-size=lots"}, wantErr: "--container-log-max-size"},
		{args: []string{"--container-log-monitor-interval=1s"}, wantErr: "greater than or equal to 3s"},
		{args: []string{"--container-log-max-workers=0"}, wantErr: "(--container-log-max-workers) 0"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			err := agentFlagsOf(t, tc.args).node.Validate()
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("validate() = %v, want %q", err, tc.wantErr)
			}
		})
	}
	o := gcOptionsOf(t, nil)
	if o.Image.HighThresholdPercent != 85 || o.Image.LowThresholdPercent != 80 || o.Image.MinAge.String() != "2m0s" || o.Image.MaxAge != 0 ||
		o.Container.MinAge != 0 || o.Container.MaxPerPodContainer != 1 || o.Container.MaxContainers != -1 ||
		o.LogMaxSize != "10Mi" || o.LogMaxFiles != 5 || o.LogMaxWorkers != 1 || o.LogMonitorInterval.String() != "10s" ||
		o.ImageGCPeriod.String() != "5m0s" || o.ContainerGCPeriod.String() != "1m0s" {
		t.Errorf("defaults %+v are not the kubelet's", o)
	}
}

// gcOptionsOf parses args with the agent's flags and returns the GC part.
func gcOptionsOf(t *testing.T, args []string) *node.GCConfig {
	t.Helper()
	return &agentFlagsOf(t, args).node.GC
}

// agentFlagsOf parses args with the agent's flags.
func agentFlagsOf(t *testing.T, args []string) *agentFlags {
	t.Helper()
	o := &agentFlags{}
	f := newAgentCmdWith(o).Flags()
	if err := f.Parse(args); err != nil {
		t.Fatal(err)
	}
	if err := o.complete(f); err != nil {
		t.Fatal(err)
	}
	return o
}

// TestControlPlaneFlags: --control-plane is off by default; with it, the
// flags that name another API server or another way to get the node's
// certificate are refused, naming them, as is a port out of range.
func TestControlPlaneFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" : valid
	}{
		{nil, ""},
		{[]string{"--kubeconfig=/k"}, ""},
		{[]string{"--control-plane"}, ""},
		{[]string{"--control-plane", "--kubeconfig=/k"}, "--kubeconfig"},
		{[]string{"--control-plane", "--bootstrap-kubeconfig=/b"}, "--bootstrap-kubeconfig"},
		{[]string{"--control-plane", "--rotate-certificates"}, "--rotate-certificates"},
		{[]string{"--control-plane", "--control-plane-port=70000"}, "--control-plane-port"},
		{[]string{"--control-plane", "--control-plane-cluster-dns", "--cluster-dns=10.96.0.53"}, ""},
		{[]string{"--control-plane", "--control-plane-cluster-dns", "--cluster-dns=192.0.2.53"}, "in its Service range 10.96.0.0/12"},
		{[]string{"--control-plane", "--control-plane-cluster-dns", "--cluster-dns=fd00::a"}, "--control-plane-cluster-dns=false"},
		{[]string{"--control-plane", "--control-plane-cluster-dns", "--cluster-domain="}, "--cluster-domain"},
		{[]string{"--control-plane", "--cluster-dns=192.0.2.53"}, "in its Service range 10.96.0.0/12"},
		{[]string{"--control-plane", "--control-plane-cluster-dns=false", "--cluster-dns=192.0.2.53", "--cluster-domain="}, ""},
	} {
		o := agentFlagsOf(t, tc.args)
		cp := o.node.ControlPlane
		if cp.Port != 6443 && tc.want == "" {
			t.Errorf("%v: port %d, want 6443 by default", tc.args, cp.Port)
		}
		err := o.node.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.args, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: err %v, want one naming %s", tc.args, err, tc.want)
		}
	}
}

// TestControlPlaneClusterDNS: with --control-plane-cluster-dns (the
// default) the pods' cluster DNS defaults to the control plane's,
// 10.96.0.10; an address given is kept; with it false or without
// --control-plane none is made up.
func TestControlPlaneClusterDNS(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--control-plane", "--control-plane-cluster-dns"}, []string{"10.96.0.10"}},
		{[]string{"--control-plane", "--control-plane-cluster-dns", "--cluster-dns=10.96.0.53,10.96.0.54"}, []string{"10.96.0.53", "10.96.0.54"}},
		{[]string{"--control-plane"}, []string{"10.96.0.10"}},
		{[]string{"--control-plane", "--control-plane-cluster-dns=false"}, nil},
		{[]string{"--control-plane", "--control-plane-cluster-dns=false", "--cluster-dns=192.0.2.53"}, []string{"192.0.2.53"}},
		{[]string{"--control-plane-cluster-dns"}, nil},
		{nil, nil},
		// The DNS's address is a cluster IP: without the service proxy
		// the control plane does not serve it.
		{[]string{"--control-plane", "--control-plane-service-proxy=false"}, nil},
		{[]string{"--control-plane", "--control-plane-service-proxy=false", "--cluster-dns=192.0.2.53"}, []string{"192.0.2.53"}},
	} {
		o := agentFlagsOf(t, tc.args)
		if err := o.node.Validate(); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if !slices.Equal(o.node.ClusterDNS, tc.want) {
			t.Errorf("%v: --cluster-dns %v, want %v", tc.args, o.node.ClusterDNS, tc.want)
		}
	}
}

// TestKubeAPIClientFlags: the API client's limits default to the
// kubelet's (50 QPS, burst 100), its content type to JSON; limits that are
// not positive and other content types are refused.
func TestKubeAPIClientFlags(t *testing.T) {
	var o node.APIConfig
	f := pflag.NewFlagSet("agent", pflag.ContinueOnError)
	addAPIFlags(f, &o)
	if err := f.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if o.KubeAPIQPS != 50 || o.KubeAPIBurst != 100 || o.KubeAPIContentType != "application/json" {
		t.Errorf("defaults: qps %v burst %d content type %q, want the kubelet's 50 and 100, and JSON",
			o.KubeAPIQPS, o.KubeAPIBurst, o.KubeAPIContentType)
	}
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--kube-api-qps=0"}, "--kube-api-qps"},
		{[]string{"--kube-api-burst=-1"}, "--kube-api-qps"},
		{[]string{"--kube-api-content-type=application/yaml"}, "--kube-api-content-type"},
	} {
		cmd := newAgentCmd()
		cmd.SetArgs(append(tc.args, "--kubeconfig="+kc, "--root-dir", t.TempDir()+"/never-created"))
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		err := cmd.ExecuteContext(t.Context())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want one naming %s", tc.args, err, tc.want)
		}
	}
}
