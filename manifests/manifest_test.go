package manifests

import (
	"strings"
	"testing"
)

// TestDecodeManifest: Pods, ConfigMaps and Secrets side by side, strictly
// decoded, with errors naming the document and field.
func TestDecodeManifest(t *testing.T) {
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {a: x}\nbinaryData: {b: aGk=}\n"
	sec := "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {p: cGFzcw==}\nstringData: {q: plain}\n"
	tests := []struct {
		name                string
		in                  string
		wantPods, wantCMs   int
		wantSecrets         int
		wantErr             string
		checkDecodedContent bool
	}{
		{name: "pod, configmap and secret", in: podYAML("a") + "---\n" + cm + "---\n" + sec, wantPods: 1, wantCMs: 1, wantSecrets: 1, checkDecodedContent: true},
		{name: "objects only", in: cm, wantCMs: 1},
		{name: "JSON secret", in: `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"p":"cGFzcw=="}}`, wantSecrets: 1},
		{name: "other kind", in: "apiVersion: v1\nkind: Service\n", wantErr: `kind: Unsupported value: "Service": supported values: "Pod", "ConfigMap", "Secret"`},
		{name: "missing kind", in: "apiVersion: v1\nmetadata: {name: a}\n", wantErr: `kind: Required value: must be "Pod", "ConfigMap" or "Secret"`},
		{name: "unknown field", in: strings.Replace(cm, "\ndata:", "\ndat:", 1), wantErr: `decoding ConfigMap: unknown field "dat"`},
		{name: "bad base64 names key and document", in: podYAML("a") + "---\n" + strings.Replace(sec, "cGFzcw==", "'!!'", 1), wantErr: "document 2: decoding Secret: data[p]: illegal base64"},
		{name: "bad binaryData", in: strings.Replace(cm, "aGk=", "'*'", 1), wantErr: "decoding ConfigMap: binaryData[b]: illegal base64"},
		{name: "data value not a string", in: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: {b: c}}\n", wantErr: "decoding ConfigMap"},
		{name: "scalar document", in: "text\n", wantErr: "not a Pod, ConfigMap or Secret object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := DecodeManifest([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("DecodeManifest() error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeManifest() error = %v", err)
			}
			if len(m.Pods) != tc.wantPods || len(m.ConfigMaps) != tc.wantCMs || len(m.Secrets) != tc.wantSecrets {
				t.Fatalf("got %d pods, %d configmaps, %d secrets; want %d, %d, %d",
					len(m.Pods), len(m.ConfigMaps), len(m.Secrets), tc.wantPods, tc.wantCMs, tc.wantSecrets)
			}
			if tc.checkDecodedContent {
				if got := string(m.ConfigMaps[0].BinaryData["b"]); got != "hi" {
					t.Errorf("binaryData[b] = %q, want hi (base64-decoded)", got)
				}
				if got := string(m.Secrets[0].Data["p"]); got != "pass" {
					t.Errorf("data[p] = %q, want pass", got)
				}
			}
		})
	}
	if _, err := Decode([]byte(cm)); err == nil || !strings.Contains(err.Error(), `kind: Unsupported value: "ConfigMap": supported values: "Pod"`) {
		t.Errorf("Decode(configmap) error = %v, want Pod-only kinds", err)
	}
}
