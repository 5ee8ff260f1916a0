package podspec

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSetSecretDefaults: stringData wins over data and is cleared; the
// type defaults to Opaque.
func TestSetSecretDefaults(t *testing.T) {
	s := &v1.Secret{Data: map[string][]byte{"a": []byte("old"), "b": []byte("keep")}, StringData: map[string]string{"a": "new", "c": "added"}}
	SetSecretDefaults(s)
	want := map[string]string{"a": "new", "b": "keep", "c": "added"}
	if len(s.Data) != len(want) {
		t.Fatalf("data = %v, want %v", s.Data, want)
	}
	for k, v := range want {
		if string(s.Data[k]) != v {
			t.Errorf("data[%s] = %q, want %q", k, s.Data[k], v)
		}
	}
	if s.StringData != nil || s.Type != v1.SecretTypeOpaque {
		t.Errorf("stringData = %v, type = %q; want nil, Opaque", s.StringData, s.Type)
	}
	only := &v1.Secret{StringData: map[string]string{"x": "y"}, Type: v1.SecretTypeBasicAuth}
	SetSecretDefaults(only)
	if string(only.Data["x"]) != "y" || only.Type != v1.SecretTypeBasicAuth {
		t.Errorf("stringData-only secret = %v %q", only.Data, only.Type)
	}
}

func configMap(name string, data map[string]string, binary map[string][]byte) *v1.ConfigMap {
	cm := &v1.ConfigMap{Data: data, BinaryData: binary}
	cm.Name, cm.Namespace = name, "default"
	return cm
}

