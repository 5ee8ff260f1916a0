package main

import (
	"path"
	"testing"

	"github.com/skiffnode/skiff/internal/imagebuild"
)

// TestFakeRegistryFiles: the tag file names the manifest's digest, and
// the manifest, the config and every layer lie where agnhost's
// fake-registry-server looks for them, under directories listed first.
func TestFakeRegistryFiles(t *testing.T) {
	img, err := imagebuild.Build([]imagebuild.File{{Path: "pause", Mode: 0o755, Data: []byte("x")}}, imagebuild.Config{Entrypoint: []string{"/pause"}})
	if err != nil {
		t.Fatal(err)
	}
	files, err := fakeRegistryFiles(img, "pause", "testing")
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]imagebuild.File{}
	seen := map[string]bool{}
	for _, f := range files {
		if parent := path.Dir(f.Path); parent != "." && !seen[parent] {
			t.Errorf("%s listed before its directory %s", f.Path, parent)
		}
		seen[f.Path] = true
		byPath[f.Path] = f
	}
	digest, _ := img.Digest()
	if tag := byPath["var/registry/pause/manifests/testing"]; string(tag.Data) != digest.String() {
		t.Errorf("tag file %q, want %s", tag.Data, digest)
	}
	cfg, _ := img.ConfigName()
	layers, _ := img.Layers()
	ld, _ := layers[0].Digest()
	for _, p := range []string{
		"var/registry/pause/manifests/sha256/" + digest.Hex[:2] + "/" + digest.Hex + "/data",
		"var/registry/pause/blobs/sha256/" + cfg.Hex[:2] + "/" + cfg.Hex + "/data",
		"var/registry/pause/blobs/sha256/" + ld.Hex[:2] + "/" + ld.Hex + "/data",
	} {
		if f, ok := byPath[p]; !ok || len(f.Data) == 0 || f.Mode != 0o644 {
			t.Errorf("%s: %+v, want a world-readable file", p, ok)
		}
	}
}
