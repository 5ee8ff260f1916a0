// Package imagebuild writes single-layer container images as docker-archive
// tarballs (the `docker save` format, which containerd imports), without a
// registry or a docker daemon. skiff builds its pause image with it, and the
// test suite builds its busybox and test-server images.
package imagebuild

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path"
	goruntime "runtime"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// File is one entry of the image's filesystem.
type File struct {
	// Path inside the image, without a leading slash ("bin/sh").
	Path string
	// Mode holds the permission bits (0o755 ...).
	Mode int64
	// Exactly one of Data, HostPath, Linkname is used; with none set the
	// entry is a directory.
	Data     []byte
	HostPath string // copy this file from the host
	Linkname string // symlink target
}

// Config is the image configuration that matters to a runtime.
type Config struct {
	Entrypoint, Cmd, Env []string
	WorkingDir, User     string
	// StopSignal is the image's STOPSIGNAL ("SIGQUIT"); "" means SIGTERM.
	StopSignal string
	Labels     map[string]string
}

// epoch keeps builds reproducible: the same inputs give the same image ID.
var epoch = time.Unix(0, 0).UTC()

// WriteArchive builds an image from files and cfg and writes it, tagged
// ref, as a docker-archive tarball at path (replaced atomically).
// Reproducible: equal inputs give byte-equal layers and the same image ID.
func WriteArchive(path, ref string, files []File, cfg Config) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return fmt.Errorf("image reference %q: %w", ref, err)
	}
	img, err := Build(files, cfg)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := tarball.WriteToFile(tmp, tag, img); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write image archive %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write image archive %s: %w", path, err)
	}
	return nil
}

// Build returns the image in memory.
func Build(files []File, cfg Config) (v1.Image, error) {
	layerTar, err := layerBytes(files)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithCompressionLevel(gzip.BestSpeed))
	if err != nil {
		return nil, fmt.Errorf("build layer: %w", err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, fmt.Errorf("append layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("image config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.OS = "linux"
	cf.Architecture = goruntime.GOARCH
	cf.Created = v1.Time{Time: epoch}
	cf.Config.Entrypoint = cfg.Entrypoint
	cf.Config.Cmd = cfg.Cmd
	cf.Config.Env = cfg.Env
	cf.Config.WorkingDir = cfg.WorkingDir
	cf.Config.User = cfg.User
	cf.Config.StopSignal = cfg.StopSignal
	cf.Config.Labels = cfg.Labels
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("set image config: %w", err)
	}
	return img, nil
}

// withParents adds a directory entry for every missing parent directory,
// so extractors never have to invent one.
func withParents(files []File) []File {
	have := map[string]bool{}
	for _, f := range files {
		have[strings.TrimSuffix(f.Path, "/")] = true
	}
	out := append([]File(nil), files...)
	for _, f := range files {
		for dir := path.Dir(strings.TrimSuffix(f.Path, "/")); dir != "." && dir != "/" && !have[dir]; dir = path.Dir(dir) {
			have[dir] = true
			out = append(out, File{Path: dir, Mode: 0o755})
		}
	}
	return out
}

// layerBytes writes files, sorted by path, into an uncompressed tar.
func layerBytes(files []File) ([]byte, error) {
	sorted := withParents(files)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range sorted {
		if err := writeEntry(tw, f); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", f.Path, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeEntry(tw *tar.Writer, f File) error {
	hdr := &tar.Header{Name: f.Path, Mode: f.Mode, ModTime: epoch, Format: tar.FormatPAX}
	data := f.Data
	switch {
	case f.Linkname != "":
		hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, f.Linkname
	case f.HostPath != "":
		b, err := os.ReadFile(f.HostPath)
		if err != nil {
			return err
		}
		data = b
		fallthrough
	case f.Data != nil:
		hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(data))
	default:
		hdr.Typeflag = tar.TypeDir
		hdr.Name += "/"
	}
	if hdr.Mode == 0 {
		hdr.Mode = 0o755
		if hdr.Typeflag == tar.TypeReg {
			hdr.Mode = 0o644
		}
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if hdr.Typeflag == tar.TypeReg {
		_, err := tw.Write(data)
		return err
	}
	return nil
}
