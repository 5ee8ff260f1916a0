package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
)

// TestNodeImage checks that the node image holds what its entrypoint runs
// (skiff, skiff-pause, containerd, the shim, runc, the CNI plugins of
// skiff's conflist, iptables, the dynamic loader), that its inputs hash
// follows skiff's content, and that the entrypoint is `skiff agent`.
func TestNodeImage(t *testing.T) {
	for _, c := range []string{"containerd", "containerd-shim-runc-v2", "runc", "iptables", "busybox"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Skipf("%s is not installed (test/setup.sh): %v", c, err)
		}
	}
	dir := t.TempDir()
	o := nodeOptions{ref: "skiff.local/node:test", skiff: filepath.Join(dir, "skiff"), skiffPause: filepath.Join(dir, "skiff-pause")}
	for _, p := range []string{o.skiff, o.skiffPause} {
		// Long enough for the ELF check to see a script, not a short file.
		if err := os.WriteFile(p, []byte("#!/bin/sh\n# a stand-in for skiff, not an ELF executable at all\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	im, err := nodeImage(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, f := range im.files {
		have[f.Path] = true
	}
	for _, p := range []string{
		"usr/bin/skiff", "usr/bin/skiff-pause", "usr/bin/containerd", "usr/bin/containerd-shim-runc-v2",
		"usr/sbin/runc", "usr/sbin/iptables", "usr/bin/sh", "usr/lib/cni/bridge", "usr/lib/cni/host-local",
		"usr/lib/cni/loopback", "usr/lib/cni/portmap", "usr/lib64/ld-linux-x86-64.so.2",
		"etc/skiff/manifests", "var/lib/skiff", "var/log/pods", "etc/passwd",
	} {
		if !have[p] {
			t.Errorf("node image lacks /%s", p)
		}
	}
	if have["usr/lib/cni/dhcp"] {
		t.Error("node image holds CNI plugins skiff does not use (dhcp)")
	}
	if want := []string{"/usr/bin/skiff", "agent"}; !reflect.DeepEqual(im.cfg.Entrypoint, want) {
		t.Errorf("entrypoint %q, want %q", im.cfg.Entrypoint, want)
	}

	sum, err := im.inputsHash()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(o.skiff, []byte("#!/bin/sh\n# another build of skiff, still not an ELF executable at all\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if sum2, err := im.inputsHash(); err != nil || sum2 == sum {
		t.Errorf("inputs hash %s unchanged after skiff changed (%v)", sum2, err)
	}
}
