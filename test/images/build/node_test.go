package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// standIn writes a script standing in for an executable at p; long enough
// for the ELF check to see a script, not a short file.
func standIn(t *testing.T, p, what string) {
	t.Helper()
	if err := os.WriteFile(p, []byte("#!/bin/sh\n# a stand-in for "+what+", not an ELF executable at all\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// nodeTestOptions returns node image options whose skiff, skiff-pause and
// runtime (containerd, containerd-shim-runc-v2, runc in runtimeDir) are
// stand-ins in a temporary directory; it skips when the host lacks what the
// image takes from it.
func nodeTestOptions(t *testing.T) nodeOptions {
	t.Helper()
	for _, c := range []string{"iptables", "busybox"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Skipf("%s is not installed (test/setup.sh): %v", c, err)
		}
	}
	if _, err := os.Stat("/usr/lib/cni/bridge"); err != nil {
		t.Skipf("no CNI plugins (test/setup.sh): %v", err)
	}
	dir := t.TempDir()
	o := nodeOptions{ref: "skiff.local/node:test", skiff: filepath.Join(dir, "skiff"), skiffPause: filepath.Join(dir, "skiff-pause"), runtimeDir: dir}
	for _, name := range []string{"skiff", "skiff-pause", "containerd", "containerd-shim-runc-v2", "runc"} {
		standIn(t, filepath.Join(dir, name), name)
	}
	return o
}

// TestNodeImage checks that the node image holds what its entrypoint runs
// (skiff, skiff-pause, skiff's own containerd, shim and runc in
// /usr/lib/skiff and not the host's, the CNI plugins of skiff's conflist,
// iptables, the dynamic loader), that its inputs hash follows skiff's and
// runc's content, and that the entrypoint is `skiff agent`.
func TestNodeImage(t *testing.T) {
	o := nodeTestOptions(t)
	im, err := nodeImage(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]string{}
	for _, f := range im.files {
		have[f.Path] = f.HostPath
	}
	for _, p := range []string{
		"usr/bin/skiff", "usr/bin/skiff-pause", "usr/lib/skiff/containerd", "usr/lib/skiff/containerd-shim-runc-v2",
		"usr/lib/skiff/runc", "usr/sbin/iptables", "usr/bin/sh", "usr/lib/cni/bridge", "usr/lib/cni/host-local",
		"usr/lib/cni/loopback", "usr/lib/cni/portmap", "usr/lib64/ld-linux-x86-64.so.2",
		"etc/skiff/manifests", "var/lib/skiff", "var/log/pods", "etc/passwd",
	} {
		if _, ok := have[p]; !ok {
			t.Errorf("node image lacks /%s", p)
		}
	}
	if src, want := have["usr/lib/skiff/runc"], filepath.Join(o.runtimeDir, "runc"); src != want {
		t.Errorf("/usr/lib/skiff/runc from %q, want %q", src, want)
	}
	for _, p := range []string{"usr/lib/cni/dhcp", "usr/bin/containerd", "usr/bin/containerd-shim-runc-v2", "usr/sbin/runc", "usr/bin/runc"} {
		if _, ok := have[p]; ok {
			t.Errorf("node image holds /%s (the host's runtime or CNI plugins skiff does not use)", p)
		}
	}
	if want := []string{"/usr/bin/skiff", "agent"}; !reflect.DeepEqual(im.cfg.Entrypoint, want) {
		t.Errorf("entrypoint %q, want %q", im.cfg.Entrypoint, want)
	}

	sum, err := im.inputsHash()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{o.skiff, filepath.Join(o.runtimeDir, "runc")} {
		standIn(t, p, "another build of "+filepath.Base(p))
		sum2, err := im.inputsHash()
		if err != nil || sum2 == sum {
			t.Errorf("inputs hash %s unchanged after %s changed (%v)", sum2, filepath.Base(p), err)
		}
		sum = sum2
	}
}

// TestNodeImageNeedsRuntime checks that the node image is not built
// without each of skiff's runtime programs, and that the error says to run
// make runtime.
func TestNodeImageNeedsRuntime(t *testing.T) {
	for _, missing := range []string{"containerd", "containerd-shim-runc-v2", "runc"} {
		t.Run(missing, func(t *testing.T) {
			o := nodeTestOptions(t)
			if err := os.Remove(filepath.Join(o.runtimeDir, missing)); err != nil {
				t.Fatal(err)
			}
			_, err := nodeImage(context.Background(), o)
			if err == nil || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "make runtime") {
				t.Errorf("without %s: error %v, want one naming it and make runtime", missing, err)
			}
		})
	}
}
