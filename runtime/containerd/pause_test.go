package containerd

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/skiffnode/skiff/internal/pause"
)

func TestPauseImageRef(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a")
	if err := os.WriteFile(a, []byte("hello"), 0o755); err != nil {
		t.Fatal(err)
	}
	ref, err := PauseImageRef(a)
	if err != nil {
		t.Fatal(err)
	}
	// sha256("hello") = 2cf24dba5fb0a30e...
	if ref != "skiff.local/pause:2cf24dba5fb0" {
		t.Fatalf("ref = %s", ref)
	}
	if !regexp.MustCompile(`^skiff\.local/pause:[0-9a-f]{12}$`).MatchString(ref) {
		t.Fatalf("ref %s has the wrong shape", ref)
	}
	if _, err := PauseImageRef(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("missing file: want error")
	}
}

func TestCheckStatic(t *testing.T) {
	if err := checkStaticFile("/bin/busybox"); err != nil && !errors.Is(err, fs.ErrNotExist) && !strings.Contains(err.Error(), "no such file") {
		t.Errorf("busybox-static: %v", err)
	}
	if _, err := os.Stat("/bin/ls"); err == nil {
		if err := checkStaticFile("/bin/ls"); err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
			t.Errorf("dynamic /bin/ls: err = %v", err)
		}
	}
	text := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(text, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := checkStaticFile(text); err == nil {
		t.Error("script accepted as pause executable")
	}
}

func TestOCIRefName(t *testing.T) {
	for in, want := range map[string]string{
		"latest":                "",
		"busybox:1.36":          "docker.io/library/busybox:1.36",
		"skiff.local/pause:abc": "skiff.local/pause:abc",
		"example.com/a/b":       "example.com/a/b:latest",
		"bad//ref:x":            "",
	} {
		if got := ociRefName(in); got != want {
			t.Errorf("ociRefName(%q) = %q, want %q", in, got, want)
		}
	}
}

// The built-in pause image is tagged by the executable's bytes, as a file
// would be, so the tag changes when the bytes do; the bytes pass the check
// that the image needs no libraries.
func TestPauseImageRefDataFollowsBytes(t *testing.T) {
	for _, goarch := range []string{"amd64", "arm64"} {
		exe, ok := pause.Executable(goarch)
		if !ok {
			t.Fatalf("%s: no built-in pause", goarch)
		}
		ref := PauseImageRefData(exe)
		path := filepath.Join(t.TempDir(), "pause")
		if err := os.WriteFile(path, exe, 0o755); err != nil {
			t.Fatal(err)
		}
		if fromFile, err := PauseImageRef(path); err != nil || fromFile != ref {
			t.Errorf("%s: ref %s, from the same bytes in a file %s (%v)", goarch, ref, fromFile, err)
		}
		changed := append(slices.Clone(exe), 0)
		if PauseImageRefData(changed) == ref {
			t.Errorf("%s: ref %s unchanged after the bytes changed", goarch, ref)
		}
		if err := checkStatic(bytes.NewReader(exe), goarch); err != nil {
			t.Errorf("%s: %v", goarch, err)
		}
	}
}
