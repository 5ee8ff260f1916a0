package manifests

import (
	"os"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiffnode/skiff/podspec"
)

// The tests of the whole static-pod pipeline: Decode, then the neutral
// podspec's SetDefaults and Validate.

// TestPipelineFullManifest: the manifest using every supported field
// decodes, and passes validation once defaulted.
func TestPipelineFullManifest(t *testing.T) {
	data, err := os.ReadFile("testdata/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pods, err := Decode(data)
	if err != nil {
		t.Fatalf("Decode(full.yaml) error = %v", err)
	}
	podspec.SetDefaults(pods[0])
	if errs := podspec.Validate(pods[0]); len(errs) != 0 {
		t.Errorf("Validate(full.yaml) = %s", errorStrings(errs))
	}
}

// TestValidateAcceptsGeneratedBoilerplate: the empty fields kubectl and
// kubeadm emit ("creationTimestamp: null", "resources: {}", "status: {}")
// are not "unsupported fields".
func TestValidateAcceptsGeneratedBoilerplate(t *testing.T) {
	in := `apiVersion: v1
kind: Pod
metadata:
  creationTimestamp: null
  name: etcd
  namespace: kube-system
spec:
  containers:
  - name: etcd
    image: registry.k8s.io/etcd:3.5.15-0
    resources: {}
    securityContext: {}
  hostNetwork: true
  priorityClassName: system-node-critical
status: {}
`
	pods, err := Decode([]byte(in))
	if err != nil {
		t.Fatalf("Decode() error = %v", err)
	}
	podspec.SetDefaults(pods[0])
	if errs := podspec.Validate(pods[0]); len(errs) != 0 {
		t.Errorf("Validate() = %s", errorStrings(errs))
	}
}

// TestValidate_B13_B15_DefaultedProbesFromYAML: probes written with only
// their handler pass once SetDefaults filled in the timing fields.
func TestValidate_B13_B15_DefaultedProbesFromYAML(t *testing.T) {
	in := `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - name: app
    image: skiff.test/testserver:1
    ports: [{name: http, containerPort: 8080}]
    startupProbe: {exec: {command: [cat, /tmp/started]}}
    readinessProbe: {httpGet: {port: http}}
    livenessProbe: {tcpSocket: {port: 8080}, terminationGracePeriodSeconds: 3}
  - name: rpc
    image: skiff.test/testserver:1
    livenessProbe: {grpc: {port: 9090, service: health}}
`
	pods, err := Decode([]byte(in))
	if err != nil {
		t.Fatalf("Decode() error = %v", err)
	}
	podspec.SetDefaults(pods[0])
	if errs := podspec.Validate(pods[0]); len(errs) != 0 {
		t.Errorf("Validate() = %s", errorStrings(errs))
	}
	if p := pods[0].Spec.Containers[0].ReadinessProbe; p.PeriodSeconds != 10 || p.HTTPGet.Path != "/" || p.HTTPGet.Scheme != v1.URISchemeHTTP {
		t.Errorf("readiness probe not defaulted: %+v", p)
	}
}

func errorStrings(errs field.ErrorList) string {
	var b strings.Builder
	for _, e := range errs {
		b.WriteString(e.Error())
		b.WriteString("\n")
	}
	return b.String()
}
