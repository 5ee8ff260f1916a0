package node

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRegistryOptionsResolve(t *testing.T) {
	const valid = "mirrors:\n  docker.io:\n    endpoint: [\"https://127.0.0.1:5443\"]\nconfigs:\n  \"127.0.0.1:5443\":\n    auth: {username: u, password: p}\n"
	tests := []struct {
		name                 string
		defaultFile, flagged string // content of <root>/registries.yaml and of a --registry-config file ("": none)
		flagMissing          bool   // --registry-config names a file that does not exist
		endpoint             string
		wantErr, wantWarn    string
		wantRendered         bool
	}{
		{name: "nothing"},
		{name: "default file, managed", defaultFile: valid, wantRendered: true},
		{name: "default file, external runtime: ignored with a warning", defaultFile: valid, endpoint: "unix:///run/containerd/containerd.sock", wantWarn: "ignoring the registries file"},
		{name: "flag, managed", flagged: valid, wantRendered: true},
		{name: "flag with external runtime", flagged: valid, endpoint: "unix:///x.sock", wantErr: "--registry-config configures skiff's managed containerd"},
		{name: "flag names a missing file", flagMissing: true, wantErr: "no such file"},
		{name: "invalid default file", defaultFile: "mirrors: {docker.io: {endpoints: []}}\n", wantErr: `unknown field "endpoints"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			o := &RegistryConfig{}
			if tt.defaultFile != "" {
				if err := os.WriteFile(filepath.Join(root, "registries.yaml"), []byte(tt.defaultFile), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if tt.flagged != "" || tt.flagMissing {
				o.RegistryConfig = filepath.Join(t.TempDir(), "reg.yaml")
			}
			if tt.flagged != "" {
				if err := os.WriteFile(o.RegistryConfig, []byte(tt.flagged), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var logs bytes.Buffer
			err := o.resolve(root, tt.endpoint, slog.New(slog.NewTextHandler(&logs, nil)))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (o.Rendered != nil) != tt.wantRendered {
				t.Errorf("rendered = %v, want %v", o.Rendered != nil, tt.wantRendered)
			}
			if tt.wantWarn != "" && !strings.Contains(logs.String(), tt.wantWarn) {
				t.Errorf("logs %q lack %q", logs.String(), tt.wantWarn)
			}
			hosts, auths := o.containerdRegistry()
			if tt.wantRendered && (hosts["docker.io"] == "" || auths["127.0.0.1:5443"].Username != "u") {
				t.Errorf("containerd registry: %v %v", hosts, auths)
			}
		})
	}
}
