package extcd

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"os"
	goruntime "runtime"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// WritePauseArchive wraps the static executable at exePath (skiff-pause, a
// Go program) into a one-layer image, /pause with entrypoint ["/pause"],
// and writes it as a docker-archive at archive, tagged PauseRef. It returns
// the reference. Reproducible: the same executable gives the same image.
func WritePauseArchive(exePath, archive string) (string, error) {
	exe, err := os.ReadFile(exePath)
	if err != nil {
		return "", fmt.Errorf("pause executable: %w", err)
	}
	if err := checkStatic(exe, exePath); err != nil {
		return "", err
	}
	ref := PauseRef(exe)
	tag, err := name.NewTag(ref)
	if err != nil {
		return "", fmt.Errorf("pause image reference %q: %w", ref, err)
	}
	img, err := pauseImage(exe)
	if err != nil {
		return "", err
	}
	if err := tarball.WriteToFile(archive, tag, img); err != nil {
		return "", fmt.Errorf("write pause image archive %s: %w", archive, err)
	}
	return ref, nil
}

// pauseImage builds the image in memory.
func pauseImage(exe []byte) (v1.Image, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0).UTC()
	if err := tw.WriteHeader(&tar.Header{Name: "pause", Mode: 0o755, Size: int64(len(exe)), ModTime: epoch, Typeflag: tar.TypeReg}); err != nil {
		return nil, fmt.Errorf("pause layer: %w", err)
	}
	if _, err := tw.Write(exe); err != nil {
		return nil, fmt.Errorf("pause layer: %w", err)
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("pause layer: %w", err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		return nil, fmt.Errorf("pause layer: %w", err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, fmt.Errorf("pause image: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("pause image config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", goruntime.GOARCH
	cf.Created = v1.Time{Time: epoch}
	cf.Config.Entrypoint = []string{"/pause"}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("pause image config: %w", err)
	}
	return img, nil
}

// checkStatic fails for a dynamically linked executable: the image has no
// libraries.
func checkStatic(exe []byte, path string) error {
	f, err := elf.NewFile(bytes.NewReader(exe))
	if err != nil {
		return fmt.Errorf("pause executable %s is not ELF: %w", path, err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("pause executable %s is dynamically linked; build it with CGO_ENABLED=0 (make build)", path)
		}
	}
	return nil
}
