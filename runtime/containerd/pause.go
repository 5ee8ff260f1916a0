package containerd

import (
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/skiffnode/skiff/internal/imagebuild"
)

// PauseRepository is the repository of skiff's pause images.
const PauseRepository = "skiff.local/pause"

// PauseImageRef returns the pause image reference for the executable at
// exePath: skiff.local/pause:<first 12 hex digits of its SHA-256>. Reads the
// file; pure otherwise.
func PauseImageRef(exePath string) (string, error) {
	sum, err := fileSHA256(exePath)
	if err != nil {
		return "", fmt.Errorf("pause image ref: %w", err)
	}
	return PauseRepository + ":" + sum[:12], nil
}

// PauseImageRefData is PauseImageRef for an executable held in memory
// (skiff's built-in pause, internal/pause.Executable). Pure.
func PauseImageRefData(exe []byte) string {
	sum := sha256.Sum256(exe)
	return PauseRepository + ":" + hex.EncodeToString(sum[:])[:12]
}

// EnsurePauseImage makes sure containerd has the pause image built from the
// executable at exePath and returns its reference (PauseImageRef). The image
// has one layer holding the executable as /pause, with entrypoint
// ["/pause"]; the executable must dispatch to pause.Run when its argv[0]
// base name is "pause", and must be statically linked (build skiff with
// CGO_ENABLED=0), since the image has no libraries. The archive is cached
// in cacheDir as pause-<hash>.tar and imported only if containerd lacks the
// image. Idempotent; concurrent calls are harmless but redundant.
func EnsurePauseImage(ctx context.Context, imp *Importer, exePath, cacheDir string) (ref string, err error) {
	sum, err := fileSHA256(exePath)
	if err != nil {
		return "", fmt.Errorf("pause image: %w", err)
	}
	check := func() error { return checkStaticFile(exePath) }
	file := imagebuild.File{Path: "pause", Mode: 0o755, HostPath: exePath}
	return ensurePauseImage(ctx, imp, PauseRepository+":"+sum[:12], check, file, cacheDir)
}

// EnsurePauseImageData is EnsurePauseImage for the executable exe held in
// memory (skiff's built-in pause); its reference is PauseImageRefData(exe),
// so the tag changes whenever the bytes do. Idempotent.
func EnsurePauseImageData(ctx context.Context, imp *Importer, exe []byte, cacheDir string) (string, error) {
	check := func() error { return checkStatic(bytes.NewReader(exe), "the built-in pause executable") }
	file := imagebuild.File{Path: "pause", Mode: 0o755, Data: exe}
	return ensurePauseImage(ctx, imp, PauseImageRefData(exe), check, file, cacheDir)
}

// ensurePauseImage imports the one-file image ref unless containerd has it;
// check runs before the archive is built.
func ensurePauseImage(ctx context.Context, imp *Importer, ref string, check func() error, file imagebuild.File, cacheDir string) (string, error) {
	has, err := imp.HasImage(ctx, ref)
	if err != nil {
		return "", fmt.Errorf("pause image: %w", err)
	}
	if has {
		return ref, nil
	}
	if err := check(); err != nil {
		return "", fmt.Errorf("pause image: %w", err)
	}
	tag := ref[len(PauseRepository)+1:]
	archive := filepath.Join(cacheDir, "pause-"+tag+".tar")
	if _, err := os.Stat(archive); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(cacheDir, 0o755); err != nil {
			return "", fmt.Errorf("pause image cache: %w", err)
		}
		files := []imagebuild.File{file}
		if err := imagebuild.WriteArchive(archive, ref, files, imagebuild.Config{Entrypoint: []string{"/pause"}}); err != nil {
			return "", fmt.Errorf("pause image: %w", err)
		}
	} else if err != nil {
		return "", fmt.Errorf("pause image cache: %w", err)
	}
	if _, err := imp.ImportArchive(ctx, archive); err != nil {
		return "", fmt.Errorf("pause image: %w", err)
	}
	return ref, nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// checkStaticFile is checkStatic for the file at path.
func checkStaticFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%s is not an ELF executable: %w", path, err)
	}
	defer f.Close()
	return checkStatic(f, path)
}

// checkStatic fails for a dynamically linked ELF executable (named name in
// errors): it could not run in the library-less pause image.
func checkStatic(r io.ReaderAt, name string) error {
	f, err := elf.NewFile(r)
	if err != nil {
		return fmt.Errorf("%s is not an ELF executable: %w", name, err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked and cannot run in the pause image; build it with CGO_ENABLED=0", name)
		}
	}
	return nil
}

// CheckStaticExecutable fails unless path is a statically linked ELF
// executable, one that can run in the library-less pause image.
func CheckStaticExecutable(path string) error { return checkStaticFile(path) }
