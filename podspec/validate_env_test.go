package podspec

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestValidateEnv_G3: every environment, downward-API and host-alias rule
// is one case; want lists every error (each a substring of one), in order.
func TestValidateEnv_G3(t *testing.T) {
	env := func(e ...v1.EnvVar) func(p *v1.Pod) {
		return func(p *v1.Pod) { p.Spec.Containers[0].Env = e }
	}
	envFrom := func(e ...v1.EnvFromSource) func(p *v1.Pod) {
		return func(p *v1.Pod) { p.Spec.Containers[0].EnvFrom = e }
	}
	field := func(path string) *v1.EnvVarSource {
		return &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}
	}
	res := func(r, divisor string) *v1.EnvVarSource {
		s := &v1.ResourceFieldSelector{Resource: r}
		if divisor != "" {
			s.Divisor = resource.MustParse(divisor)
		}
		return &v1.EnvVarSource{ResourceFieldRef: s}
	}
	cmKey := func(name, key string) *v1.EnvVarSource {
		return &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: name}, Key: key}}
	}
	secKey := func(name, key string) *v1.EnvVarSource {
		return &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: name}, Key: key}}
	}
	cmFrom := func(prefix, name string) v1.EnvFromSource {
		return v1.EnvFromSource{Prefix: prefix, ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: name}}}
	}
	secFrom := func(name string) v1.EnvFromSource {
		return v1.EnvFromSource{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: name}}}
	}
	const c0 = "spec.containers[0]."
	tests := []struct {
		name   string
		mutate func(p *v1.Pod)
		want   []string
	}{
		// names
		{"relaxed env name accepted", env(v1.EnvVar{Name: "1.dotted-name", Value: "x"}), nil},
		{"env name with =", env(v1.EnvVar{Name: "A=B"}), []string{c0 + `env[0].name: Invalid value: "A=B"`}},
		// valueFrom shape
		{"fileKeyRef from an emptyDir", func(p *v1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: "cfg", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}})
			p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "A", ValueFrom: &v1.EnvVarSource{FileKeyRef: &v1.FileKeySelector{VolumeName: "cfg", Path: "app.env", Key: "A"}}}}
		}, nil},
		{"fileKeyRef rules", func(p *v1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/tmp"}}})
			p.Spec.Containers[0].Env = []v1.EnvVar{
				{Name: "A", ValueFrom: &v1.EnvVarSource{FileKeyRef: &v1.FileKeySelector{VolumeName: "host", Path: "../x", Key: "A"}}},
				{Name: "B", ValueFrom: &v1.EnvVarSource{FileKeyRef: &v1.FileKeySelector{VolumeName: "gone", Path: "p", Key: ""}}},
			}
		}, []string{`spec.containers[0].env[0].valueFrom.fileKeyRef.path: Invalid value: "../x": must not contain '..'`,
			"spec.containers[0].env[1].valueFrom.fileKeyRef.key: Required value",
			`spec.containers[0].env[0].valueFrom.fileKeyRef.volumeName: Invalid value: "host": referenced volume must be an emptyDir`,
			`spec.containers[0].env[1].valueFrom.fileKeyRef.volumeName: Not found: "gone"`}},
		{"valueFrom without source", env(v1.EnvVar{Name: "A", ValueFrom: &v1.EnvVarSource{}}),
			[]string{c0 + "env[0].valueFrom: Invalid value: \"\": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`"}},
		{"valueFrom with two sources", env(v1.EnvVar{Name: "A", ValueFrom: &v1.EnvVarSource{FieldRef: field("metadata.name").FieldRef, SecretKeyRef: secKey("s", "k").SecretKeyRef}}),
			[]string{c0 + "env[0].valueFrom: Invalid value: \"\": may not have more than one field specified at a time"}},
		// G.6 fieldRef
		{"G.6 every env fieldRef path accepted", env(
			v1.EnvVar{Name: "A", ValueFrom: field("spec.serviceAccountName")}, v1.EnvVar{Name: "B", ValueFrom: field("status.podIPs")},
			v1.EnvVar{Name: "C", ValueFrom: field("status.hostIPs")}, v1.EnvVar{Name: "D", ValueFrom: field("metadata.labels['app.kubernetes.io/name']")},
			v1.EnvVar{Name: "E", ValueFrom: field("metadata.annotations['Example.com/Tier']")}), nil},
		{"fieldRef path not supported", env(v1.EnvVar{Name: "A", ValueFrom: field("status.phase")}),
			[]string{c0 + `env[0].valueFrom.fieldRef.fieldPath: Unsupported value: "status.phase"`}},
		{"fieldRef subscript on other field", env(v1.EnvVar{Name: "A", ValueFrom: field("metadata.name['x']")}),
			[]string{c0 + `env[0].valueFrom.fieldRef: Invalid value: "metadata.name": does not support subscript`}},
		{"fieldRef bad label key", env(v1.EnvVar{Name: "A", ValueFrom: field("metadata.labels['a b']")}),
			[]string{c0 + `env[0].valueFrom.fieldRef: Invalid value: "a b": name part must consist of alphanumeric characters`}},
		{"fieldRef fieldPath required", env(v1.EnvVar{Name: "A", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1"}}}),
			[]string{c0 + "env[0].valueFrom.fieldRef.fieldPath: Required value"}},
		// G.8 resourceFieldRef
		{"G.8 resources and divisors accepted", env(
			v1.EnvVar{Name: "A", ValueFrom: res("limits.cpu", "1m")}, v1.EnvVar{Name: "B", ValueFrom: res("requests.memory", "1Mi")},
			v1.EnvVar{Name: "C", ValueFrom: res("limits.ephemeral-storage", "1G")}, v1.EnvVar{Name: "D", ValueFrom: res("requests.hugepages-2Mi", "1Ki")},
			v1.EnvVar{Name: "E", ValueFrom: res("limits.memory", "")}), nil},
		{"resource required", env(v1.EnvVar{Name: "A", ValueFrom: res("", "")}), []string{c0 + "env[0].valueFrom.resourceFieldRef.resource: Required value"}},
		{"resource not supported", env(v1.EnvVar{Name: "A", ValueFrom: res("limits.gpu", "")}),
			[]string{c0 + `env[0].valueFrom.resourceFieldRef.resource: Unsupported value: "limits.gpu": supported values: "limits.cpu"`}},
		{"cpu divisor", env(v1.EnvVar{Name: "A", ValueFrom: res("requests.cpu", "10m")}),
			[]string{c0 + `env[0].valueFrom.resourceFieldRef.divisor: Invalid value: "requests.cpu": only divisor's values 1m and 1 are supported with the cpu resource`}},
		{"memory divisor", env(v1.EnvVar{Name: "A", ValueFrom: res("limits.memory", "2Mi")}),
			[]string{c0 + `env[0].valueFrom.resourceFieldRef.divisor: Invalid value: "limits.memory": only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the memory resource`}},
		{"ephemeral-storage divisor", env(v1.EnvVar{Name: "A", ValueFrom: res("limits.ephemeral-storage", "1m")}),
			[]string{c0 + `env[0].valueFrom.resourceFieldRef.divisor: Invalid value: "limits.ephemeral-storage": only divisor's values`, "local ephemeral storage resource"}},
		{"hugepages divisor", env(v1.EnvVar{Name: "A", ValueFrom: res("limits.hugepages-1Gi", "3")}),
			[]string{c0 + `env[0].valueFrom.resourceFieldRef.divisor: Invalid value: "limits.hugepages-1Gi"`}},
		{"containerName a DNS label", env(v1.EnvVar{Name: "A", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.cpu", ContainerName: "Bad_Name"}}}),
			[]string{c0 + `env[0].valueFrom.resourceFieldRef.containerName: Invalid value: "Bad_Name"`}},
		// configMapKeyRef / secretKeyRef
		{"key refs accepted", env(v1.EnvVar{Name: "A", ValueFrom: cmKey("cfg", "log.level")}, v1.EnvVar{Name: "B", ValueFrom: secKey("db", "password")}), nil},
		{"configMapKeyRef name", env(v1.EnvVar{Name: "A", ValueFrom: cmKey("Cfg", "k")}),
			[]string{c0 + `env[0].valueFrom.configMapKeyRef.name: Invalid value: "Cfg"`}},
		{"configMapKeyRef key required", env(v1.EnvVar{Name: "A", ValueFrom: cmKey("cfg", "")}),
			[]string{c0 + "env[0].valueFrom.configMapKeyRef.key: Required value"}},
		{"secretKeyRef key invalid", env(v1.EnvVar{Name: "A", ValueFrom: secKey("db", "a/b")}),
			[]string{c0 + `env[0].valueFrom.secretKeyRef.key: Invalid value: "a/b": a valid config key must consist of alphanumeric characters`}},
		{"secretKeyRef key ..", env(v1.EnvVar{Name: "A", ValueFrom: secKey("db", "..")}),
			[]string{c0 + `env[0].valueFrom.secretKeyRef.key: Invalid value: "..": must not be '..'`}},
		{"secretKeyRef name empty", env(v1.EnvVar{Name: "A", ValueFrom: secKey("", "k")}),
			[]string{c0 + `env[0].valueFrom.secretKeyRef.name: Invalid value: ""`}},
		// envFrom
		{"envFrom accepted", envFrom(cmFrom("CFG_", "cfg"), secFrom("db"), cmFrom("1.x", "cfg")), nil},
		{"envFrom prefix with =", envFrom(cmFrom("A=", "cfg")), []string{c0 + `envFrom[0].prefix: Invalid value: "A="`}},
		{"envFrom without source", envFrom(v1.EnvFromSource{Prefix: "X"}),
			[]string{c0 + "envFrom: Invalid value: \"\": must specify one of: `configMapRef` or `secretRef`"}},
		{"envFrom with both sources", envFrom(v1.EnvFromSource{ConfigMapRef: cmFrom("", "a").ConfigMapRef, SecretRef: secFrom("b").SecretRef}),
			[]string{c0 + "envFrom: Invalid value: \"\": may not have more than one field specified at a time"}},
		{"envFrom configMapRef name required", envFrom(cmFrom("", "")), []string{c0 + "envFrom[0].configMapRef.name: Required value"}},
		{"envFrom secretRef name invalid", envFrom(secFrom("a_b")), []string{c0 + `envFrom[0].secretRef.name: Invalid value: "a_b"`}},
		// hostAliases, setHostnameAsFQDN
		{"hostAliases accepted", func(p *v1.Pod) {
			p.Spec.HostAliases = []v1.HostAlias{{IP: "10.1.2.3", Hostnames: []string{"db", "db.example.com"}}, {IP: "fd00::1", Hostnames: []string{"v6"}}}
		}, nil},
		{"hostAliases ip", func(p *v1.Pod) { p.Spec.HostAliases = []v1.HostAlias{{IP: "db", Hostnames: []string{"x"}}} },
			[]string{`spec.hostAliases[0].ip: Invalid value: "db": must be a valid IP address`}},
		{"hostAliases ip required", func(p *v1.Pod) { p.Spec.HostAliases = []v1.HostAlias{{Hostnames: []string{"x"}}} },
			[]string{`spec.hostAliases[0].ip: Invalid value: ""`}},
		{"hostAliases hostname", func(p *v1.Pod) {
			p.Spec.HostAliases = []v1.HostAlias{{IP: "10.0.0.1", Hostnames: []string{"ok", "Not_OK"}}}
		},
			[]string{`spec.hostAliases[0].hostnames[1]: Invalid value: "Not_OK"`}},
		{"setHostnameAsFQDN accepted", func(p *v1.Pod) { p.Spec.SetHostnameAsFQDN = ptr(true); p.Spec.Subdomain = "web" }, nil},
		// imagePullSecrets (E.11): accepted, an empty name too (the API
		// server lets it through; the kubelet ignores it).
		{"imagePullSecrets accepted", func(p *v1.Pod) {
			p.Spec.ImagePullSecrets = []v1.LocalObjectReference{{Name: "regcred"}, {Name: ""}}
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := validPod()
			tt.mutate(pod)
			errs := Validate(pod)
			got := errorStrings(errs)
			if len(tt.want) == 0 {
				if len(errs) != 0 {
					t.Fatalf("Validate() = %s, want no errors", got)
				}
				return
			}
			wantErrs := len(tt.want)
			if tt.name == "ephemeral-storage divisor" {
				wantErrs = 1 // two substrings of one error
			}
			if len(errs) != wantErrs {
				t.Fatalf("Validate() = %s\nwant %d error(s): %q", got, wantErrs, tt.want)
			}
			checkValidate(t, pod, tt.want)
		})
	}
}
