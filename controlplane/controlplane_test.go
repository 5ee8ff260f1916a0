package controlplane

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestFindBinary(t *testing.T) {
	if got, err := FindBinary("/opt/x/skiff-apiserver"); err != nil || got != "/opt/x/skiff-apiserver" {
		t.Errorf("a path: %q, %v", got, err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "fake-apiserver"), []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	if got, err := FindBinary("fake-apiserver"); err != nil || got != filepath.Join(dir, "fake-apiserver") {
		t.Errorf("on PATH: %q, %v", got, err)
	}
	if _, err := FindBinary("no-such-apiserver"); err == nil || !strings.Contains(err.Error(), "make build") {
		t.Errorf("missing: %v, want an error saying how to build it", err)
	}
}

func TestArgs(t *testing.T) {
	s := &Shim{cfg: Config{DataDir: "/r/apiserver", NodeName: "n1", BindAddress: "0.0.0.0", Port: 7443, EtcdServers: []string{"http://e1:2379"},
		NodeKubeletHost: "127.0.0.1"}}
	want := []string{"--data-dir", "/r/apiserver", "--bind-address", "0.0.0.0", "--secure-port", "7443",
		"--node-name", "n1", "--node-kubelet-host", "127.0.0.1", "--etcd-servers", "http://e1:2379"}
	if got := s.args(); !slices.Equal(got, want) {
		t.Errorf("args %q, want %q", got, want)
	}
	// An unspecified bind address is reached through loopback.
	if got := s.URL(); got != "https://127.0.0.1:7443" {
		t.Errorf("URL %q", got)
	}
}

func TestStartRefusesIncompleteConfig(t *testing.T) {
	for _, cfg := range []Config{
		{DataDir: t.TempDir(), NodeName: "n"},
		{Binary: "/bin/true", NodeName: "n"},
	} {
		if _, err := Start(context.Background(), cfg); err == nil {
			t.Errorf("Start(%+v) succeeded", cfg)
		}
	}
}

// A shim that exits during start fails Start with its log's tail, and
// leaves nothing running.
func TestStartReportsEarlyExit(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "apiserver")
	script := "#!/bin/sh\necho 'skiff-apiserver: listen: address already in use' >&2\nexit 1\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Start(context.Background(), Config{Binary: bin, DataDir: filepath.Join(dir, "data"), NodeName: "n"})
	if err == nil || !strings.Contains(err.Error(), "exited during start") || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("Start: %v; want the early exit with the log's tail", err)
	}
}
