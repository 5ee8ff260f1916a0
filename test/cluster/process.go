package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/skiffnode/skiff/internal/childproc"
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
	proc *childproc.Proc // nil until started
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
	// childproc keeps the parent-death signal from firing when another
	// goroutine ends the thread that forked.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	proc, err := childproc.Start(cmd)
	if err != nil {
		return fmt.Errorf("%s: start: %w", p.name, err)
	}
	p.cmd, p.proc = cmd, proc
	return nil
}

// exited reports whether the process has exited, with Wait's error.
func (p *process) exited() (bool, error) {
	if p.cmd == nil {
		return true, nil
	}
	select {
	case <-p.proc.Done():
		return true, p.proc.Err()
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
	case <-p.proc.Done():
		return
	case <-time.After(grace):
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.proc.Done()
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
