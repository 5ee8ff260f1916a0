package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// process is one control plane component: a child process in its own
// process group, killed by the kernel if the test process dies, with its
// output appended to <dir>/<name>.log.
type process struct {
	name string
	path string
	args []string
	log  string // the log file's path

	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has been waited for
	err  error         // Wait's result, set before done is closed
}

// newProcess describes a component; start runs it.
func newProcess(dir, name, path string, args ...string) *process {
	return &process{name: name, path: path, args: args, log: filepath.Join(dir, name+".log")}
}

// start runs the process; a process that has exited may be started again
// (its log is appended to). It does not wait for the process to be ready.
func (p *process) start() error {
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("%s: log: %w", p.name, err)
	}
	defer func() { _ = f.Close() }() // the child has its own descriptor
	fmt.Fprintf(f, "=== %s: %s %s\n", time.Now().Format(time.RFC3339Nano), p.path, strings.Join(p.args, " "))
	cmd := exec.Command(p.path, p.args...)
	cmd.Stdout, cmd.Stderr = f, f
	// Pdeathsig fires when the *thread* that forked exits: the goroutine
	// keeps its thread locked while the process lives, so no goroutine that
	// exits locked can end that thread and kill the process with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	done, started := make(chan struct{}), make(chan error, 1)
	p.err = nil
	go func() {
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.err = cmd.Wait()
		close(done)
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("%s: start: %w", p.name, err)
	}
	p.cmd, p.done = cmd, done
	return nil
}

// exited reports whether the process has exited, with Wait's error.
func (p *process) exited() (bool, error) {
	if p.cmd == nil {
		return true, nil
	}
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// stop sends sig to the process group, and SIGKILL if the process has not
// exited after grace; it returns once the process has been waited for. A
// process that never started or has already exited is left alone.
func (p *process) stop(sig syscall.Signal, grace time.Duration) {
	if p.cmd == nil {
		return
	}
	if done, _ := p.exited(); done {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	select {
	case <-p.done:
		return
	case <-time.After(grace):
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// logTail returns the last lines of the process's log, for errors.
func (p *process) logTail(lines int) string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	all := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return string(bytes.Join(all, []byte("\n")))
}

// exitError describes a process that exited while it was expected to run,
// with the end of its log.
func (p *process) exitError(err error) error {
	if err == nil {
		err = errors.New("exited with status 0")
	}
	return fmt.Errorf("%s exited: %w; the end of %s:\n%s", p.name, err, p.log, p.logTail(20))
}

// freePorts returns n distinct TCP ports free on 127.0.0.1 now. Another
// process may take one before it is used; the component then fails to
// start, with the reason in its log.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
