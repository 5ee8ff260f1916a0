package supervisor

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"syscall"
)

// Process is one supervised process as the supervisor sees it. The real
// one is a Child; tests use fakes.
type Process interface {
	// Pid is the process ID.
	Pid() int
	// Signal sends sig; a process that has exited already is not an error.
	Signal(sig syscall.Signal) error
	// Exited is closed when the process has exited (and been reaped).
	Exited() <-chan struct{}
	// ExitErr is the exit status (nil: exit status 0); valid once Exited
	// is closed.
	ExitErr() error
}

// Child is a child process of skiff. Its methods are safe for concurrent
// use.
type Child struct {
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // written before exited is closed
}

// StartChild starts binary with args and env (nil: skiff's environment)
// in its own process group (a
// terminal's SIGINT reaches skiff only, which decides the shutdown order),
// its output appended to logPath, with the parent-death signal SIGTERM (it
// goes down with skiff even when skiff crashes). Once it has exited,
// pidFile (if not empty) is removed if it still names it. A goroutine owns
// the child until it exits (reaping it); it ends by itself.
func StartChild(binary string, args, env []string, logPath, pidFile string) (*Child, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return nil, fmt.Errorf("open %s log: %w", filepath.Base(binary), err)
	}
	c := &Child{cmd: exec.Command(binary, args...), exited: make(chan struct{})}
	c.cmd.Env = env
	c.cmd.Stdout, c.cmd.Stderr = logFile, logFile
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	started := make(chan error, 1)
	// The goroutine keeps its OS thread locked while the child lives:
	// Pdeathsig fires when the *thread* that forked exits, and a locked
	// thread cannot be reused (and ended) by another goroutine that exits
	// locked.
	go func() {
		goruntime.LockOSThread()
		defer close(c.exited)
		defer logFile.Close()
		if err := c.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		c.err = c.cmd.Wait()
		if pidFile != "" {
			removePidFile(pidFile, c.cmd.Process.Pid)
		}
		// Exiting with the thread still locked ends the thread; fine.
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start %s: %w", binary, err)
	}
	return c, nil
}

// Pid implements Process.
func (c *Child) Pid() int { return c.cmd.Process.Pid }

// Exited implements Process.
func (c *Child) Exited() <-chan struct{} { return c.exited }

// ExitErr implements Process.
func (c *Child) ExitErr() error { return c.err }

// Signal implements Process.
func (c *Child) Signal(sig syscall.Signal) error {
	if err := c.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

// removePidFile removes path if it holds pid: a process that a newer skiff
// started for the same root has written its own.
func removePidFile(path string, pid int) {
	b, err := os.ReadFile(path)
	if err == nil && bytes.Equal(bytes.TrimSpace(b), []byte(strconv.Itoa(pid))) {
		_ = os.Remove(path)
	}
}

// ExitStatus describes a process's exit error for logs.
func ExitStatus(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}
