package controlplane

import (
	"context"
	"log/slog"
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
		NodeKubeletHost: "127.0.0.1", ServiceProxy: true, ClusterDNS: "10.96.0.10", ClusterDomain: "cluster.local", DNSClients: []string{"10.88.0.0/16"},
		APIClients: []string{"10.88.0.0/16"}, LocalPathDir: "/r/storage"}}
	want := []string{"--data-dir", "/r/apiserver", "--bind-address", "0.0.0.0", "--secure-port", "7443",
		"--node-name", "n1", "--node-kubelet-host", "127.0.0.1", "--kubernetes-service-clients", "10.88.0.0/16", "--service-proxy",
		"--cluster-dns", "10.96.0.10", "--cluster-domain", "cluster.local", "--cluster-dns-clients", "10.88.0.0/16",
		"--local-path-dir", "/r/storage", "--etcd-servers", "http://e1:2379"}
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

// The supervisor runs the shim with its flags; --data-dir marks it in the
// pid file's process, and the pid file is <DataDir>/skiff-apiserver.pid.
func TestSpec(t *testing.T) {
	s := &Shim{cfg: Config{Binary: "/b/skiff-apiserver", DataDir: "/r/apiserver", BindAddress: "127.0.0.1", Port: 6443, LogFile: "/r/l"}}
	sp := s.spec()
	if sp.Name != "skiff-apiserver" || sp.Binary != "/b/skiff-apiserver" || sp.LogFile != "/r/l" || !slices.Equal(sp.Args, s.args()) {
		t.Errorf("name %q, binary %q, log %q, args %q", sp.Name, sp.Binary, sp.LogFile, sp.Args)
	}
	if sp.PidFile != "/r/apiserver/skiff-apiserver.pid" || sp.Marker != "/r/apiserver" || !slices.Contains(sp.Args, sp.Marker) {
		t.Errorf("pid file %q, marker %q", sp.PidFile, sp.Marker)
	}
	if sp.Target != "at https://127.0.0.1:6443" || sp.Policy != restartPolicy || sp.Ready == nil || sp.AfterReady == nil {
		t.Errorf("target %q, policy %+v", sp.Target, sp.Policy)
	}
}

// Every start copies the admin kubeconfig (0600) where the user looks.
func TestAfterReadyCopiesAdminKubeconfig(t *testing.T) {
	dir := t.TempDir()
	dst := filepath.Join(dir, "out", "admin.kubeconfig")
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	s := &Shim{cfg: Config{DataDir: dir, AdminKubeconfig: dst}, logger: slog.New(slog.DiscardHandler)}
	if err := s.afterReady(context.Background()); err == nil {
		t.Error("afterReady without the shim's kubeconfig succeeded")
	}
	if err := os.WriteFile(s.AdminKubeconfig(), []byte("kc"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.afterReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(dst)
	if b, _ := os.ReadFile(dst); err != nil || string(b) != "kc" || st.Mode().Perm() != 0o600 {
		t.Errorf("copy %q, %v", b, err)
	}
}
