package node

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/skiffnode/skiff/internal/pause"
	"github.com/skiffnode/skiff/runtime/containerd"
)

// pauseSource is what the managed containerd's pause image is built from:
// the executable file path, or, when path is "", the bytes of skiff's
// built-in pause executable.
type pauseSource struct {
	path string
	data []byte
}

// String names the source in logs.
func (s pauseSource) String() string {
	if s.path == "" {
		return fmt.Sprintf("built-in (%d bytes)", len(s.data))
	}
	return s.path
}

// ref returns the pause image reference; it changes with the executable's
// bytes.
func (s pauseSource) ref() (string, error) {
	if s.path == "" {
		return containerd.PauseImageRefData(s.data), nil
	}
	return containerd.PauseImageRef(s.path)
}

// ensure imports the pause image into containerd unless it is there and
// returns its reference. Idempotent.
func (s pauseSource) ensure(ctx context.Context, imp *containerd.Importer, cacheDir string) (string, error) {
	if s.path == "" {
		return containerd.EnsurePauseImageData(ctx, imp, s.data, cacheDir)
	}
	return containerd.EnsurePauseImage(ctx, imp, s.path, cacheDir)
}

// choosePause picks the pause executable, first match wins:
//
//  1. flag (--pause-binary), which must exist;
//  2. the built-in pause for goarch (amd64, arm64), a ~300-byte static
//     executable that needs no second binary and no CGO_ENABLED=0 build,
//     and whose process has an RSS of ~10 kB (skiff-pause: ~2.3 MB);
//  3. skiff-pause beside skiff's executable exe;
//  4. exe itself if it is statically linked (it runs pause.Run when invoked
//     as /pause, but each pause process then initialises all of skiff:
//     ~80 ms CPU, ~20 MB RSS);
//  5. otherwise an error saying what to do.
//
// Reads only file metadata and ELF headers.
func choosePause(flag, goarch, exe string, log *slog.Logger) (pauseSource, error) {
	if flag != "" {
		if _, err := os.Stat(flag); err != nil {
			return pauseSource{}, fmt.Errorf("--pause-binary: %w", err)
		}
		return pauseSource{path: flag}, nil
	}
	if data, ok := pause.Executable(goarch); ok {
		return pauseSource{data: data}, nil
	}
	sibling := filepath.Join(filepath.Dir(exe), "skiff-pause")
	if st, err := os.Stat(sibling); err == nil && st.Mode().IsRegular() {
		return pauseSource{path: sibling}, nil
	}
	if err := containerd.CheckStaticExecutable(exe); err != nil {
		return pauseSource{}, fmt.Errorf("no pause executable for %s: no skiff-pause beside %s, and %w; pass --pause-binary", goarch, exe, err)
	}
	log.Info("no built-in pause for this architecture and no skiff-pause beside the executable; the pause image is built from skiff itself (heavier pause processes)", "looked-for", sibling)
	return pauseSource{path: exe}, nil
}

// pauseExecutable is choosePause for this process.
func pauseExecutable(flag, goarch string, log *slog.Logger) (pauseSource, error) {
	exe, err := os.Executable()
	if err != nil {
		return pauseSource{}, fmt.Errorf("own executable: %w", err)
	}
	return choosePause(flag, goarch, exe, log)
}
