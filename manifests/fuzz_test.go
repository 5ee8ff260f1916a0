package manifests

import (
	"os"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/skiffnode/skiff/podspec"
)

// FuzzDecode: Decode and podspec's SetDefaults and Validate never panic;
// SetDefaults is idempotent; Validate is deterministic and does not modify
// the pod.
// Run with: go test ./manifests/ -run '^$' -fuzz FuzzDecode -fuzztime 60s
func FuzzDecode(f *testing.F) {
	if full, err := os.ReadFile("testdata/full.yaml"); err == nil {
		f.Add(full)
	}
	for _, seed := range []string{
		podYAML("a"),
		podYAML("a") + "---\n" + podYAML("b"),
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"j"},"spec":{"containers":[{"name":"c","image":"x","ports":[{"containerPort":80}]}]}}`,
		"apiVersion: v1\nkind: Pod\nspec:\n  hostNetwork: true\n  containers:\n  - {name: c, image: x, ports: [{containerPort: 1, hostPort: 2}], resources: {limits: {cpu: 1.5}}}\n",
		"apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: c\n    livenessProbe: {httpGet: {port: http}}\n    env: [{name: A, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]\n",
		"a: &a [x]\nb: [*a, *a]\n",
		"---\n--- #c\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		pods, err := Decode(data)
		if err != nil {
			if pods != nil {
				t.Fatalf("Decode returned pods and error %v", err)
			}
			return
		}
		for _, pod := range pods {
			podspec.SetDefaults(pod)
			again := pod.DeepCopy()
			podspec.SetDefaults(again)
			if !apiequality.Semantic.DeepEqual(pod, again) {
				t.Fatalf("SetDefaults is not idempotent")
			}
			before := pod.DeepCopy()
			first := podspec.Validate(pod).ToAggregate()
			second := podspec.Validate(pod).ToAggregate()
			if errString(first) != errString(second) {
				t.Fatalf("Validate is not deterministic:\n%v\n%v", first, second)
			}
			if !apiequality.Semantic.DeepEqual(pod, before) {
				t.Fatalf("Validate modified the pod")
			}
		}
	})
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// FuzzDecodeManifest: DecodeManifest and the object defaults and
// validation never panic; validation is deterministic; Decode accepts a
// subset of what DecodeManifest accepts.
// Run with: go test ./manifests/ -run '^$' -fuzz FuzzDecodeManifest -fuzztime 60s
func FuzzDecodeManifest(f *testing.F) {
	for _, seed := range []string{
		podYAML("a") + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: b}\nbinaryData: {b: aGk=}\n",
		"apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ntype: kubernetes.io/tls\ndata: {tls.crt: eA==}\nstringData: {tls.key: k}\n",
		`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"..":"!!"}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeManifest(data)
		if err != nil {
			if m != nil {
				t.Fatalf("DecodeManifest returned objects and error %v", err)
			}
			if pods, perr := Decode(data); perr == nil {
				t.Fatalf("Decode accepted %d pods that DecodeManifest rejects: %v", len(pods), err)
			}
			return
		}
		for _, cm := range m.ConfigMaps {
			cm.Namespace = "default"
			if a, b := errString(podspec.ValidateConfigMap(cm).ToAggregate()), errString(podspec.ValidateConfigMap(cm).ToAggregate()); a != b {
				t.Fatalf("ValidateConfigMap is not deterministic:\n%v\n%v", a, b)
			}
		}
		for _, s := range m.Secrets {
			s.Namespace = "default"
			podspec.SetSecretDefaults(s)
			if a, b := errString(podspec.ValidateSecret(s).ToAggregate()), errString(podspec.ValidateSecret(s).ToAggregate()); a != b {
				t.Fatalf("ValidateSecret is not deterministic:\n%v\n%v", a, b)
			}
		}
	})
}
