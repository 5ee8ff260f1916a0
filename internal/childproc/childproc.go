// Package childproc starts child processes whose parent-death signal
// (SysProcAttr.Pdeathsig) holds: the signal fires when the *thread* that
// forked exits, not the process, so the forking goroutine keeps its thread
// locked while the child lives. No other goroutine that exits locked can
// then end that thread and the child with it (test/cluster's processes,
// the e2e suite's containerd supervisor and the bench's children share
// their test or harness process). internal/supervisor does the same for
// the agent's own children.
package childproc

import (
	"os/exec"
	"runtime"
)

// Proc is a started child; its goroutine waits for it.
type Proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// Start starts cmd (its SysProcAttr set by the caller) from a goroutine
// that stays locked to its thread until cmd has exited and been waited
// for. The error is cmd.Start's.
func Start(cmd *exec.Cmd) (*Proc, error) {
	p := &Proc{cmd: cmd, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

// Done is closed once the child has exited and been waited for.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Err is cmd.Wait's error; valid once Done is closed.
func (p *Proc) Err() error { return p.err }

// Cmd is the started command.
func (p *Proc) Cmd() *exec.Cmd { return p.cmd }
