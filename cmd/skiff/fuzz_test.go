package main

import (
	"strings"
	"testing"

	"github.com/skiffnode/skiff/internal/kubeletconfig"
)

// FuzzConfigFile: a --config file read onto the agent's real flags, as
// `skiff agent --config` does. Parsing and applying never panic; every
// line of an error names the file; a file that applies can be written
// back (--write-config: kubeletconfig.Check passes, the flags read back
// from the written configuration are the same).
// Run with: go test ./cmd/skiff/ -run '^$' -fuzz '^FuzzConfigFile$' -fuzztime 60s
func FuzzConfigFile(f *testing.F) {
	for _, body := range []string{
		"",
		"maxPods: 20\nstaticPodPath: /etc/skiff/manifests\npodLogsDir: /var/log/pods\n",
		"port: 10250\nauthorization: {mode: AlwaysAllow}\nauthentication: {anonymous: {enabled: true}}\n",
		"enableServer: false\nreadOnlyPort: 10255\naddress: 127.0.0.1\n",
		"registerWithTaints: [{key: a, value: b, effect: NoSchedule}, {key: c, effect: NoExecute}]\n",
		"evictionHard: {memory.available: 100Mi}\nsystemReserved: {cpu: 100m, memory: 1Gi}\nkubeReserved: {memory: 1Gi}\n",
		"clusterDNS: [10.96.0.10, 'fd00::a']\nclusterDomain: example.org\nresolvConf: \"\"\n",
		"nodeStatusUpdateFrequency: 20s\nnodeStatusReportFrequency: 1m\nnodeLeaseDurationSeconds: 60\n",
		"kubeAPIQPS: 25\nkubeAPIBurst: 30\ncontentType: application/vnd.kubernetes.protobuf\n",
		"logging: {verbosity: 4}\npodCIDR: 10.99.0.0/16\nruntimeRequestTimeout: 30s\n",
		"crashLoopBackOff: {maxContainerRestartPeriod: 1m}\ncpuCFSQuotaPeriod: 100ms\nmemoryThrottlingFactor: 0.8\n",
		"cgroupDriver: systemd\ncgroupRoot: /skiff\ncgroupsPerQOS: false\npodPidsLimit: 100\n",
		"imageGCHighThresholdPercent: 80\nimageGCLowThresholdPercent: 70\nimageMinimumGCAge: 1m\nimageMaximumGCAge: 24h\n",
		"containerLogMaxSize: 5Mi\ncontainerLogMaxFiles: 3\ncontainerLogMaxWorkers: 2\ncontainerLogMonitorInterval: 5s\n",
		"shutdownGracePeriod: 30s\nshutdownGracePeriodCriticalPods: 10s\n",
		"shutdownGracePeriodByPodPriority: [{priority: 0, shutdownGracePeriodSeconds: 30}, {priority: 100000, shutdownGracePeriodSeconds: 10}]\n",
		"serializeImagePulls: false\nmaxParallelImagePulls: 3\nallowedUnsafeSysctls: [net.core.somaxconn]\n",
		"seccompDefault: true\nsingleProcessOOMKill: true\nfailCgroupV1: false\nofflinePods: true\n",
		"maxPods: -1\n",
		"nodeStatusUpdateFrequency: -1s\n",
	} {
		f.Add([]byte(configHeader + body))
	}
	const path = "/etc/skiff/config.yaml"
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := kubeletconfig.Parse(path, data)
		if err != nil {
			return // kubeletconfig's FuzzParse checks Parse's errors
		}
		fs := newAgentCmd().Flags()
		if err := file.Apply(fs); err != nil {
			for line := range strings.SplitSeq(err.Error(), "\n") {
				if !strings.HasPrefix(line, path+": ") {
					t.Fatalf("Apply error line %q does not name the file:\n%v", line, err)
				}
			}
			return
		}
		cfg, err := kubeletconfig.FromFlags(fs)
		if err != nil {
			t.Fatalf("FromFlags after Apply: %v", err)
		}
		if err := kubeletconfig.Check(cfg, fs, newAgentCmd().Flags()); err != nil {
			t.Fatalf("the applied configuration cannot be written back: %v", err)
		}
		if _, err := kubeletconfig.Marshal(cfg); err != nil {
			t.Fatalf("Marshal: %v", err)
		}
	})
}

// A registerWithTaints entry that --register-with-taints would refuse or
// read as another taint is an error naming the file, the field and the
// taint when the file is applied (FuzzConfigFile's finding: such a file
// was accepted and failed only when the node registered, naming the
// flag, or when --write-config ran).
func TestConfigFileRefusesBadTaints(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{"empty taint", "registerWithTaints: [{}]\n", `field "registerWithTaints": taint 0: invalid taint effect`},
		{"unknown effect", "registerWithTaints: [{key: a, effect: NoSchedule}, {key: b, effect: Bogus}]\n", `field "registerWithTaints": taint 1: invalid taint effect: Bogus`},
		{"key not a qualified name", "registerWithTaints: [{key: 'a b', effect: NoSchedule}]\n", `field "registerWithTaints": taint 0: invalid taint spec`},
		{"key holding =", "registerWithTaints: [{key: 'a=b', effect: NoSchedule}]\n", `field "registerWithTaints": taint 0: key "a=b", value "": not a valid taint`},
		{"duplicate", "registerWithTaints: [{key: a, effect: NoSchedule}, {key: a, value: b, effect: NoSchedule}]\n", `field "registerWithTaints": duplicated taints`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeConfigFile(t, tt.body)
			_, err := parseAgent(t, "--config", path)
			if err == nil || !strings.Contains(err.Error(), path+": "+tt.want) {
				t.Fatalf("err = %v, want one with %q", err, path+": "+tt.want)
			}
		})
	}
	if _, err := parseAgent(t, "--config", writeConfigFile(t, "registerWithTaints: [{key: a, value: b, effect: NoSchedule}, {key: c, effect: NoExecute}]\n")); err != nil {
		t.Fatalf("valid taints: %v", err)
	}
}