func secret(name string, typ v1.SecretType, data map[string]string) *v1.Secret {
	s := &v1.Secret{Type: typ, Data: map[string][]byte{}}
	s.Name, s.Namespace = name, "default"
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

// TestValidateConfigMap: each API-server rule is one case.
func TestValidateConfigMap(t *testing.T) {
	big := strings.Repeat("x", MaxObjectSize/2+1)
	immutable := true
	tests := []struct {
		name string
		cm   *v1.ConfigMap
		want []string // each error's text, in order
	}{
		{name: "valid", cm: configMap("web-config", map[string]string{"nginx.conf": "x", "A_B-c": ""}, map[string][]byte{"logo.png": {1}})},
		{name: "immutable is accepted", cm: func() *v1.ConfigMap { c := configMap("c", nil, nil); c.Immutable = &immutable; return c }()},
		{name: "name not a subdomain", cm: configMap("Web_Config", nil, nil), want: []string{`metadata.name: Invalid value: "Web_Config": a lowercase RFC 1123 subdomain`}},
		{name: "name missing", cm: configMap("", nil, nil), want: []string{"metadata.name: Required value: name or generateName is required"}},
		{name: "bad key", cm: configMap("c", map[string]string{"a/b": "x"}, nil), want: []string{`data[a/b]: Invalid value: "a/b": a valid config key must consist of alphanumeric characters, '-', '_' or '.'`}},
		{name: "key dot", cm: configMap("c", map[string]string{".": "x"}, nil), want: []string{`data[.]: Invalid value: ".": must not be '.'`}},
		{name: "key dot-dot", cm: configMap("c", nil, map[string][]byte{"..": nil}), want: []string{`binaryData[..]: Invalid value: "..": must not be '..'`}},
		{name: "key in data and binaryData", cm: configMap("c", map[string]string{"k": "x"}, map[string][]byte{"k": {1}}), want: []string{`data[k]: Invalid value: "k": duplicate of key present in binaryData`}},
		{name: "too large in total", cm: configMap("c", map[string]string{"a": big}, map[string][]byte{"b": []byte(big)}), want: []string{"Too long: may not be more than 1048576 bytes"}},
		{name: "unsupported metadata", cm: func() *v1.ConfigMap { c := configMap("c", nil, nil); c.GenerateName = "c-"; return c }(), want: []string{"metadata.generateName: Forbidden: not supported by skiff yet"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkErrors(t, ValidateConfigMap(tc.cm).ToAggregate(), tc.want)
		})
	}
}

// TestValidateSecret: names, keys, size and the well-known types.
func TestValidateSecret(t *testing.T) {
	big := strings.Repeat("x", MaxObjectSize+1)
	tests := []struct {
		name string
		s    *v1.Secret
		want []string
	}{
		{name: "opaque", s: secret("db", v1.SecretTypeOpaque, map[string]string{"password": "x"})},
		{name: "custom type accepted as by the API server", s: secret("db", "example.com/custom", nil)},
		{name: "bad key", s: secret("db", v1.SecretTypeOpaque, map[string]string{"a b": "x"}), want: []string{`data[a b]: Invalid value: "a b"`}},
		{name: "too large", s: secret("db", v1.SecretTypeOpaque, map[string]string{"a": big}), want: []string{"data: Too long: may not be more than 1048576 bytes"}},
		{name: "tls needs cert and key", s: secret("t", v1.SecretTypeTLS, map[string]string{"tls.crt": "x"}), want: []string{"data[tls.key]: Required value"}},
		{name: "tls complete", s: secret("t", v1.SecretTypeTLS, map[string]string{"tls.crt": "x", "tls.key": "y"})},
		{name: "basic-auth needs a field", s: secret("b", v1.SecretTypeBasicAuth, nil), want: []string{"data[username]: Required value", "data[password]: Required value"}},
		{name: "basic-auth password only", s: secret("b", v1.SecretTypeBasicAuth, map[string]string{"password": ""})},
		{name: "ssh-auth needs key", s: secret("k", v1.SecretTypeSSHAuth, nil), want: []string{"data[ssh-privatekey]: Required value"}},
		{name: "dockerconfigjson must be JSON", s: secret("r", v1.SecretTypeDockerConfigJson, map[string]string{".dockerconfigjson": "nope"}), want: []string{`data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": invalid character`}},
		{name: "dockercfg missing", s: secret("r", v1.SecretTypeDockercfg, nil), want: []string{"data[.dockercfg]: Required value"}},
		{name: "service account token needs annotation", s: secret("r", v1.SecretTypeServiceAccountToken, nil), want: []string{"metadata.annotations[kubernetes.io/service-account.name]: Required value"}},
		{name: "namespace invalid", s: func() *v1.Secret { s := secret("a", v1.SecretTypeOpaque, nil); s.Namespace = "Bad"; return s }(), want: []string{`metadata.namespace: Invalid value: "Bad"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkErrors(t, ValidateSecret(tc.s).ToAggregate(), tc.want)
		})
	}
}

// checkErrors requires err to hold exactly the wanted messages (each a
// substring of one error, in order); none wanted means err is nil.
func checkErrors(t *testing.T, err error, want []string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("error = %v, want none", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("no error, want %q", want)
	}
	msg := err.Error()
	rest := msg
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("error = %v\nwant (in order) %q", msg, want)
		}
		rest = rest[i+len(w):]
	}
	if n := strings.Count(msg, ", ") + 1; strings.HasPrefix(msg, "[") && n < len(want) {
		t.Fatalf("error = %v, want %d errors", msg, len(want))
	}
}

// TestValidateStableOrder: upstream's label and annotation checks range over
// maps; each Validate* still returns the same list for the same object
// (found by FuzzDecodeManifest).
func TestValidateStableOrder(t *testing.T) {
	bad := map[string]string{"-a": "x", "-b": "y", "-c": "!", "-d": "z", "-e": "?"}
	meta := metav1.ObjectMeta{Name: "o", Namespace: "default", Labels: bad, Annotations: map[string]string{"-a": "", "-b": "", "-c": ""}}
	pod := validPod()
	pod.ObjectMeta = *meta.DeepCopy()
	pod.Spec.NodeSelector = bad
	for _, tc := range []struct {
		name     string
		validate func() string
	}{
		{"Validate", func() string { return Validate(pod).ToAggregate().Error() }},
		{"ValidateConfigMap", func() string {
			return ValidateConfigMap(&v1.ConfigMap{ObjectMeta: *meta.DeepCopy()}).ToAggregate().Error()
		}},
		{"ValidateSecret", func() string {
			return ValidateSecret(&v1.Secret{ObjectMeta: *meta.DeepCopy(), Type: v1.SecretTypeOpaque}).ToAggregate().Error()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			first := tc.validate()
			if n := strings.Count(first, "Invalid value"); n < len(bad) {
				t.Fatalf("want at least %d errors, got %d: %s", len(bad), n, first)
			}
			for range 50 {
				if got := tc.validate(); got != first {
					t.Fatalf("order changed:\n%s\n%s", first, got)
				}
			}
		})
	}
}
