package kubeletconfig

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzParse: the configuration file (--config) is outside input. Parse
// never panics; every line of its error names the file; what it accepts
// Marshal writes, Parse reads back, and Marshal writes the same again
// (the written configuration is a fixed point).
// Run with: go test ./internal/kubeletconfig/ -run '^$' -fuzz '^FuzzParse$' -fuzztime 60s
func FuzzParse(f *testing.F) {
	for _, body := range []string{
		"",
		"maxPods: 20\ncpuManagerPolicy: none\n",
		"offlinePods: true\nstaticPodPath: /etc/skiff/manifests\nport: 0\nenableServer: false\n",
		"authentication: {x509: {clientCAFile: /ca.crt}, anonymous: {enabled: true}, webhook: {enabled: true, cacheTTL: 1m}}\nauthorization: {mode: Webhook}\n",
		"registerWithTaints: [{key: a, value: b, effect: NoSchedule}]\nevictionHard: {memory.available: 100Mi, nodefs.available: 10%}\n",
		"systemReserved: {cpu: 100m, memory: 1Gi}\nkubeReserved: {memory: 1Gi}\nclusterDNS: [10.96.0.10, 'fd00::a']\n",
		"logging: {verbosity: 4, flushFrequency: 5000000000}\nkubeAPIQPS: 25\nkubeAPIBurst: 30\n",
		"crashLoopBackOff: {maxContainerRestartPeriod: 1m}\ncpuCFSQuotaPeriod: 100ms\nmemoryThrottlingFactor: 0.9\n",
		"shutdownGracePeriodByPodPriority: [{priority: 0, shutdownGracePeriodSeconds: 30}]\nserializeImagePulls: false\nmaxParallelImagePulls: 3\n",
		"maxPods: 20\nmaxPods: 21\n",
		"nope: 1\n",
		"tlsCipherSuites: [TLS_AES_128_GCM_SHA256]\n",
	} {
		f.Add([]byte(header + body))
	}
	f.Add([]byte("apiVersion: v1\nkind: Pod\n"))
	f.Add([]byte(`{"apiVersion":"kubelet.config.k8s.io/v1beta1","kind":"KubeletConfiguration","syncFrequency":"1m"}`))
	const path = "/etc/skiff/config.yaml"
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(path, data)
		if err != nil {
			if file != nil {
				t.Fatalf("Parse returned a file and error %v", err)
			}
			for line := range strings.SplitSeq(err.Error(), "\n") {
				if !strings.HasPrefix(line, path+": ") && !strings.HasPrefix(line, "\t") && !strings.HasPrefix(line, " ") {
					t.Fatalf("error line %q does not name the file:\n%v", line, err)
				}
			}
			return
		}
		first, err := Marshal(file.Config)
		if err != nil {
			t.Fatalf("Marshal of an accepted file: %v", err)
		}
		back, err := Parse("written.yaml", first)
		if err != nil {
			t.Fatalf("the written configuration does not parse: %v\n%s", err, first)
		}
		second, err := Marshal(back.Config)
		if err != nil {
			t.Fatalf("Marshal of the written configuration: %v", err)
		}
		if !bytes.Equal(first, second) {
			t.Fatalf("Marshal(Parse(Marshal(c))) differs:\n%s\n---\n%s", first, second)
		}
	})
}
