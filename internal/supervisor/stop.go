package supervisor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// leftoverStopTimeout bounds stopping a process left over from an earlier
// skiff run, before it is killed.
const leftoverStopTimeout = 10 * time.Second

// Stop stops p: SIGTERM, then, when ctx ends first, SIGKILL and an error
// saying so. name names it in logs and errors. Idempotent; blocks until p
// has exited.
func Stop(ctx context.Context, p Process, name string, logger *slog.Logger) error {
	select {
	case <-p.Exited():
		return nil
	default:
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("stop %s: %w", name, err)
	}
	select {
	case <-p.Exited():
		logger.Info(name+" stopped", "pid", p.Pid(), "status", ExitStatus(p.ExitErr()))
		return nil
	case <-ctx.Done():
	}
	logger.Warn(name+" did not stop in time; killing it", "pid", p.Pid())
	if err := p.Signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill %s: %w", name, err)
	}
	<-p.Exited()
	return fmt.Errorf("%s did not stop in time and was killed: %w", name, ctx.Err())
}

// LeftoverPid returns the pid in pidFile if that process is alive and has
// marker among its arguments (pids get reused: a pid file alone never
// names a process to kill).
func LeftoverPid(pidFile, marker string) (int, bool) {
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 || !Alive(pid) {
		return 0, false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return 0, false
	}
	for _, arg := range bytes.Split(cmdline, []byte{0}) {
		if string(arg) == marker {
			return pid, true
		}
	}
	return 0, false
}

// StopPid stops a process that is not our child: SIGTERM, then SIGKILL
// after leftoverStopTimeout (or when ctx ends), polling until it is gone.
func StopPid(ctx context.Context, pid int) error {
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return err
	}
	termCtx, cancel := context.WithTimeout(ctx, leftoverStopTimeout)
	defer cancel()
	if waitGone(termCtx, pid) {
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	killCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if !waitGone(killCtx, pid) {
		return fmt.Errorf("process %d still alive after SIGKILL", pid)
	}
	return nil
}

func waitGone(ctx context.Context, pid int) bool {
	for Alive(pid) {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
	return true
}

// Alive reports whether pid exists and is not a zombie.
func Alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesized command name: "pid (comm) S ...".
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	return b[i+2] != 'Z' && b[i+2] != 'X'
}

// LogTail returns the last n lines of a log file, for error messages.
func LogTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
