package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestManagedProcs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pidFile string // "": none
		wantPid int
		wantErr bool
	}{
		{"running", "4242\n", 4242, false},
		{"no pid file", "", 0, true},
		{"garbage", "x\n", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if tc.pidFile != "" {
				must(t, os.MkdirAll(filepath.Join(root, "containerd"), 0o755))
				must(t, os.WriteFile(filepath.Join(root, "containerd", "containerd.pid"), []byte(tc.pidFile), 0o644))
			}
			rt, err := managedProcs(root)()
			if (err != nil) != tc.wantErr || rt.ContainerdPid != tc.wantPid {
				t.Fatalf("managedProcs = %+v, %v; want pid %d, error %v", rt, err, tc.wantPid, tc.wantErr)
			}
			if want := filepath.Join(root, "containerd", "containerd.sock"); err == nil && rt.Socket != want {
				t.Errorf("socket %q, want %q", rt.Socket, want)
			}
		})
	}
}

func TestSampleEvery(t *testing.T) {
	var n int
	got, err := sampleEvery(context.Background(), 1500*time.Millisecond, func(time.Time) (int, error) { n++; return n, nil })
	// At once, after 1 s, at 1.5 s.
	if err != nil || len(got) != 3 || got[2] != 3 {
		t.Errorf("sampleEvery = %v, %v; want [1 2 3]", got, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
