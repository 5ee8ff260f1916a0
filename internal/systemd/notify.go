// Package systemd makes skiff agent a good systemd service: sd_notify(3)
// readiness, status, watchdog and stopping messages driven by the agent's
// state (Run), and log lines in journald's stream format (LogHandler).
// Everything is a no-op where skiff does not run under systemd
// (NOTIFY_SOCKET and JOURNAL_STREAM unset).
package systemd

import (
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
)

// Notifier sends sd_notify(3) messages to the service manager's socket.
// A nil *Notifier (skiff not started by a service manager) sends nothing.
// Safe for concurrent use.
type Notifier struct {
	addr     *net.UnixAddr
	watchdog time.Duration
}

// FromEnv returns the Notifier of NOTIFY_SOCKET, nil when it is unset,
// and the watchdog interval of WATCHDOG_USEC (0 when it is unset or meant
// for another process, WATCHDOG_PID). It unsets NOTIFY_SOCKET,
// WATCHDOG_USEC and WATCHDOG_PID, as sd_notify's unset_environment does:
// skiff's children must not inherit them. The managed containerd speaks
// sd_notify itself and would send READY=1 as soon as it serves, long
// before the agent is ready; systemd refuses messages from other
// processes than the main one (NotifyAccess=main) only with a warning
// each, and a test listening on the socket would take them for skiff's.
// Call it before starting any child process.
func FromEnv() (*Notifier, error) {
	socket := os.Getenv("NOTIFY_SOCKET")
	// SdWatchdogEnabled compares WATCHDOG_PID with our pid and unsets both.
	wd, wdErr := daemon.SdWatchdogEnabled(true)
	if err := os.Unsetenv("NOTIFY_SOCKET"); err != nil {
		return nil, fmt.Errorf("unset NOTIFY_SOCKET: %w", err)
	}
	if socket == "" {
		return nil, nil
	}
	n := &Notifier{addr: &net.UnixAddr{Name: socket, Net: "unixgram"}, watchdog: wd}
	if wdErr != nil {
		return n, fmt.Errorf("WATCHDOG_USEC: %w", wdErr)
	}
	return n, nil
}

// Watchdog returns the service's watchdog timeout (WatchdogSec=), 0 when
// none is set.
func (n *Notifier) Watchdog() time.Duration {
	if n == nil {
		return 0
	}
	return n.watchdog
}

// Notify sends state, newline-separated VAR=value assignments such as
// "READY=1\nSTATUS=...", in one datagram. Each call dials afresh, as
// go-systemd's daemon.SdNotify does: a socket connected once would break
// when systemd re-executes itself (daemon-reexec) and binds a new socket.
// Non-blocking beyond the datagram write.
func (n *Notifier) Notify(state string) error {
	if n == nil {
		return nil
	}
	conn, err := net.DialUnix(n.addr.Net, nil, n.addr)
	if err != nil {
		return fmt.Errorf("sd_notify %s: %w", n.addr.Name, err)
	}
	_, werr := conn.Write([]byte(state))
	if err := errors.Join(werr, conn.Close()); err != nil {
		return fmt.Errorf("sd_notify %s: %w", n.addr.Name, err)
	}
	return nil
}
