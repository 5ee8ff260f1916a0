package nodeshutdown

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// The kubelet's words (pkg/kubelet/nodeshutdown, v1.34).
const (
	// Reason and Message are a pod's status once stopped for a shutdown.
	Reason  = "Terminated"
	Message = "Pod was terminated in response to imminent node shutdown."
	// NotAdmittedReason and NotAdmittedMessage reject new pods while the
	// node shuts down.
	NotAdmittedReason  = "NodeShutdown"
	NotAdmittedMessage = "Pod was rejected as the node is shutting down."
	// EventNodeShutdown is the node event of a detected shutdown or
	// cancellation.
	EventNodeShutdown = "NodeShutdown"
)

// ErrShuttingDown is the node's not-ready reason while it shuts down (the
// kubelet's ShutdownStatus).
var ErrShuttingDown = errors.New("node is shutting down")

// reconnectPeriod is the wait before watching logind again after the
// connection was lost (the kubelet's dbusReconnectPeriod).
const reconnectPeriod = time.Second

// Pods is what the Manager needs of the agent.
type Pods interface {
	// ActivePods are the pods not finished yet.
	ActivePods() []*v1.Pod
	// TerminatePod stops pod uid for good with the grace period, reason,
	// message and conditions of o; the channel is closed once it stopped.
	TerminatePod(uid types.UID, o TerminateOptions) <-chan struct{}
}

// TerminateOptions are what TerminatePod needs (the agent's
// TerminateOptions, in this package's words to keep it free of the agent).
type TerminateOptions struct {
	GracePeriodSeconds int64
	Reason, Message    string
	Conditions         []v1.PodCondition
}

// Options are a Manager's dependencies.
type Options struct {
	Config Config
	// Connect opens the connection to logind (e.g. ConnectLogind); an
	// error turns the feature off for this run (logged once at info), as
	// the kubelet runs on when its shutdown manager cannot start.
	Connect func(ctx context.Context) (Logind, error)
	Logger  *slog.Logger
	Clock   clock.WithTicker
	// Event records a node event (type, reason, message); nil: none.
	Event func(typ, reason, msg string)
	// Changed is called when the node starts or stops shutting down (e.g.
	// to send the node status at once); nil: nothing.
	Changed func()
	// Times records a shutdown's start (end zero) as it begins, then its
	// start and end once the pods are stopped (H.21, e.g. Times.Record);
	// nil: none.
	Times func(start, end time.Time) error
}

// Manager is the node shutdown manager. Create with New, then Run.
type Manager struct {
	o            Options
	periods      []PriorityGracePeriod
	shuttingDown atomic.Bool
}

// New returns a manager for o; o.Config must be valid (Config.Validate).
func New(o Options) *Manager {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Manager{o: o, periods: o.Config.Periods()}
}

// ShuttingDown reports whether a shutdown is under way. Safe for
// concurrent use.
func (m *Manager) ShuttingDown() bool { return m.shuttingDown.Load() }

// Status is ErrShuttingDown while a shutdown is under way, else nil (the
// node's readiness).
func (m *Manager) Status() error {
	if m.ShuttingDown() {
		return ErrShuttingDown
	}
	return nil
}

// Admit refuses every pod while the node shuts down (the kubelet's
// Admit), with reason NodeShutdown. Safe for concurrent use.
func (m *Manager) Admit(*v1.Pod) (ok bool, reason, message string) {
	if m.ShuttingDown() {
		return false, NotAdmittedReason, NotAdmittedMessage
	}
	return true, "", ""
}

// Run watches logind for shutdowns and handles them, until ctx is done.
// With graceful shutdown off it returns at once; when logind cannot be
// reached it logs once and returns nil (the node runs without it). A lost
// connection is opened again after a second.
func (m *Manager) Run(ctx context.Context, pods Pods) error {
	if len(m.periods) == 0 {
		return nil
	}
	total := m.o.Config.Total()
	m.o.Logger.Info("graceful node shutdown", "gracePeriod", total, "groups", m.periods)
	first, failing := true, false
	for {
		held, err := m.watch(ctx, pods, total)
		if ctx.Err() != nil {
			return nil
		}
		if first && !held {
			m.o.Logger.Info("graceful node shutdown unavailable: pods will not be stopped before the node shuts down", "err", err)
			return nil
		}
		first = false
		if held {
			failing = false
		}
		switch {
		case err != nil && !failing:
			m.o.Logger.Warn("watching logind for shutdowns; retrying every second", "err", err)
		case err != nil:
			m.o.Logger.Debug("watching logind for shutdowns", "err", err)
		}
		failing = err != nil
		t := m.o.Clock.NewTimer(reconnectPeriod)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
		}
		m.o.Logger.Debug("watching logind for shutdowns again")
	}
}

