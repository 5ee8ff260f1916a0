// Package pause is the sandbox ("infra") process of a pod: it holds the pod's
// namespaces open, reaps orphaned children as PID 1 and exits cleanly on
// SIGINT or SIGTERM. skiff's main dispatches to Run when invoked as /pause,
// so the pause image is built from skiff's own executable and no registry is
// needed.
//
// The package imports only errors, os, os/signal and syscall to keep the
// process small.
package pause

import (
	"errors"
	"os"
	"os/signal"
	"syscall"
)

// Run blocks until SIGINT or SIGTERM arrives and then returns 0, the exit
// code the caller should pass to os.Exit. While running it reaps every
// exited child (the pause process is PID 1 of the sandbox's PID namespace
// when that namespace is shared). Run must be called at most once per
// process; it is not meant to be used concurrently.
func Run() int {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	// Children that exited before Notify took effect sent no SIGCHLD we saw.
	reap()
	for sig := range sigs {
		if sig == syscall.SIGCHLD {
			reap()
			continue
		}
		return 0
	}
	return 0
}

// reap collects every exited child without blocking. Signals coalesce, so
// one SIGCHLD may stand for several exits: loop until none is left.
func reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if pid <= 0 || err != nil {
			return
		}
	}
}
