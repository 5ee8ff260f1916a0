package nodeshutdown

import (
	"context"
	"io"
	"time"
)

// Logind is what the Manager needs of systemd-logind (the kubelet's
// dbusInhibiter). DBusLogind is the production one; tests use a fake.
type Logind interface {
	// InhibitDelayMax is logind's InhibitDelayMaxUSec: how long a delay
	// inhibitor lock may hold a shutdown back.
	InhibitDelayMax(ctx context.Context) (time.Duration, error)
	// OverrideInhibitDelayMax makes d logind's InhibitDelayMaxSec (a
	// logind.conf drop-in) and has logind reload its configuration.
	OverrideInhibitDelayMax(ctx context.Context, d time.Duration) error
	// Inhibit takes a delay inhibitor lock on shutdown; closing the lock
	// releases it.
	Inhibit(ctx context.Context) (io.Closer, error)
	// PrepareForShutdown delivers logind's PrepareForShutdown signals
	// (true: a shutdown starts, false: it was cancelled) until ctx is done
	// or the connection is lost; then the channel is closed.
	PrepareForShutdown(ctx context.Context) (<-chan bool, error)
	// Close ends the connection.
	Close() error
}