// watch connects, makes logind wait long enough, takes the lock and
// handles PrepareForShutdown signals until the connection or ctx ends;
// held: it got as far as holding the lock and watching.
func (m *Manager) watch(ctx context.Context, pods Pods, total time.Duration) (held bool, err error) {
	l, err := m.o.Connect(ctx)
	if err != nil {
		return false, err
	}
	defer l.Close()
	if err := raiseInhibitDelay(ctx, l, total); err != nil {
		return false, err
	}
	lock, err := l.Inhibit(ctx)
	if err != nil {
		return false, err
	}
	defer func() { closeLock(lock) }()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events, err := l.PrepareForShutdown(wctx)
	if err != nil {
		return false, err
	}
	defer func() {
		cancel()
		for range events { // wait for the port's goroutine
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return true, nil
		case active, ok := <-events:
			if !ok {
				return true, errors.New("logind connection lost")
			}
			lock = m.handle(ctx, l, lock, active, pods)
		}
	}
}

// raiseInhibitDelay makes logind's InhibitDelayMaxSec at least total,
// through a drop-in, as the kubelet does; its default (5 s) would cut
// every grace period short.
func raiseInhibitDelay(ctx context.Context, l Logind, total time.Duration) error {
	cur, err := l.InhibitDelayMax(ctx)
	if err != nil {
		return err
	}
	if total <= cur {
		return nil
	}
	if err := l.OverrideInhibitDelayMax(ctx, total); err != nil {
		return fmt.Errorf("raising logind's InhibitDelayMaxSec to %v: %w", total, err)
	}
	cur, err = l.InhibitDelayMax(ctx)
	if err != nil {
		return err
	}
	if total > cur {
		return fmt.Errorf("logind's InhibitDelayMaxSec is %v after the override, less than the shutdown grace period %v", cur, total)
	}
	return nil
}

// handle acts on one PrepareForShutdown signal and returns the lock held
// afterwards (nil: released).
func (m *Manager) handle(ctx context.Context, l Logind, lock io.Closer, active bool, pods Pods) io.Closer {
	m.shuttingDown.Store(active)
	if m.o.Changed != nil {
		m.o.Changed()
	}
	if !active {
		m.o.Logger.Info("node shutdown cancelled")
		m.event("Shutdown manager detected shutdown cancellation")
		next, err := l.Inhibit(ctx)
		if err != nil {
			m.o.Logger.Warn("taking logind's inhibitor lock again", "err", err)
			return lock
		}
		closeLock(lock)
		return next
	}
	m.o.Logger.Info("node shutting down: stopping pods")
	m.event("Shutdown manager detected shutdown event")
	start := m.o.Clock.Now()
	m.times(start, time.Time{})
	m.execute(ctx, Plan(m.periods, pods.ActivePods()), pods)
	m.times(start, m.o.Clock.Now())
	m.o.Logger.Info("pods stopped for the shutdown; releasing logind's inhibitor lock")
	closeLock(lock)
	return nil
}

// execute stops the groups' pods, one group after the other: a group's
// pods all at once, then the next group once they all stopped or the
// group's budget ran out (the kubelet's killPods).
func (m *Manager) execute(ctx context.Context, groups []Group, pods Pods) {
	for _, g := range groups {
		dones := make([]<-chan struct{}, 0, len(g.Kills))
		for _, k := range g.Kills {
			m.o.Logger.Info("stopping pod for the shutdown", "pod", k.Pod.Namespace+"/"+k.Pod.Name, "gracePeriod", k.GracePeriodSeconds, "priority", g.Priority)
			dones = append(dones, pods.TerminatePod(k.Pod.UID, terminateOptions(k)))
		}
		if !m.waitAll(ctx, dones, g.Budget) {
			m.o.Logger.Info("shutdown grace period of a pod group ran out", "priority", g.Priority, "gracePeriod", g.Budget)
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// waitAll waits until every channel of dones is closed (true), budget
// ran out or ctx is done (false).
func (m *Manager) waitAll(ctx context.Context, dones []<-chan struct{}, budget time.Duration) bool {
	t := m.o.Clock.NewTimer(budget)
	defer t.Stop()
	for _, done := range dones {
		select {
		case <-done:
		case <-t.C():
			return false
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// terminateOptions are the kubelet's status for a pod stopped by a
// shutdown: reason Terminated, its message, and DisruptionTarget
// (TerminationByKubelet).
func terminateOptions(k Kill) TerminateOptions {
	return TerminateOptions{
		GracePeriodSeconds: k.GracePeriodSeconds,
		Reason:             Reason,
		Message:            Message,
		Conditions: []v1.PodCondition{{
			Type: v1.DisruptionTarget, Status: v1.ConditionTrue,
			Reason: v1.PodReasonTerminationByKubelet, Message: Message,
		}},
	}
}

func (m *Manager) times(start, end time.Time) {
	if m.o.Times == nil {
		return
	}
	if err := m.o.Times(start, end); err != nil {
		m.o.Logger.Warn("recording the shutdown's times", "err", err)
	}
}

func (m *Manager) event(msg string) {
	if m.o.Event != nil {
		m.o.Event(v1.EventTypeNormal, EventNodeShutdown, msg)
	}
}

func closeLock(lock io.Closer) {
	if lock != nil {
		_ = lock.Close()
	}
}
