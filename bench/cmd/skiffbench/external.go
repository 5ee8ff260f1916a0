package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/skiffnode/skiff/bench/internal/criops"
	"github.com/skiffnode/skiff/bench/internal/extcd"
)

// externalContainerd is the containerd the harness starts for the external
// runtime (issue 13): /usr/bin/containerd with a plain CRI config
// (extcd), its own root, state, socket and CNI bridge under one directory.
type externalContainerd struct {
	cfg  extcd.Config
	proc *process
}

// socket is its CRI socket path.
func (e *externalContainerd) socket() string { return e.cfg.Paths().Socket }

// startExternal builds the pause image from pauseBin, writes the config
// under dir, starts containerd, waits for its CRI API and imports the pause
// image and busybox.tar and testserver.tar (from imagesDir) into its k8s.io
// namespace with ctr. shimGroups passes the shim group annotation through
// (extcd.Config.ShimGroups). On error whatever was started is stopped
// again.
func startExternal(ctx context.Context, dir, imagesDir, pauseBin string, shimGroups bool, log *slog.Logger) (_ *externalContainerd, retErr error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("external containerd dir: %w", err)
	}
	pauseArchive := filepath.Join(dir, "pause.tar")
	ref, err := extcd.WritePauseArchive(pauseBin, pauseArchive)
	if err != nil {
		return nil, err
	}
	cfg := extcd.Config{Dir: dir, SandboxImage: ref, ShimGroups: shimGroups}.WithDefaults()
	if err := extcd.WriteFiles(cfg); err != nil {
		return nil, err
	}
	p, err := startProcess("containerd", cfg.Paths().Log, cfg.Binary, "--config", cfg.Paths().Config)
	if err != nil {
		return nil, err
	}
	e := &externalContainerd{cfg: cfg, proc: p}
	defer func() {
		if retErr != nil {
			retErr = errors.Join(retErr, e.stop(log))
		}
	}()
	c, err := criops.Dial(e.socket())
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if err := p.waitFor("its CRI API", time.Minute, func() error {
		vctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := c.Version(vctx)
		return err
	}); err != nil {
		return nil, err
	}
	for _, archive := range []string{pauseArchive, filepath.Join(imagesDir, "busybox.tar"), filepath.Join(imagesDir, "testserver.tar")} {
		out, err := exec.CommandContext(ctx, "ctr", "-n", "k8s.io", "-a", e.socket(), "images", "import", archive).CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("import %s into the external containerd: %w: %s", archive, err, strings.TrimSpace(string(out)))
		}
	}
	return e, nil
}

// stop stops containerd (SIGTERM, then SIGKILL after a minute), deletes
// the CNI bridge and unmounts whatever is still mounted under its
// directory; the caller kills stray shims (killStrayShims) once it knows
// every sandbox was removed. Blocking, idempotent.
func (e *externalContainerd) stop(log *slog.Logger) error {
	err := e.proc.stop()
	if out, lerr := exec.Command("ip", "link", "delete", e.cfg.Bridge).CombinedOutput(); lerr != nil &&
		!strings.Contains(string(out), "Cannot find device") {
		err = errors.Join(err, fmt.Errorf("delete bridge %s: %w: %s", e.cfg.Bridge, lerr, strings.TrimSpace(string(out))))
	}
	return errors.Join(err, unmountUnder(e.cfg.Dir, log))
}
