package kubeletconfig

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"
)

const header = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"

// Unsupported fields are found wherever they are: top level, nested,
// inline (logging's output routing), with every offender listed.
func TestParseUnsupportedFields(t *testing.T) {
	tests := []struct {
		name, body string
		want       []string // paths reported, in order
	}{
		{"none", "maxPods: 20\ncpuManagerPolicy: none\n", nil},
		{"skiff's own field", "offlinePods: true\n", nil},
		{"top level", "cpuManagerPolicy: static\nmaxOpenFiles: 10\n", []string{"cpuManagerPolicy", "maxOpenFiles"}},
		{"nested", "authorization: {webhook: {cacheAuthorizedTTL: 1s}}\n", []string{"authorization.webhook.cacheAuthorizedTTL"}},
		{"inline struct", "logging: {options: {text: {splitStream: true}}}\n", []string{"logging.options.text.splitStream"}},
		{"default spelled as nanoseconds", "logging: {flushFrequency: 5000000000}\n", nil},
		{"pointer at zero, default non-zero", "failSwapOn: false\n", []string{"failSwapOn"}},
		{"list", "tlsCipherSuites: [TLS_AES_128_GCM_SHA256]\n", []string{"tlsCipherSuites"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(header+tt.body))
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tt.want) {
				t.Fatalf("errors:\n%v\nwant %d", err, len(tt.want))
			}
			for i, p := range tt.want {
				if want := `c.yaml: field "` + p + `" is not supported by skiff`; !strings.HasPrefix(lines[i], want) {
					t.Errorf("error %q, want prefix %q", lines[i], want)
				}
			}
		})
	}
}

// Marshal writes the fields skiff supports and nothing else, apiVersion
// and kind first; Parse reads it back to the same fields.
func TestMarshalSupportedFieldsOnly(t *testing.T) {
	c := &Configuration{OfflinePods: true, KubeletConfiguration: v1beta1.KubeletConfiguration{
		MaxPods:             30,
		CPUManagerPolicy:    "static",
		SyncFrequency:       metav1.Duration{Duration: time.Minute},
		HealthzPort:         ptr.To[int32](1),
		CgroupsPerQOS:       ptr.To(false),
		ShutdownGracePeriod: metav1.Duration{Duration: 30 * time.Second},
		Authentication: v1beta1.KubeletAuthentication{
			X509:    v1beta1.KubeletX509Authentication{ClientCAFile: "/ca.crt"},
			Webhook: v1beta1.KubeletWebhookAuthentication{CacheTTL: metav1.Duration{Duration: time.Minute}},
		},
	}}
	out, err := Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	want := header + `authentication:
  x509:
    clientCAFile: /ca.crt
cgroupsPerQOS: false
containerRuntimeEndpoint: ""
imageMaximumGCAge: 0s
imageMinimumGCAge: 0s
logging:
  verbosity: 0
maxPods: 30
nodeStatusReportFrequency: 0s
nodeStatusUpdateFrequency: 0s
offlinePods: true
runtimeRequestTimeout: 0s
shutdownGracePeriod: 30s
shutdownGracePeriodCriticalPods: 0s
`
	if string(out) != want {
		t.Errorf("got:\n%s\nwant:\n%s", out, want)
	}
	f, err := Parse("out.yaml", out)
	if err != nil {
		t.Fatal(err)
	}
	if f.Config.MaxPods != 30 || !f.Config.OfflinePods || *f.Config.CgroupsPerQOS || f.Config.Authentication.X509.ClientCAFile != "/ca.crt" || f.Config.ShutdownGracePeriod.Duration != 30*time.Second {
		t.Errorf("read back: %+v", f.Config)
	}
}
