package systemd

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"k8s.io/utils/clock"
)

// Agent is what Run reads of the running agent (an *agent.Agent).
type Agent interface {
	// SourcesReady is closed when every pod source has delivered its
	// first full list and the agent reconciled them.
	SourcesReady() <-chan struct{}
	// Heartbeat is when the agent's sync loop last turned.
	Heartbeat() time.Time
	// PodCounts are the pods in phase Running and all the agent's pods.
	PodCounts() (running, total int)
}

// Sender sends one sd_notify message (a *Notifier).
type Sender interface {
	Notify(state string) error
}

// Defaults of Config.
const (
	// DefaultStatusPeriod is how often STATUS= is refreshed (sent only
	// when it changed).
	DefaultStatusPeriod = 5 * time.Second
	// DefaultReadyTimeout bounds how long READY=1 waits for the pod
	// sources: an API server that is down must not fail the start (the
	// kubelet runs its static pods without one, and a static pod may be
	// the API server), so READY=1 goes out anyway and STATUS= says what is
	// missing. It is below the unit's TimeoutStartSec=.
	DefaultReadyTimeout = 2 * time.Minute
)

// Config wires Run. Sender and Agent are required.
type Config struct {
	Sender Sender
	Agent  Agent
	// Watchdog is the service's WatchdogSec= (Notifier.Watchdog); 0: no
	// WATCHDOG=1 pings.
	Watchdog time.Duration
	// Stale is how old the agent's Heartbeat may be for it to count as
	// alive: longer than its slowest healthy sync loop iteration.
	Stale        time.Duration
	StatusPeriod time.Duration // default DefaultStatusPeriod
	ReadyTimeout time.Duration // default DefaultReadyTimeout
	Clock        clock.WithTicker
	Logger       *slog.Logger
}

// Run tells the service manager about the agent until ctx is done:
// READY=1 once the agent's pod sources have all listed (or ReadyTimeout
// passed), STATUS= with the pod counts whenever they change, WATCHDOG=1
// every Watchdog/2 while the agent's Heartbeat is fresher than Stale
// (never from the timer alone: a stuck sync loop stops the pings, and
// systemd restarts the service after WatchdogSec=), and STOPPING=1 when
// ctx ends. Blocking; send errors are logged, once per kind.
func Run(ctx context.Context, cfg Config) {
	if cfg.StatusPeriod <= 0 {
		cfg.StatusPeriod = DefaultStatusPeriod
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = DefaultReadyTimeout
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	period := cfg.StatusPeriod
	if cfg.Watchdog > 0 {
		// sd_watchdog_enabled(3): ping at half the timeout.
		period = min(period, cfg.Watchdog/2)
	}
	t := cfg.Clock.NewTicker(period)
	defer t.Stop()
	s := &state{cfg: &cfg, start: cfg.Clock.Now()}
	sourcesReady := cfg.Agent.SourcesReady()
	wake := sourcesReady
	for {
		s.send(s.next(cfg.Clock.Now(), isClosed(sourcesReady)))
		select {
		case <-ctx.Done():
			s.send("STOPPING=1\nSTATUS=Stopping; pods keep running")
			return
		case <-wake:
			wake = nil // closed: READY=1 at once, then by ticks
		case <-t.C():
		}
	}
}

// state is what Run remembers between messages. Run's goroutine only.
type state struct {
	cfg        *Config
	start      time.Time
	ready      time.Time // when READY=1 was sent; zero before
	lastStatus string
	stuck      bool // the last check found the heartbeat stale
	sendFailed bool
}

// next returns the message due at now ("" none): READY=1 with the first
// status, then WATCHDOG=1 while the agent is alive, and STATUS= when it
// changed.
func (s *state) next(now time.Time, sourcesReady bool) string {
	var lines []string
	if s.ready.IsZero() {
		if !sourcesReady && now.Sub(s.start) < s.cfg.ReadyTimeout {
			return s.status(nil, "Starting: waiting for the first list of every pod source")
		}
		s.ready = now
		lines = append(lines, "READY=1")
	}
	running, total := s.cfg.Agent.PodCounts()
	status := fmt.Sprintf("%d/%d pods running", running, total)
	if !sourcesReady {
		status += fmt.Sprintf("; not every pod source has listed its pods after %s (API server unreachable?)", s.cfg.ReadyTimeout)
	}
	if s.cfg.Watchdog > 0 {
		// Before the loop's first beat, READY=1's time stands in for it.
		beat := s.cfg.Agent.Heartbeat()
		if beat.Before(s.ready) {
			beat = s.ready
		}
		age := now.Sub(beat)
		switch stuck := age >= s.cfg.Stale; {
		case !stuck:
			lines = append(lines, "WATCHDOG=1")
			if s.stuck {
				s.cfg.Logger.Info("sync loop turns again; watchdog pings resumed")
			}
		case !s.stuck:
			s.cfg.Logger.Error("sync loop stuck: withholding watchdog pings, systemd will restart skiff (pods keep running)",
				"lastHeartbeat", beat, "age", age.Round(time.Second), "stale", s.cfg.Stale, "watchdogSec", s.cfg.Watchdog)
		}
		s.stuck = age >= s.cfg.Stale
		if s.stuck {
			status = fmt.Sprintf("Sync loop stuck since %s; %s", beat.UTC().Format(time.RFC3339), status)
		}
	}
	return s.status(lines, status)
}

// status appends STATUS=status to lines when it changed, and joins them.
func (s *state) status(lines []string, status string) string {
	if status != s.lastStatus {
		s.lastStatus = status
		lines = append(lines, "STATUS="+status)
	}
	return strings.Join(lines, "\n")
}

// send sends msg unless empty; the first failure is logged.
func (s *state) send(msg string) {
	if msg == "" {
		return
	}
	if err := s.cfg.Sender.Notify(msg); err != nil && !s.sendFailed {
		s.sendFailed = true
		s.cfg.Logger.Warn("sd_notify failed; further failures are not logged", "err", err)
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
