package containerd

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	goruntime "runtime"
	"strconv"
	"syscall"
)

// process is one containerd process as the supervisor sees it. The real one
// is a child; tests use fakes.
type process interface {
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

// child is a containerd child process of skiff.
type child struct {
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // written before exited is closed
}

// startChild starts binary with args in its own process group, its output
// appended to logPath, with the parent-death signal SIGTERM. Once it has
// exited, pidFile is removed if it still names it. A goroutine owns the
// child until it exits (reaping it); it ends by itself.
func startChild(binary string, args []string, logPath, pidFile string) (*child, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return nil, fmt.Errorf("open containerd log: %w", err)
	}
	c := &child{cmd: exec.Command(binary, args...), exited: make(chan struct{})}
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
		removePidFile(pidFile, c.cmd.Process.Pid)
		// Exiting with the thread still locked ends the thread; fine.
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start containerd %s: %w", binary, err)
	}
	return c, nil
}

func (c *child) Pid() int                { return c.cmd.Process.Pid }
func (c *child) Exited() <-chan struct{} { return c.exited }
func (c *child) ExitErr() error          { return c.err }

func (c *child) Signal(sig syscall.Signal) error {
	if err := c.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

// removePidFile removes path if it holds pid: a containerd that a newer
// skiff started on the same root has written its own.
func removePidFile(path string, pid int) {
	b, err := os.ReadFile(path)
	if err == nil && bytes.Equal(bytes.TrimSpace(b), []byte(strconv.Itoa(pid))) {
		_ = os.Remove(path)
	}
}

func exitStatus(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}
