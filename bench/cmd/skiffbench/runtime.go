package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/skiffnode/skiff/bench/internal/criops"
	"github.com/skiffnode/skiff/bench/internal/extcd"
	"github.com/skiffnode/skiff/bench/internal/procfs"
	"github.com/skiffnode/skiff/bench/internal/report"
)

// measureOn runs the scenarios on runtime rt (report.RuntimeManaged or
// RuntimeExternal) with everything under dir: it starts the runtime (the
// external one's containerd; skiff starts the managed one), skiff and its
// CRI client, measures, and tears it all down again. mErr is what failed
// in the measurement, tErr what failed in the teardown (something may be
// left behind: do not start another runtime). Blocking.
func measureOn(ctx context.Context, f flags, cfg config, rt, dir string, log *slog.Logger) (run report.Run, mErr, tErr error) {
	run.Runtime = rt
	log.Info("runtime", "runtime", rt, "dir", dir)
	var ext *externalContainerd
	skiffRoot, endpoint, skiffArgs := dir, "", slices.Clone([]string(f.skiffArgs))
	sock := filepath.Join(dir, "containerd", "containerd.sock") // skiff's managed containerd
	stopExt := func() error {
		if ext == nil {
			return nil
		}
		return ext.stop(log)
	}
	if rt == report.RuntimeExternal {
		var err error
		if ext, err = startExternal(ctx, dir, f.imagesDir, f.pauseBin, f.podsPerShim > 1, log); err != nil {
			return run, err, nil
		}
		sock = ext.socket()
		skiffRoot, endpoint = filepath.Join(dir, "skiff"), "unix://"+sock
		if f.podsPerShim > 1 {
			skiffArgs = append(skiffArgs, "--pods-per-shim", itoa(f.podsPerShim))
		}
	}
	log.Info("starting skiff", "runtime", rt, "root", skiffRoot, "mode", cfg.mode)
	skiff, err := startSkiff(f.skiffBin, skiffRoot, f.imagesDir, endpoint, skiffArgs)
	if err != nil {
		return run, err, stopExt()
	}
	c, err := criops.Dial(sock)
	if err != nil {
		return run, err, errors.Join(skiff.stop(), stopExt())
	}
	b := &bench{cfg: cfg, c: c, skiff: skiff, log: log,
		floor: &criops.Floor{C: c, LogDir: filepath.Join(dir, "floorlogs"), VolumeDir: filepath.Join(dir, "floorvolumes"), Poll: 10 * time.Millisecond}}
	if f.kubeletBin != "" {
		b.kubelet = func(extra ...string) (*agent, error) { return startKubelet(f.kubeletBin, dir, sock, extra...) }
	}
	b.startSkiff = func(extra ...string) (*agent, error) {
		return startSkiff(f.skiffBin, skiffRoot, f.imagesDir, endpoint, append(slices.Clone(skiffArgs), extra...))
	}
	b.controlPlane, b.apiServer, b.dir, b.skiffRoot = f.controlPlane, f.apiServer, dir, skiffRoot
	if cfg.profileBase != "" {
		b.profilePath = cfg.profileBase + "-" + rt + "-steady.pprof"
		b.shimHeapPath = cfg.profileBase + "-" + rt + "-shim-heap.pprof"
	}
	b.runtimeProcs, b.runtimeDirs = managedProcs(skiffRoot), []string{filepath.Join(skiffRoot, "containerd")}
	if ext != nil {
		p := ext.cfg.Paths()
		b.runtimeProcs, b.runtimeDirs = externalProcs(ext), []string{p.Root, p.State, p.Log}
	}
	run.RuntimeVersion, run.Containerd = describeRuntime(ctx, c, ext)
	mErr = b.measure(ctx, &run)
	tErr = errors.Join(b.teardown(), stopExt())
	if tErr == nil {
		killStrayShims(dir, log)
		tErr = unmountUnder(dir, log)
	}
	return run, mErr, tErr
}

// describeRuntime returns the CRI's runtime name and version ("" when
// the call failed) and the report's line about a runtime: that version and
// how the containerd is configured (ext nil: skiff's managed one).
func describeRuntime(ctx context.Context, c *criops.Client, ext *externalContainerd) (version, line string) {
	version, err := c.Version(ctx)
	v := version
	if err != nil {
		v = "unknown version (" + err.Error() + ")"
	}
	if ext == nil {
		return version, fmt.Sprintf("%s (CRI): the containerd skiff finds (beside its executable, else from PATH), started and configured by skiff under its --root-dir: "+
			"runc v2 (cgroupfs), skiff's CNI conflist (bridge skiff0 10.88.0.0/16 + portmap; containerd adds loopback), "+
			"skiff's built-in pause image.", v)
	}
	return version, fmt.Sprintf("%s (CRI): %s", v, extcd.Summary(ext.cfg))
}

// killStrayShims kills the containerd shims of the containerd whose socket
// is under root that outlived it (see procfs.ShimsOf). Call it only once
// every sandbox was removed and that containerd stopped.
func killStrayShims(root string, log *slog.Logger) {
	pids, err := procfs.ShimsOf("/proc", root)
	if err != nil {
		log.Warn("looking for stray shims", "err", err)
		return
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			log.Warn("killing stray shim", "pid", pid, "err", err)
		}
	}
	if len(pids) > 0 {
		log.Warn("killed containerd shims that outlived their containerd", "pids", pids)
	}
}

// unmountUnder detaches every mount below dir (containerd's rootfs and shm
// mounts, the kubelet's root), deepest first. Call it only once the
// containerd and agents using dir have stopped.
func unmountUnder(dir string, log *slog.Logger) error {
	info, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return fmt.Errorf("read mounts: %w", err)
	}
	var errs []error
	for _, mp := range procfs.MountsUnder(string(info), dir) {
		err := unix.Unmount(mp, unix.MNT_DETACH)
		switch {
		case err == nil:
			log.Warn("unmounted a leftover mount", "mount", mp)
		case !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT): // else: gone already
			errs = append(errs, fmt.Errorf("unmount %s: %w", mp, err))
		}
	}
	return errors.Join(errs...)
}
