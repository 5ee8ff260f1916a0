package volumes

import (
	"strings"
	"testing"
)

// TestEnsureShared_G1: a pods directory on a private mount becomes an
// rshared bind mount once (HostToContainer and Bidirectional mounts need
// it); a second call changes nothing. Root only.
func TestEnsureShared_G1(t *testing.T) {
	needRoot(t)
	m := newTestManager(t, nil)
	for range 2 {
		if err := m.EnsureShared(); err != nil {
			t.Fatal(err)
		}
	}
	mps, err := readMountInfo(mountInfoPath)
	if err != nil {
		t.Fatal(err)
	}
	n, shared := 0, false
	for _, mp := range mps {
		if mp.Path == m.cfg.PodsDir {
			n++
			shared = strings.Contains(mp.Optional, "shared:")
		}
	}
	holderShared := false
	for _, mp := range mps {
		if mp.Path == "/" || mp.Path == "/tmp" {
			holderShared = holderShared || strings.Contains(mp.Optional, "shared:")
		}
	}
	if holderShared {
		if n != 0 {
			t.Errorf("pods dir on a shared file system got %d mounts, want none", n)
		}
		return
	}
	if n != 1 || !shared {
		t.Errorf("pods dir mounts = %d, shared = %v; want one shared bind mount", n, shared)
	}
}
