package cgroups

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	libcg "github.com/opencontainers/cgroups"
	"golang.org/x/sys/unix"
)

// killRounds and killWait bound how long RemovePod tries to empty a pod
// cgroup: the kubelet's tryKillingCgroupProcesses makes five rounds.
const (
	killRounds = 5
	killWait   = 100 * time.Millisecond
)

// killProcesses sends SIGKILL to every process left in cgroup n and its
// children, in up to killRounds rounds, until none is left. A pod cgroup
// that is being removed belongs to no running sandbox, so whatever still
// runs in it is a leak (a shim killed under it, an agent crash): the
// kubelet's pod cgroup Destroy kills it the same way before removing the
// cgroup. Without it, removal retried for ~10 s per cgroup and failed.
// Blocking; returns ctx's error if ctx ends first. A missing cgroup is fine.
func (m *Manager) killProcesses(ctx context.Context, n Name) error {
	dir := m.Dir(n, "memory")
	for round := 1; ; round++ {
		pids, err := allPids(dir)
		if err != nil {
			return fmt.Errorf("processes of cgroup %s: %w", m.relPath(n), err)
		}
		if len(pids) == 0 {
			return nil
		}
		if round > killRounds {
			return fmt.Errorf("cgroup %s: %d processes left after %d rounds of SIGKILL", m.relPath(n), len(pids), killRounds)
		}
		m.log.Warn("killing processes left in a pod cgroup", "cgroup", m.relPath(n), "pids", pids)
		for _, pid := range pids {
			if err := unix.Kill(pid, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
				m.log.Warn("kill", "pid", pid, "err", err)
			}
		}
		t := time.NewTimer(time.Duration(round) * killWait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// allPids lists the processes of the cgroup directory dir and of every
// cgroup below it (the memory hierarchy on v1: every container process
// joins it). A missing directory has none.
func allPids(dir string) ([]int, error) {
	var pids []int
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.IsDir() {
			return nil
		}
		p, err := libcg.GetPids(path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		pids = append(pids, p...)
		return nil
	})
	return pids, err
}
