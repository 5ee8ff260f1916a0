package main

import (
	"fmt"
	"io"
	"path"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/skiffnode/skiff/internal/imagebuild"
)

// fakeRegistryFiles lays img out as agnhost's fake-registry-server serves
// it from /var/registry: <name>/manifests/<tag> holds the manifest's
// digest, and the manifest and the blobs are files at
// <name>/{manifests,blobs}/sha256/<first two>/<hex>/data. Upstream's
// agnhost image carries pause:3.10.2 there under the tag "testing"
// (fakeregistryserver/images.txt), which the private-registry tests pull
// from the registry pod on localhost:5000. Files are world-readable (the
// registry runs as user 5123).
func fakeRegistryFiles(img v1.Image, name, tag string) ([]imagebuild.File, error) {
	base := path.Join("var/registry", name)
	var files []imagebuild.File
	dirs := map[string]bool{}
	add := func(p string, data []byte) {
		var parents []string
		for d := path.Dir(p); d != "." && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
			parents = append(parents, d)
		}
		for i := len(parents) - 1; i >= 0; i-- {
			files = append(files, imagebuild.File{Path: parents[i], Mode: 0o755})
		}
		files = append(files, imagebuild.File{Path: p, Mode: 0o644, Data: data})
	}
	blob := func(kind string, h v1.Hash, data []byte) {
		add(path.Join(base, kind, h.Algorithm, h.Hex[:2], h.Hex, "data"), data)
	}
	manifest, err := img.RawManifest()
	if err != nil {
		return nil, fmt.Errorf("fake registry: manifest: %w", err)
	}
	digest, err := img.Digest()
	if err != nil {
		return nil, fmt.Errorf("fake registry: digest: %w", err)
	}
	add(path.Join(base, "manifests", tag), []byte(digest.String()))
	blob("manifests", digest, manifest)
	config, err := img.RawConfigFile()
	if err != nil {
		return nil, fmt.Errorf("fake registry: config: %w", err)
	}
	configName, err := img.ConfigName()
	if err != nil {
		return nil, fmt.Errorf("fake registry: config name: %w", err)
	}
	blob("blobs", configName, config)
	layers, err := img.Layers()
	if err != nil {
		return nil, fmt.Errorf("fake registry: layers: %w", err)
	}
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return nil, fmt.Errorf("fake registry: layer digest: %w", err)
		}
		rc, err := l.Compressed()
		if err != nil {
			return nil, fmt.Errorf("fake registry: layer: %w", err)
		}
		data, err := io.ReadAll(rc)
		_ = rc.Close()
		if err != nil {
			return nil, fmt.Errorf("fake registry: layer: %w", err)
		}
		blob("blobs", d, data)
	}
	return files, nil
}
