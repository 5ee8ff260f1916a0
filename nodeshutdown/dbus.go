package nodeshutdown

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/skiffnode/skiff/internal/atomicfile"
)

// logind's and systemd's D-Bus names, as the kubelet's systemd_linux.go.
const (
	logindService   = "org.freedesktop.login1"
	logindObject    = dbus.ObjectPath("/org/freedesktop/login1")
	logindInterface = "org.freedesktop.login1.Manager"

	systemdService   = "org.freedesktop.systemd1"
	systemdObject    = dbus.ObjectPath("/org/freedesktop/systemd1")
	systemdInterface = "org.freedesktop.systemd1.Manager"
)

// DefaultDropInDir is where logind reads configuration drop-ins.
const DefaultDropInDir = "/etc/systemd/logind.conf.d"

// DropInName is skiff's logind drop-in (the kubelet writes 99-kubelet.conf).
const DropInName = "99-skiff.conf"

// DBusLogind is Logind over the system bus.
type DBusLogind struct {
	conn *dbus.Conn
	// dropInDir is where OverrideInhibitDelayMax writes DropInName.
	dropInDir string
}

// ConnectLogind connects to the system bus and checks that logind answers
// (it reads InhibitDelayMaxUSec). dropInDir "" is DefaultDropInDir. An
// error means there is no system bus or no logind: graceful shutdown
// cannot work on this machine.
func ConnectLogind(ctx context.Context, dropInDir string) (*DBusLogind, error) {
	if dropInDir == "" {
		dropInDir = DefaultDropInDir
	}
	conn, err := dbus.ConnectSystemBus(dbus.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("connecting to the system bus: %w", err)
	}
	l := &DBusLogind{conn: conn, dropInDir: dropInDir}
	if _, err := l.InhibitDelayMax(ctx); err != nil {
		_ = conn.Close()
		return nil, err
	}
	return l, nil
}

// InhibitDelayMax reads logind's InhibitDelayMaxUSec.
func (l *DBusLogind) InhibitDelayMax(ctx context.Context) (time.Duration, error) {
	var v dbus.Variant
	err := l.conn.Object(logindService, logindObject).CallWithContext(ctx,
		"org.freedesktop.DBus.Properties.Get", 0, logindInterface, "InhibitDelayMaxUSec").Store(&v)
	if err != nil {
		return 0, fmt.Errorf("reading logind's InhibitDelayMaxUSec: %w", err)
	}
	usec, ok := v.Value().(uint64)
	if !ok {
		return 0, fmt.Errorf("logind's InhibitDelayMaxUSec is a %s, not a uint64", v.Signature())
	}
	return time.Duration(usec) * time.Microsecond, nil
}

// OverrideInhibitDelayMax writes <dropInDir>/99-skiff.conf with
// InhibitDelayMaxSec = d (whole seconds, rounded up) and sends logind
// SIGHUP through systemd (KillUnit), as the kubelet does.
func (l *DBusLogind) OverrideInhibitDelayMax(ctx context.Context, d time.Duration) error {
	if err := WriteDropIn(l.dropInDir, d); err != nil {
		return err
	}
	const sighup int32 = 1
	err := l.conn.Object(systemdService, systemdObject).CallWithContext(ctx,
		systemdInterface+".KillUnit", 0, "systemd-logind.service", "all", sighup).Err
	if err != nil {
		return fmt.Errorf("reloading logind (KillUnit SIGHUP): %w", err)
	}
	return nil
}

// WriteDropIn writes dir/99-skiff.conf setting logind's InhibitDelayMaxSec
// to d (whole seconds, rounded up), creating dir.
func WriteDropIn(dir string, d time.Duration) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("logind drop-in: %w", err)
	}
	secs := int64((d + time.Second - 1) / time.Second)
	body := fmt.Sprintf("# skiff: graceful node shutdown needs logind to wait this long\n[Login]\nInhibitDelayMaxSec=%d\n", secs)
	path := filepath.Join(dir, DropInName)
	if err := atomicfile.Write(path, []byte(body), 0o644); err != nil {
		return fmt.Errorf("logind drop-in %s: %w", path, err)
	}
	return nil
}

// Inhibit takes logind's delay lock on shutdown (Inhibit("shutdown",
// "skiff", ..., "delay")); the lock is a file descriptor, held until it is
// closed.
func (l *DBusLogind) Inhibit(ctx context.Context) (io.Closer, error) {
	var fd dbus.UnixFD
	err := l.conn.Object(logindService, logindObject).CallWithContext(ctx, logindInterface+".Inhibit", 0,
		"shutdown", "skiff", "skiff needs time to stop the node's pods", "delay").Store(&fd)
	if err != nil {
		return nil, fmt.Errorf("taking logind's inhibitor lock: %w", err)
	}
	f := os.NewFile(uintptr(fd), "logind-inhibitor")
	if f == nil {
		return nil, errors.New("taking logind's inhibitor lock: invalid file descriptor")
	}
	return f, nil
}

// PrepareForShutdown subscribes to logind's PrepareForShutdown signal.
func (l *DBusLogind) PrepareForShutdown(ctx context.Context) (<-chan bool, error) {
	err := l.conn.AddMatchSignalContext(ctx, dbus.WithMatchInterface(logindInterface),
		dbus.WithMatchMember("PrepareForShutdown"), dbus.WithMatchObjectPath(logindObject))
	if err != nil {
		return nil, fmt.Errorf("subscribing to logind's PrepareForShutdown: %w", err)
	}
	sigs := make(chan *dbus.Signal, 4)
	l.conn.Signal(sigs)
	out := make(chan bool)
	go func() {
		defer close(out)
		defer l.conn.RemoveSignal(sigs)
		for {
			select {
			case <-ctx.Done():
				return
			case s, ok := <-sigs:
				if !ok {
					return
				}
				active, ok := shutdownSignal(s)
				if !ok {
					continue
				}
				select {
				case out <- active:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out, nil
}

// shutdownSignal reads a PrepareForShutdown signal's argument.
func shutdownSignal(s *dbus.Signal) (active, ok bool) {
	if s == nil || s.Name != logindInterface+".PrepareForShutdown" || len(s.Body) == 0 {
		return false, false
	}
	active, ok = s.Body[0].(bool)
	return active, ok
}

// Close ends the connection.
func (l *DBusLogind) Close() error { return l.conn.Close() }
